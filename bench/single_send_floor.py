"""How fast could a single send be with txnq's storage model? txnq's
``append_v6`` against the least any append of that model must do, PgQ's
``insert_event`` and a raw single-row INSERT, each one commit per message.

    python -m bench.single_send_floor --dsn DSN [--clients 1,4] [--rounds 3]
        [--seconds 3] [--json]

Issue 23 item 2 asks a single send at least as fast as PgQ's with one
client. A txnq append keeps gapless, ordered offsets (the partition's head
row, locked and updated), idempotence (the producer's sequence row) and the
entry; PgQ writes one row with a sequence value. The floor here is a
PL/pgSQL function doing exactly txnq's three writes and nothing else -- no
argument check, no read of the topic, settings, grants, quota or waiters,
the entry log id passed in -- so no version of ``append_v6`` can be faster
than it. If the floor is behind PgQ, the target cannot be met by trimming
checks; only a different storage model (one row per single send) would.

So the same run also measures the floors of other models that keep gapless
offsets and idempotence (see ``MODEL_FUNCTIONS``): the same three writes as
one prepared statement (no PL/pgSQL at all); two writes, the head row and
the entry, with the producer's last sequence read back from the entries
(as Kafka rebuilds producer state from its log); and one write, the entry
alone, a partition's appends serialised on an advisory lock and the next
offset read from the entries. Those last two write into a copy of the
entries table with the index they would need.

DSN names a scratch database migrated to head (``txnq migrate``). The
benchmark creates a topic ``single-floor-<pid>-<clients>`` with one
partition per client, a schema ``txnq_floor`` holding the floor functions,
the entries copies and the raw table (dropped at the end), and, where the
pgq extension is available, a PgQ queue (dropped at the end). Each round
runs the operations in turn (the order rotating), each for ``--seconds``
with ``--clients`` processes, every process on its own partition with its
own producer: calls per second over all clients, and server time per call
from pg_stat_user_functions (``track_functions`` is turned on for the
database). Synchronous commit, as ``producer.send()`` runs. Medians over the
rounds.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
from typing import Any

import psycopg

from bench import floor_runs

SCHEMA = "txnq_floor"
QUEUE = "txnq_single_floor"

#: txnq's three writes of a single send and nothing else (see the module doc).
FLOOR_FUNCTION = f"""
CREATE FUNCTION {SCHEMA}.append_three_writes(
    p_topic_id integer, p_partition integer, p_producer_id bigint, p_first_sequence bigint,
    p_entry_log_id integer, p_payloads bytea[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_head txnq.partitions%ROWTYPE;
BEGIN
    UPDATE txnq.partitions h
       SET next_offset = h.next_offset + 1, max_read_offset = h.next_offset,
           last_publish_time = greatest(clock_timestamp(), h.last_publish_time)
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition
    RETURNING h.* INTO v_head;
    UPDATE txnq.producer_sequences s SET last_sequence = p_first_sequence
     WHERE s.topic_id = p_topic_id AND s.partition = p_partition AND s.producer_id = p_producer_id;
    INSERT INTO txnq.entries (topic_id, partition, entry_offset, entry_log_id, ledger_id,
                              publish_time, producer_id, first_sequence, message_count,
                              payload_bytes, payloads)
    VALUES (p_topic_id, p_partition, v_head.next_offset - 1, p_entry_log_id, v_head.ledger_id,
            v_head.last_publish_time, p_producer_id, p_first_sequence, 1,
            octet_length(p_payloads[1]), p_payloads);
    RETURN v_head.next_offset - 1;
END;
$$
"""


def _model_function(name: str, table: str, declare: str, locate: str, offset: str) -> str:
    """A model's append: ``locate`` finds the next offset (into ``v_next``),
    then the producer's last sequence is read back from ``table`` (a
    duplicate returns -1) and the entry written at ``offset``."""
    return f"""
CREATE FUNCTION {SCHEMA}.{name}(
    p_topic_id integer, p_partition integer, p_producer_id bigint, p_first_sequence bigint,
    p_entry_log_id integer, p_payloads bytea[]) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    {declare}
    v_next bigint;
    v_last bigint;
BEGIN
    {locate}
    SELECT e.first_sequence + e.message_count - 1 INTO v_last FROM {SCHEMA}.{table} e
     WHERE e.topic_id = p_topic_id AND e.partition = p_partition
       AND e.producer_id = p_producer_id
     ORDER BY e.topic_id DESC, e.partition DESC, e.producer_id DESC, e.first_sequence DESC
     LIMIT 1;
    IF v_last >= p_first_sequence THEN
        RETURN -1;
    END IF;
    INSERT INTO {SCHEMA}.{table} (topic_id, partition, entry_offset, entry_log_id, ledger_id,
                              publish_time, producer_id, first_sequence, message_count,
                              payload_bytes, payloads)
    VALUES (p_topic_id, p_partition, {offset}, p_entry_log_id, 0, clock_timestamp(),
            p_producer_id, p_first_sequence, 1, octet_length(p_payloads[1]), p_payloads);
    RETURN {offset};
END;
$$
"""


#: Two other models' floors, measured against the three writes above (issue
#: 23 item 2: which storage model could meet PgQ at all). Both read the
#: producer's last sequence from the entries themselves, as Kafka rebuilds
#: its producer state from the log, through an index on (partition,
#: producer, sequence) that txnq's entries do not have; each runs on its own
#: copy of the entries table (``entries_two``, ``entries_copy``, with that
#: index) so append_v6 is not slowed by it. "two writes" keeps the head row
#: (the offset and the consumers' read bound); "one write" serialises a
#: partition's appends on a transaction-scoped advisory lock (no WAL) and
#: reads the next offset from the entries' primary key, so a send writes
#: only its entry. The copies get statistics before each turn (``_analyze``).
MODEL_FUNCTIONS = (
    _model_function(
        "append_two_writes",
        "entries_two",
        "v_head txnq.partitions%ROWTYPE;",
        """UPDATE txnq.partitions h
       SET next_offset = h.next_offset + 1, max_read_offset = h.next_offset,
           last_publish_time = greatest(clock_timestamp(), h.last_publish_time)
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition
    RETURNING h.* INTO v_head;
    v_next := v_head.next_offset - 1;""",
        "v_next",
    ),
    _model_function(
        "append_one_write",
        "entries_copy",
        "",
        f"""PERFORM pg_advisory_xact_lock(p_topic_id, p_partition);
    SELECT e.entry_offset + e.message_count INTO v_next FROM {SCHEMA}.entries_copy e
     WHERE e.topic_id = p_topic_id AND e.partition = p_partition
     ORDER BY e.topic_id DESC, e.partition DESC, e.entry_offset DESC LIMIT 1;""",
        "coalesce(v_next, 0)",
    ),
)

#: Each operation: its prepared statement, and the function whose server
#: time is reported (schema, name).
OPERATIONS: dict[str, tuple[str, tuple[str, str] | None]] = {
    "txnq append_v6": (
        "SELECT entry_offset FROM txnq.append_v6($1::integer, $2::integer, $3::bigint, "
        "$4::integer, $5::bigint, $6::bytea[]) WHERE $7::integer IS NOT NULL",
        ("txnq", "append_v6"),
    ),
    "floor: the three writes only": (
        f"SELECT {SCHEMA}.append_three_writes($1::integer, $2::integer, $3::bigint, $5::bigint, "
        "$7::integer, $6::bytea[]) WHERE $4::integer IS NOT NULL",
        (SCHEMA, "append_three_writes"),
    ),
    "floor: three writes, no PL/pgSQL": (
        "WITH h AS (UPDATE txnq.partitions h SET next_offset = h.next_offset + 1, "
        "max_read_offset = h.next_offset, "
        "last_publish_time = greatest(clock_timestamp(), h.last_publish_time) "
        "WHERE h.topic_id = $1::integer AND h.partition = $2::integer "
        "RETURNING h.next_offset - 1 AS entry_offset, h.ledger_id, h.last_publish_time), "
        "s AS (UPDATE txnq.producer_sequences s SET last_sequence = $5::bigint "
        "WHERE s.topic_id = $1::integer AND s.partition = $2::integer "
        "AND s.producer_id = $3::bigint RETURNING 1) "
        "INSERT INTO txnq.entries (topic_id, partition, entry_offset, entry_log_id, ledger_id, "
        "publish_time, producer_id, first_sequence, message_count, payload_bytes, payloads) "
        "SELECT $1::integer, $2::integer, h.entry_offset, $7::integer, h.ledger_id, "
        "h.last_publish_time, $3::bigint, $5::bigint, 1, octet_length(($6::bytea[])[1]), "
        "$6::bytea[] FROM h, s WHERE $4::integer IS NOT NULL RETURNING entry_offset",
        None,
    ),
    "floor: two writes, dedup from entries": (
        f"SELECT {SCHEMA}.append_two_writes($1::integer, $2::integer, $3::bigint, $5::bigint, "
        "$7::integer, $6::bytea[]) WHERE $4::integer IS NOT NULL",
        (SCHEMA, "append_two_writes"),
    ),
    "floor: one write, advisory lock": (
        f"SELECT {SCHEMA}.append_one_write($1::integer, $2::integer, $3::bigint, $5::bigint, "
        "$7::integer, $6::bytea[]) WHERE $4::integer IS NOT NULL",
        (SCHEMA, "append_one_write"),
    ),
    "PgQ insert_event": (
        f"SELECT pgq.insert_event('{QUEUE}', 'bench', convert_from(($6::bytea[])[1], 'UTF8')) "
        "WHERE $1::integer + $2::integer + $3::bigint + $4::integer + $5::bigint + $7::integer "
        "IS NOT NULL",
        ("pgq", "insert_event"),
    ),
    "raw single-row INSERT": (
        f"INSERT INTO {SCHEMA}.raw_single (partition, payload) "
        "SELECT $2::integer, ($6::bytea[])[1] "
        "WHERE $1::integer + $3::bigint + $4::integer + $5::bigint + $7::integer IS NOT NULL",
        None,
    ),
}
#: The operations that take a producer sequence (the others leave it alone).
SEQUENCED = (
    "txnq append_v6",
    "floor: the three writes only",
    "floor: three writes, no PL/pgSQL",
    "floor: two writes, dedup from entries",
    "floor: one write, advisory lock",
)


def _worker(args: tuple[str, str, int, int, int, int, int, int, float]) -> tuple[int, int]:
    """Run one operation for ``seconds`` on one connection; (calls, next sequence)."""
    dsn, operation, topic_id, partition, producer_id, epoch, first, entry_log, seconds = args
    text = OPERATIONS[operation][0]
    payload = ("{\\\\x" + (b"x" * 100).hex() + "}").encode()
    sequenced = operation in SEQUENCED
    with psycopg.connect(dsn, autocommit=True) as conn:
        pgconn = conn.pgconn
        pgconn.prepare(b"op", text.encode())
        seq, calls = first, 0
        fixed = [str(v).encode() for v in (topic_id, partition, producer_id, epoch)]
        log = str(entry_log).encode()
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            floor_runs.checked(
                pgconn.exec_prepared(b"op", [*fixed, str(seq).encode(), payload, log]), operation
            )
            calls += 1
            seq += sequenced
    return calls, seq


def _server_ms(dsn: str) -> dict[tuple[str, str], tuple[int, float]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        rows = conn.execute(
            "SELECT schemaname, funcname, sum(calls), sum(total_time) FROM pg_stat_user_functions "
            "GROUP BY 1, 2"
        ).fetchall()
    return {(str(s), str(f)): (int(c), float(t)) for s, f, c, t in rows}


def _analyze(dsn: str) -> None:
    """Fresh statistics on the entries copies. Without any (autovacuum off,
    as on the project's PostgreSQL 15), the generic plan of the sequence
    read took the primary key and sorted the partition's rows: 7 ms a call
    after 10,000 sends, a planner accident no production table has."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"ANALYZE {SCHEMA}.entries_two, {SCHEMA}.entries_copy")


def _setup(dsn: str, clients: int) -> tuple[int, list[tuple[int, int]], int, bool]:
    """The topic, its producers, the entry log id, and whether PgQ is here."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        db = conn.info.dbname
        conn.execute(f"ALTER DATABASE \"{db}\" SET track_functions = 'all'")
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(FLOOR_FUNCTION)
        for function in MODEL_FUNCTIONS:
            conn.execute(function)
        for table in ("entries_two", "entries_copy"):
            conn.execute(
                f"CREATE TABLE {SCHEMA}.{table} (LIKE txnq.entries INCLUDING DEFAULTS, "
                "PRIMARY KEY (topic_id, partition, entry_offset))"
            )
            conn.execute(f"CREATE INDEX ON {SCHEMA}.{table} USING brin (publish_time)")
            conn.execute(
                f"CREATE INDEX ON {SCHEMA}.{table} (topic_id, partition, producer_id, "
                "first_sequence)"
            )
        conn.execute(
            f"CREATE TABLE {SCHEMA}.raw_single (id bigserial PRIMARY KEY, partition integer, "
            "payload bytea)"
        )
        topic_id, producers = floor_runs.topic_with_producers(
            conn, f"single-floor-{os.getpid()}-{clients}", clients
        )
        for i in range(clients):
            # The sequence row the floor updates: written by a first real send.
            conn.execute(
                "SELECT txnq.append_v6(%s, %s, %s, %s, 0, ARRAY['x'::bytea])",
                (topic_id, i, *producers[i]),
            )
        config = conn.execute("SELECT active_entry_log_id FROM txnq.config").fetchone()
        assert config is not None
        pgq = (
            conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pgq'").fetchone()
            is not None
        )
        if pgq:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pgq")
            conn.execute("SELECT pgq.create_queue(%s)", (QUEUE,))
    return topic_id, producers, int(config[0]), pgq


def _teardown(dsn: str, pgq: bool) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        if pgq:
            conn.execute("SELECT pgq.drop_queue(%s, true)", (QUEUE,))


def measure(dsn: str, clients: int, rounds: int, seconds: float) -> dict[str, dict[str, float]]:
    """Per operation: median calls/s over all clients and server µs per call."""
    topic_id, producers, entry_log, pgq = _setup(dsn, clients)
    operations = [op for op in OPERATIONS if pgq or not op.startswith("PgQ")]
    # The sequence row's producers (append_v6 and the three writes share it)
    # and each entries copy's: a sequence of its own per model.
    sequences = {op: ("row" if op in SEQUENCED[:3] else op) for op in operations}
    next_seq = {group: [1] * clients for group in set(sequences.values())}
    rates: dict[str, list[float]] = {op: [] for op in operations}
    server: dict[str, list[float]] = {op: [] for op in operations}
    try:
        with multiprocessing.Pool(clients) as pool:
            for r in range(rounds):
                order = operations[r % len(operations) :] + operations[: r % len(operations)]
                for op in order:
                    function = OPERATIONS[op][1]
                    _analyze(dsn)
                    tail = (entry_log, seconds)
                    before = _server_ms(dsn)
                    work: list[Any] = [
                        (dsn, op, topic_id, i, *producers[i], next_seq[sequences[op]][i], *tail)
                        for i in range(clients)
                    ]
                    start = time.perf_counter()
                    done = pool.map(_worker, work)
                    elapsed = time.perf_counter() - start
                    next_seq[sequences[op]] = [seq for _, seq in done]
                    rates[op].append(sum(calls for calls, _ in done) / elapsed)
                    if function is not None:
                        time.sleep(0.7)  # the statistics' flush
                        c0, t0 = before.get(function, (0, 0.0))
                        c1, t1 = _server_ms(dsn).get(function, (0, 0.0))
                        server[op].append((t1 - t0) * 1000 / max(c1 - c0, 1))
    finally:
        _teardown(dsn, pgq)
    return {
        op: {
            "msgs_per_s": statistics.median(rates[op]),
            **({"server_us": statistics.median(server[op])} if server[op] else {}),
        }
        for op in operations
    }


def show(results: dict[str, dict[str, dict[str, float]]], rounds: int) -> None:
    """The results as a table per client count."""
    for clients, ops in results.items():
        pgq = ops.get("PgQ insert_event", {}).get("msgs_per_s")
        raw = ops["raw single-row INSERT"]["msgs_per_s"]
        print(f"\n{clients} client(s), one commit per message (medians of {rounds} rounds)")
        print(f"{'operation':<32}{'msgs/s':>10}{'x PgQ':>8}{'x raw':>8}{'server us':>11}")
        for op, figures in ops.items():
            rate = figures["msgs_per_s"]
            vs_pgq = f"{rate / pgq:.2f}" if pgq else "-"
            us = figures.get("server_us")
            print(
                f"{op:<32}{rate:>10,.0f}{vs_pgq:>8}{rate / raw:>8.2f}"
                f"{'-' if us is None else f'{us:.1f}':>11}"
            )


if __name__ == "__main__":
    raise SystemExit(floor_runs.main(__doc__, measure, show))
