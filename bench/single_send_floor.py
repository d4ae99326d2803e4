"""How fast could a single send be with txnq's storage model? txnq's
``append_v6`` against the least any append of that model must do, PgQ's
``insert_event`` and a raw single-row INSERT, each one commit per message.

    python bench/single_send_floor.py --dsn DSN [--clients 1,4] [--rounds 3]
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

DSN names a scratch database migrated to head (``txnq migrate``). The
benchmark creates a topic ``single-floor-<pid>-<clients>`` with one partition per
client, a schema ``txnq_floor`` holding the floor function and the raw table
(dropped at the end), and, where the pgq extension is available, a PgQ queue
(dropped at the end). Each round runs the operations in turn (the order
rotating), each for ``--seconds`` with ``--clients`` processes, every
process on its own partition with its own producer: calls per second over
all clients, and server time per call from pg_stat_user_functions
(``track_functions`` is turned on for the database). Synchronous commit, as
``producer.send()`` runs. Medians over the rounds.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import time
from typing import Any

import psycopg

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
SEQUENCED = ("txnq append_v6", "floor: the three writes only")


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
            res = pgconn.exec_prepared(b"op", [*fixed, str(seq).encode(), payload, log])
            if res.status not in (1, 2):  # PGRES_COMMAND_OK, PGRES_TUPLES_OK
                raise RuntimeError(f"{operation}: {(res.error_message or b'').decode()}")
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


def _setup(dsn: str, clients: int) -> tuple[int, list[tuple[int, int]], int, bool]:
    """The topic, its producers, the entry log id, and whether PgQ is here."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        db = conn.info.dbname
        conn.execute(f"ALTER DATABASE \"{db}\" SET track_functions = 'all'")
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(FLOOR_FUNCTION)
        conn.execute(
            f"CREATE TABLE {SCHEMA}.raw_single (id bigserial PRIMARY KEY, partition integer, "
            "payload bytea)"
        )
        row = conn.execute(
            "SELECT txnq.create_topic_v2(%s, %s::integer, -1, -1, NULL, 5242880)",
            (f"single-floor-{os.getpid()}-{clients}", clients),
        ).fetchone()
        assert row is not None
        topic_id = int(row[0])
        producers = []
        for i in range(clients):
            rows = conn.execute(
                "SELECT producer_id, epoch FROM txnq.register_producer_v2(%s, %s)",
                (topic_id, f"floor-{i}"),
            ).fetchall()
            producers.append((int(rows[0][0]), int(rows[0][1])))
            # The sequence row the floor updates: written by a first real send.
            conn.execute(
                "SELECT txnq.append_v6(%s, %s, %s, %s, 0, ARRAY['x'::bytea])",
                (topic_id, i, *producers[-1]),
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
    next_seq = [1] * clients
    rates: dict[str, list[float]] = {op: [] for op in operations}
    server: dict[str, list[float]] = {op: [] for op in operations}
    try:
        with multiprocessing.Pool(clients) as pool:
            for r in range(rounds):
                order = operations[r % len(operations) :] + operations[: r % len(operations)]
                for op in order:
                    function = OPERATIONS[op][1]
                    before = _server_ms(dsn)
                    work: list[Any] = [
                        (dsn, op, topic_id, i, *producers[i], next_seq[i], entry_log, seconds)
                        for i in range(clients)
                    ]
                    start = time.perf_counter()
                    done = pool.map(_worker, work)
                    elapsed = time.perf_counter() - start
                    next_seq = [seq for _, seq in done]
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="a scratch database migrated to head")
    parser.add_argument("--clients", default="1,4", help="client counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--json", action="store_true")
    ns = parser.parse_args()
    try:
        counts = [int(c) for c in ns.clients.split(",")]
    except ValueError:
        parser.error(f"--clients takes client counts separated by commas, not {ns.clients!r}")
    if ns.rounds < 1 or ns.seconds <= 0 or any(c < 1 for c in counts):
        parser.error("--rounds, --seconds and every --clients count must be positive")
    results = {str(c): measure(ns.dsn, c, ns.rounds, ns.seconds) for c in counts}
    if ns.json:
        print(json.dumps(results, indent=2))
        return 0
    for clients, ops in results.items():
        pgq = ops.get("PgQ insert_event", {}).get("msgs_per_s")
        raw = ops["raw single-row INSERT"]["msgs_per_s"]
        print(f"\n{clients} client(s), one commit per message (medians of {ns.rounds} rounds)")
        print(f"{'operation':<32}{'msgs/s':>10}{'x PgQ':>8}{'x raw':>8}{'server us':>11}")
        for op, figures in ops.items():
            rate = figures["msgs_per_s"]
            vs_pgq = f"{rate / pgq:.2f}" if pgq else "-"
            us = figures.get("server_us")
            print(
                f"{op:<32}{rate:>10,.0f}{vs_pgq:>8}{rate / raw:>8.2f}"
                f"{'-' if us is None else f'{us:.1f}':>11}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
