"""What every peer of the side-by-side benchmark shares: the sizes of a run,
the operations and their raw PostgreSQL limits, the per-peer database, timing
and the storage measurement."""

from __future__ import annotations

import itertools
import os
import re
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg
from psycopg import sql

import txnq.database.connections
from bench.transactions import Deadline, concurrently

PAYLOAD_BYTES = 100
BATCH = 1000  # messages per commit for every batched operation
CTP_BATCH = 500  # messages per consume-transform-produce transaction
DATABASE_PREFIX = "txnq_peer_"


@dataclass(frozen=True)
class Config:
    """The sizes of one run; every loop is bounded by a count and by ``seconds``."""

    messages: int = 200_000  # batched send, consume, storage
    single: int = 2_000  # single sends, per client
    ctp_messages: int = 50_000  # transactional produce and consume-transform-produce
    seconds: float = 15.0  # time bound of each phase
    clients: int = 4  # the multi-client single send, and the commit latencies
    commits: int = 300  # commit latencies: commits per client


@dataclass(frozen=True)
class Operation:
    key: str
    title: str
    limit: str  # the key of the raw measurement it is compared with
    # For single sends: the key of the raw figure each peer measures in its own
    # database interleaved with its sends (see paired()); it replaces `limit`
    # in that peer's ratio.
    paired: str | None = None


# The operations compared across peers, each with the raw PostgreSQL figure of
# the same run that bounds it.
OPERATIONS = (
    Operation(
        "send_single", "single send, 1 client, one commit per message", "single_1", "ref_single_1"
    ),
    Operation(
        "send_single_4",
        "single send, 4 clients, one commit per message",
        "single_4",
        "ref_single_4",
    ),
    Operation("send_batch", f"batched send, {BATCH} messages per commit", "insert_1000"),
    Operation(
        "consume_ack",
        f"consume + ack, batches of up to {BATCH} (one reader / exclusive; "
        "PgQ: what arrived between two ticks)",
        "read_ack",
    ),
    Operation(
        "consume_ack_1000",
        f"consume + ack, batches of at most {BATCH} for every peer "
        f"(PgQ ticked every {BATCH} events; txnq's batch_receive({BATCH}) as above)",
        "read_ack",
    ),
    Operation(
        "consume_ack_shared",
        f"consume + ack, batches of up to {BATCH} (competing consumers / shared)",
        "read_ack",
    ),
    Operation(
        "txn_produce", f"transactional produce, {BATCH} messages per transaction", "insert_1000"
    ),
    Operation(
        "txn_produce_in_flight",
        f"transactional produce, {BATCH} messages per transaction, the next one queued while "
        "the commit before runs (commit_async)",
        "insert_1000",
    ),
    Operation("ctp", f"consume-transform-produce, {CTP_BATCH} messages per transaction", "ctp"),
)

RAW_LABELS = {
    "copy": f"COPY (binary), {BATCH} rows per commit",
    "insert_100": "INSERT … SELECT unnest(), 100 rows per commit",
    "insert_1000": f"INSERT … SELECT unnest(), {BATCH} rows per commit",
    "single_1": "single-row INSERT commits, 1 client",
    "single_4": "single-row INSERT commits, 4 clients",
    "read_ack": f"keyset SELECT of {BATCH} rows + offset UPDATE per commit",
    "delete_queue": f"DELETE … SKIP LOCKED … RETURNING, {BATCH} rows per commit",
    "ctp": f"read {CTP_BATCH} + INSERT {CTP_BATCH} + offset UPDATE per commit",
}


class Skipped(Exception):
    """A peer or an operation that cannot run here; the message says why."""


@dataclass
class Storage:
    """What a peer's tables hold after the consume phase."""

    consumed: int
    table_bytes: int
    index_bytes: int
    dead_tuples: int
    live_tuples: int
    bytes_after_vacuum: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


@dataclass
class PeerRun:
    """One peer's results in one run: msgs/s per operation, or why not."""

    rates: dict[str, float] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    storage: Storage | None = None
    notes: list[str] = field(default_factory=list)
    # Commit latencies in ms: {"p50": ..., "p99": ..., "count": ...} per measurement.
    latencies: dict[str, dict[str, float]] = field(default_factory=dict)


def latency_summary(seconds: list[float]) -> dict[str, float]:
    """p50 and p99 (ms) and the count of a list of latencies in seconds."""
    if not seconds:
        return {"p50": float("nan"), "p99": float("nan"), "count": 0}
    ordered = sorted(seconds)

    def at(q: float) -> float:
        return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]

    return {"p50": at(0.50), "p99": at(0.99), "count": len(ordered)}


