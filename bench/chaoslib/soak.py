"""The accelerated soak: days of a queue's life compressed into minutes.

Small rollovers, retention, TTL, transaction timeouts and history retention;
producers that come and go under new names, transactions that commit, abort
and time out, consumers of an exclusive and a shared subscription that come
and go, a slow subscription that lags a fixed time behind, a TTL topic
nobody reads, and a snapshot held for a while in the middle third. The
scheduler's jobs run in a thread at compressed intervals, a coordinator
worker finishes the timed-out transactions.

Every ``sample_seconds`` it records the size (heap, indexes, TOAST) and row
count of every txnq table (the entry logs summed as ``entries``) and the
number of entry-log partitions. At the end each table must plateau: its
largest value over the last third of the run within noise of its largest
over the middle third (the held snapshot falls in the middle third, so what
it bloated must have come back down), and so must the entry-log count.
"""

from __future__ import annotations

import random
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

import txnq
from txnq import errors, lifecycle
from txnq.database.migrate import upgrade
from txnq.settings import load_settings

from .cluster import child_env, worker

MAIN, TTL_TOPIC = "soak-main", "soak-ttl"

#: The server settings of a soak: everything that turns over, in seconds.
SERVER_SETTINGS: dict[str, Any] = {
    "ledger_max_entries": 200,
    "ledger_min_rollover_seconds": 0,
    "ledger_max_rollover_seconds": 4,
    "entry_log_max_bytes": 256 * 1024,
    "entry_log_max_age_seconds": 6,
    "txn_max_timeout": 30,
    "txn_default_timeout": 10,
}

#: Every txnq table with its size and rows; the entry logs count as one.
#: How long a sample waits for a table's lock before it gives way (above).
SAMPLE_LOCK_TIMEOUT = "1s"
TABLE_SIZES = """
SELECT c.relname AS relation,
       CASE WHEN c.relkind = 'p'
            THEN (SELECT coalesce(sum(pg_total_relation_size(t.relid)), 0)
                    FROM pg_partition_tree(c.oid) t)
            ELSE coalesce(pg_total_relation_size(c.oid), 0) END AS bytes
  FROM pg_class c
 WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind IN ('r', 'p')
   AND NOT c.relispartition AND c.relname <> 'alembic_version'
   -- a compaction's target before its swap attaches it (counted with entries then)
   AND c.relname !~ '^entries_[0-9]+$'
 ORDER BY c.relname
"""
ENTRY_LOGS = "SELECT count(*) FROM pg_inherits WHERE inhparent = 'txnq.entries'::regclass"

#: Growth over the last third allowed beyond the middle third's peak: a share,
#: plus a floor for small tables (a page or two, a few rows in flight).
NOISE_SHARE = 0.25
NOISE_BYTES = 256 * 1024
NOISE_ROWS = 500
NOISE_ENTRY_LOGS = 2


@dataclass
class SoakConfig:
    dsn: str
    seconds: float = 180.0
    sample_seconds: float = 5.0
    rate: float = 300.0  # messages per second offered by the producers
    hold_seconds: float | None = None  # default: a sixth of the run
    slow_lag_seconds: float = 12.0
    seed: int = 7


@dataclass
class Sample:
    at: float
    bytes: dict[str, int]
    rows: dict[str, int]
    entry_logs: int


@dataclass
class Verdict:
    relation: str
    what: str  # bytes, rows, entry logs
    first: int
    middle_peak: int
    last_peak: int
    allowed: int

    @property
    def plateaued(self) -> bool:
        return self.last_peak <= self.allowed


@dataclass
class SoakResult:
    seconds: float
    samples: list[Sample]
    verdicts: list[Verdict]
    sent: int
    transactions: dict[str, int]
    errors: list[str] = field(default_factory=list)

    @property
    def growing(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.plateaued]


def _sample(conn: psycopg.Connection[Any], started: float) -> Sample:
    sizes = {str(r[0]): int(r[1]) for r in conn.execute(TABLE_SIZES).fetchall()}
    rows: dict[str, int] = {}
    for name in sizes:
        try:
            row = conn.execute(f'SELECT count(*) FROM txnq."{name}"').fetchone()  # catalog names
        except psycopg.errors.UndefinedTable:
            continue  # dropped since it was listed
        rows[name] = int(row[0]) if row else 0
    logs = conn.execute(ENTRY_LOGS).fetchone()
    return Sample(time.monotonic() - started, sizes, rows, int(logs[0]) if logs else 0)