def text_payloads(n: int) -> list[str]:
    """Distinct 100-character payloads, for peers that store text or JSON."""
    return [os.urandom(PAYLOAD_BYTES // 2).hex() for _ in range(min(n, 4096))]


def module_missing(module: str) -> str | None:
    """Why a peer that is a Python package cannot run, or None."""
    try:
        __import__(module)
    except ImportError:
        return f"{module} is not installed: pip install '.[bench]'"
    return None


def bounded(n: int, seconds: float, step: Callable[[int], int]) -> tuple[int, float]:
    """Call ``step(done)`` (which returns how many messages it handled, 0 when
    there is nothing left) until ``n`` are done or ``seconds`` passed; the count
    and msgs/s."""
    deadline = Deadline(seconds)
    done = 0
    start = time.perf_counter()
    while done < n and not deadline.expired():
        handled = step(done)
        if handled == 0:
            break
        done += handled
    elapsed = time.perf_counter() - start
    return done, (done / elapsed if elapsed > 0 else 0.0)


async def abounded(
    n: int, seconds: float, step: Callable[[int], Awaitable[int]]
) -> tuple[int, float]:
    """:func:`bounded` for a coroutine ``step``."""
    deadline = Deadline(seconds)
    done = 0
    start = time.perf_counter()
    while done < n and not deadline.expired():
        handled = await step(done)
        if handled == 0:
            break
        done += handled
    elapsed = time.perf_counter() - start
    return done, (done / elapsed if elapsed > 0 else 0.0)


def sql_batches(
    conn: psycopg.Connection[Any], cfg: Config, query: str, data: Sequence[Any]
) -> tuple[int, float]:
    """``query`` in autocommit with one array parameter of BATCH payloads per
    call, until ``cfg.messages`` are sent; the count and msgs/s."""

    def step(done: int) -> int:
        rows = [data[i % len(data)] for i in range(done, min(done + BATCH, cfg.messages))]
        conn.execute(query, (rows,))
        return len(rows)

    return bounded(cfg.messages, cfg.seconds, step)


def sql_single_commits(
    dsn: str, cfg: Config, clients: int, query: str, params: Callable[[int, int], Sequence[Any]]
) -> tuple[int, float]:
    """``query`` in autocommit, one message per commit, from ``clients``
    connections at once (``params(client, seq)`` gives its parameters, ``seq``
    unique over the clients); the count and msgs/s overall."""
    counter = itertools.count()

    def work(index: int, ready: threading.Barrier) -> list[float]:
        with psycopg.connect(dsn, autocommit=True) as conn:
            ready.wait()

            def one(_: int) -> int:
                conn.execute(query, params(index, next(counter)))
                return 1

            return timed(*bounded(cfg.single, cfg.seconds, one))

    return overall(concurrently(clients, work))


def timed(done: int, rate: float) -> list[float]:
    """A client's count and the seconds it sent for (after connecting), as
    :func:`bench.transactions.concurrently` collects them."""
    return [float(done), done / rate if rate else 0.0]


def overall(collected: list[float]) -> tuple[int, float]:
    """Total count and msgs/s over the longest client's sending time: the
    clients start together at the barrier, so setup is not timed."""
    sent = int(sum(collected[0::2]))
    span = max(collected[1::2], default=0.0)
    return sent, sent / span if span else 0.0


REF_TABLE = """
CREATE TABLE IF NOT EXISTS txnq_bench_ref (
    client  integer NOT NULL,
    seq     bigint NOT NULL,
    payload bytea NOT NULL,
    PRIMARY KEY (client, seq)
)
"""
REF_INSERT = "INSERT INTO txnq_bench_ref (client, seq, payload) VALUES (%s, %s, %b)"
SLICES = 3


def paired(
    dsn: str,
    cfg: Config,
    clients: int,
    send: Callable[[Config], tuple[int, float]],
) -> tuple[int, float, float]:
    """Single-commit rates swing with the disk's flush latency, which other
    work on the machine changes from one second to the next. So a peer's
    single sends (``send(cfg)`` → count, msgs/s) run in SLICES slices, each
    right after a slice of raw single-row INSERT commits from as many clients
    in the peer's own database; the peer's count, its msgs/s and the raw
    msgs/s over all slices. The raw table is dropped afterwards."""
    part = replace(cfg, single=max(1, cfg.single // SLICES), seconds=cfg.seconds / SLICES)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(REF_TABLE)
    payload = os.urandom(PAYLOAD_BYTES)
    sent = raw_sent = 0
    seconds = raw_seconds = 0.0
    for _ in range(SLICES):
        count, rate = sql_single_commits(
            dsn, part, clients, REF_INSERT, lambda index, seq: (index, seq, payload)
        )
        raw_sent += count
        raw_seconds += count / rate if rate else 0.0
        count, rate = send(part)
        sent += count
        seconds += count / rate if rate else 0.0
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("TRUNCATE txnq_bench_ref")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE txnq_bench_ref")
    return (
        sent,
        sent / seconds if seconds else 0.0,
        raw_sent / raw_seconds if raw_seconds else 0.0,
    )


def single_phases(
    result: PeerRun,
    dsn: str,
    cfg: Config,
    send: Callable[[Config, int], tuple[int, float]],
    progress: Callable[[str], None],
    what: str,
) -> int:
    """The two single-send operations (1 and ``cfg.clients`` clients), each
    :func:`paired` with raw commits; ``send(cfg, clients)`` → count, msgs/s.
    Records the rates and the paired raw rates; returns the messages sent."""
    total = 0
    for key, ref, clients in (
        ("send_single", "ref_single_1", 1),
        ("send_single_4", "ref_single_4", cfg.clients),
    ):
        progress(f"{what}, {clients} client(s), interleaved with raw commits")
        sent, result.rates[key], result.rates[ref] = paired(
            dsn, cfg, clients, lambda part, k=clients: send(part, k)
        )
        total += sent
    return total


# -- databases -----------------------------------------------------------------


def database_dsn(server_dsn: str, database: str) -> str:
    """``server_dsn`` (URL or key=value) as a ``postgresql://`` URL for ``database``."""
    url = txnq.database.connections.sqlalchemy_url(server_dsn)
    return url.set(drivername="postgresql", database=database).render_as_string(False)


@contextmanager
def fresh_database(server_dsn: str, name: str, prefix: str = DATABASE_PREFIX) -> Iterator[str]:
    """Create ``txnq_peer_<name>`` (dropping a leftover of an earlier run),
    yield its DSN and drop it afterwards. No other database is touched."""
    if not re.fullmatch(r"[a-z][a-z0-9_]{0,30}", name):
        raise ValueError(f"bad peer name {name!r}")
    database = prefix + name
    ident = sql.Identifier(database)
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE template0").format(ident))
    try:
        yield database_dsn(server_dsn, database)
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(ident))


def analyze(dsn: str) -> None:
    """``ANALYZE`` the peer's database before its consume phase, untimed and
    the same for every peer: with autovacuum off nothing else would give the
    planner statistics for the freshly filled tables, and autovacuum's
    auto-analyze would have run on any server that has it on."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("ANALYZE")


def check_prefix(prefix: str) -> str | None:
    """Why ``prefix`` cannot name the runner's databases, or None: it must
    start with txnq_peer_ so the runner can only ever drop its own."""
    if not re.fullmatch(r"txnq_peer_[a-z0-9_]{0,20}", prefix):
        return f"the database prefix must match txnq_peer_[a-z0-9_]*, not {prefix!r}"
    return None


@contextmanager
def exclusive_run(server_dsn: str, prefix: str) -> Iterator[None]:
    """Hold a session advisory lock named after ``prefix`` for the whole run:
    a second runner with the same prefix would drop this one's databases."""
    conn = psycopg.connect(server_dsn, autocommit=True)
    try:
        row = conn.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (prefix,)).fetchone()
        if not (row and row[0]):
            raise RuntimeError(
                f"another python -m bench.peers is running with databases {prefix}*; "
                "wait for it, or give this one another --database-prefix"
            )
        yield
    finally:
        conn.close()


STORAGE_QUERY = r"""
SELECT coalesce(sum(pg_table_size(c.oid)), 0)::bigint,
       coalesce(sum(pg_indexes_size(c.oid)), 0)::bigint,
       coalesce(sum(s.n_dead_tup), 0)::bigint,
       coalesce(sum(s.n_live_tup), 0)::bigint
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
 WHERE c.relkind IN ('r', 'p', 'm')
   AND n.nspname NOT IN ('pg_catalog', 'information_schema')
   AND n.nspname NOT LIKE 'pg\_toast%%'
"""


def measure_storage(dsn: str, consumed: int) -> Storage:
    """Table and index bytes and dead tuples of every table of the peer's
    database (each peer has its own database), then the bytes and live rows
    after a plain ``VACUUM`` of the database (run the same way for every peer;
    autovacuum may be off on the server)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        # Other backends report their statistics when they exit or after a
        # second; the peers' connections are closed by now.
        time.sleep(1.1)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(STORAGE_QUERY).fetchone()
        assert row is not None
        storage = Storage(consumed, int(row[0]), int(row[1]), int(row[2]), 0)
        conn.execute("VACUUM")
        # VACUUM counts the live rows exactly (the statistics' running count
        # is an estimate); its visibility and free-space maps count as bytes.
        time.sleep(0.6)
        conn.execute("SELECT pg_stat_clear_snapshot()")
        after = conn.execute(STORAGE_QUERY).fetchone()
        assert after is not None
        storage.bytes_after_vacuum = int(after[0]) + int(after[1])
        storage.live_tuples = int(after[3])
    return storage


def server_facts(dsn: str) -> dict[str, Any]:
    names = (
        "server_version",
        "server_version_num",
        "shared_buffers",
        "synchronous_commit",
        "fsync",
        "wal_level",
        "max_wal_size",
        "autovacuum",
        "work_mem",
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        facts = {}
        for name in names:
            row = conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone()
            facts[name] = row[0] if row else None
    return facts