def _sample_giving_way(conn: psycopg.Connection[Any], started: float) -> Sample | None:
    """A sample, or None when the lifecycle's work got in its way: sizing a
    table takes its AccessShareLock, one table after another in one
    statement, so it can deadlock with a retention or compaction job taking
    AccessExclusiveLocks in another order (seen once in CI, the sample the
    victim). The sampler yields: it waits at most SAMPLE_LOCK_TIMEOUT for a
    lock and tries again at the next sampling time, so the job goes on."""
    try:
        conn.execute(f"SET lock_timeout = '{SAMPLE_LOCK_TIMEOUT}'")
        return _sample(conn, started)
    except (psycopg.errors.DeadlockDetected, psycopg.errors.LockNotAvailable):
        return None


def _verdicts(samples: list[Sample], seconds: float) -> list[Verdict]:
    middle = [s for s in samples if seconds / 3 <= s.at < 2 * seconds / 3]
    last = [s for s in samples if s.at >= 2 * seconds / 3]
    if not middle or not last:
        return []
    verdicts = []
    for name in samples[-1].bytes:
        for what, get, floor in (
            ("bytes", lambda s, n=name: s.bytes.get(n, 0), NOISE_BYTES),
            ("rows", lambda s, n=name: s.rows.get(n, 0), NOISE_ROWS),
        ):
            peak = max(get(s) for s in middle)
            verdicts.append(
                Verdict(
                    name,
                    what,
                    get(samples[0]),
                    peak,
                    max(get(s) for s in last),
                    int(peak * (1 + NOISE_SHARE)) + floor,
                )
            )
    peak = max(s.entry_logs for s in middle)
    verdicts.append(
        Verdict(
            "entries",
            "entry logs",
            samples[0].entry_logs,
            peak,
            max(s.entry_logs for s in last),
            peak + NOISE_ENTRY_LOGS,
        )
    )
    return verdicts


class _Run:
    """The soak's threads, sharing a stop event, a deadline and an error list."""

    def __init__(self, config: SoakConfig) -> None:
        self.config = config
        self.stop = threading.Event()
        self.errors: list[str] = []
        self.sent = 0
        self.outcomes = {"committed": 0, "aborted": 0, "abandoned": 0}
        self.lock = threading.Lock()
        self.random = random.Random(config.seed)

    def guarded(self, name: str, body: Any) -> threading.Thread:
        def run() -> None:
            try:
                body()
            except Exception as exc:  # reported in the result; the test fails on it
                with self.lock:
                    self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
                self.stop.set()

        return threading.Thread(target=run, name=f"soak-{name}", daemon=True)

    # -- the workload ----------------------------------------------------------

    def producers(self, client: txnq.Client) -> None:
        """A new producer (a new random name) every second, sending at the rate."""
        per_producer = max(1, int(self.config.rate * 0.8))
        while not self.stop.is_set():
            started = time.monotonic()
            with client.producer(MAIN) as producer, client.producer(TTL_TOPIC) as ttl:
                for i in range(per_producer):
                    producer.send_async(b"v%d" % i, key=f"k{i % 50}")
                    if i % 10 == 0:
                        ttl.send_async(b"t%d" % i)
                producer.flush()
                ttl.flush()
            with self.lock:
                self.sent += per_producer
            self.stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))

    def transactions(self, client: txnq.Client) -> None:
        """Small transactions: most commit, some abort, some are left to time out."""
        producer = client.producer(MAIN)
        try:
            while not self.stop.is_set():
                txn = client.new_transaction(timeout="2s")
                for i in range(10):
                    producer.send(b"x%d" % i, txn=txn)
                draw = self.random.random()
                if draw < 0.7:
                    txn.commit()
                    outcome = "committed"
                elif draw < 0.9:
                    txn.abort()
                    outcome = "aborted"
                else:
                    outcome = "abandoned"  # the scheduler aborts it at its timeout
                with self.lock:
                    self.outcomes[outcome] += 1
                self.stop.wait(0.2)
        finally:
            producer.close()

    def exclusive_consumers(self, client: txnq.Client) -> None:
        """A consumer that reads for a few seconds, acknowledges and leaves."""
        while not self.stop.is_set():
            with client.subscribe(
                MAIN, "fast", initial_position="earliest", consumer_name=uuid.uuid4().hex[:12]
            ) as consumer:
                until = time.monotonic() + 3
                while time.monotonic() < until and not self.stop.is_set():
                    messages = consumer.batch_receive(500, timeout="200ms")
                    last: dict[int, txnq.Message] = {}
                    for message in messages:
                        last[message.partition] = message
                    for message in last.values():
                        consumer.acknowledge_cumulative(message)

    def shared_consumers(self, client: txnq.Client) -> None:
        """Shared-subscription consumers coming and going, acknowledging each message."""
        while not self.stop.is_set():
            with client.subscribe(
                MAIN,
                "shared",
                "shared",
                initial_position="earliest",
                ack_timeout="5s",
                receiver_queue_size=200,
            ) as consumer:
                until = time.monotonic() + 2
                while time.monotonic() < until and not self.stop.is_set():
                    for message in consumer.batch_receive(200, timeout="200ms"):
                        consumer.acknowledge(message)

    def slow_consumer(self, client: txnq.Client) -> None:
        """Acknowledges only what is older than the lag: a subscription that
        keeps up on average but holds the last ``slow_lag_seconds`` back."""
        lag = self.config.slow_lag_seconds
        with client.subscribe(MAIN, "slow", initial_position="earliest") as consumer:
            held: dict[int, list[txnq.Message]] = {}
            while not self.stop.is_set():
                for message in consumer.batch_receive(500, timeout="500ms"):
                    held.setdefault(message.partition, []).append(message)
                cutoff = time.time() - lag
                for partition, messages in held.items():
                    old = [m for m in messages if m.publish_time.timestamp() < cutoff]
                    if old:
                        consumer.acknowledge_cumulative(old[-1])
                        held[partition] = messages[len(old) :]

    def lifecycle_jobs(self, client: txnq.Client) -> None:
        """The scheduler's jobs, every second (major GC every tenth run)."""
        tick = 0
        while not self.stop.is_set():
            client.query("abort_timed_out", {"max_count": 1000})
            client.query("roll_entry_log", {"force": False})
            lifecycle.expire_ttl(client)
            lifecycle.apply_retention(client)
            try:
                lifecycle.collect_entry_logs(
                    client, grace_seconds=2, compaction="major" if tick % 10 == 9 else "minor"
                )
            except errors.GcBusyError:
                pass
            lifecycle.vacuum_hot_tables(client, min_dead=200)
            lifecycle.shrink_hot_tables(client)
            lifecycle.purge_history(
                client, finished_txn_seconds=10, history_seconds=10, producer_seconds=10
            )
            tick += 1
            self.stop.wait(1.0)


def soak(config: SoakConfig, progress: Any = None) -> SoakResult:
    """Run the soak on ``config.dsn`` (a database of its own: it creates two
    topics and changes the server settings); ``progress(done, total)`` is
    called after each sample."""
    upgrade(config.dsn, settings=load_settings(**SERVER_SETTINGS))
    client = txnq.Client(config.dsn, consumer_lease_seconds=2.0, txn_log_partition_seconds=5.0)
    run = _Run(config)
    log_dir = Path(tempfile.mkdtemp(prefix="txnq-soak-"))
    coordinator = worker(
        "soak-coordinator", "coordinator", config.dsn, child_env(config.dsn), log_dir
    )
    samples: list[Sample] = []
    hold = config.hold_seconds if config.hold_seconds is not None else config.seconds / 6
    try:
        client.admin.create_topic(MAIN, partitions=4)
        client.admin.create_topic(TTL_TOPIC, partitions=1, ttl="5s")
        client.subscribe(TTL_TOPIC, "nobody").close()  # a backlog only TTL clears
        coordinator.start()
        threads = [
            run.guarded("producers", lambda: run.producers(client)),
            run.guarded("transactions", lambda: run.transactions(client)),
            run.guarded("exclusive", lambda: run.exclusive_consumers(client)),
            run.guarded("shared", lambda: run.shared_consumers(client)),
            run.guarded("slow", lambda: run.slow_consumer(client)),
            run.guarded("lifecycle", lambda: run.lifecycle_jobs(client)),
        ]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        holder: psycopg.Connection[Any] | None = None
        hold_from = config.seconds * 0.4
        with psycopg.connect(config.dsn, autocommit=True) as stats:
            while not run.stop.is_set():
                now = time.monotonic() - started
                if now >= config.seconds:
                    break
                if holder is None and hold_from <= now < hold_from + hold:
                    holder = psycopg.connect(config.dsn)
                    holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
                    holder.execute("SELECT count(*) FROM txnq.topics").fetchone()
                elif holder is not None and now >= hold_from + hold:
                    holder.rollback()
                    holder.close()
                    holder = None
                sample = _sample_giving_way(stats, started)
                if sample is not None:
                    samples.append(sample)
                if progress is not None:
                    progress(min(now, config.seconds), config.seconds)
                coordinator.check()
                run.stop.wait(config.sample_seconds)
            if holder is not None:
                holder.close()
        run.stop.set()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        run.stop.set()
        coordinator.stop()
        client.close()
    return SoakResult(
        seconds=config.seconds,
        samples=samples,
        verdicts=_verdicts(samples, config.seconds),
        sent=run.sent,
        transactions=dict(run.outcomes),
        errors=run.errors,
    )
