"""How fast could ``commit()`` be with txnq's transaction protocol? The
latency of txnq's commit of a one-message transaction against the least a
commit of that protocol must write, and against raw commits shaped alike.

    python -m bench.commit_floor --dsn DSN [--clients 1,4] [--rounds 3]
        [--seconds 3] [--json]

Issue 23 item 4 asks ``commit()`` within 2x of a raw ``INSERT`` + ``COMMIT``
at the median, with four clients. A client transaction is three steps, each
a round trip and a PostgreSQL transaction: the open (the transaction row),
the send (the entry, registering the transaction on its partition), both
committed without waiting for the WAL flush, and the commit, whose decision
must be durable and so waits for the flush (docs/transactions.md, "One WAL
flush per transaction"). Only the commit is timed, as
``bench/transactions.py`` and ``bench.peers`` time ``txn.commit()``. Six
operations, the same cycle for each:

- ``raw INSERT + COMMIT``: one autocommit single-row ``INSERT`` a cycle, the
  issue's reference;
- ``raw, three steps``: two single-row ``INSERT`` s committed without the
  flush, then one with it (timed): the protocol's shape with nothing of
  txnq's rows in it;
- ``floor: the decision row only``: the same open and append, then one
  ``UPDATE`` of the transaction row to COMMITTING (timed), the least any
  durable two-phase decision writes; its marker phase follows, untimed,
  without a flush (``complete_txn_v2``);
- ``txnq end_txn_v3 (wait=False)``: the same, with txnq's decision function
  (timed), as ``commit(wait=False)`` runs it; the marker phase as above, as a
  coordinator worker would run it;
- ``floor: the commit's writes only``: txnq's own open and transactional
  append (``open_txn_v3``, ``append_v6``), then a PL/pgSQL function doing
  only the writes a one-partition commit must make (timed): the transaction
  row's final state, its log row, the partition's transaction buffer row,
  head row, COMMIT marker entry and ``txn_partitions`` row; no check, no
  read but the head row's update, one log row where txnq writes two;
- ``txnq end_and_complete_txn_v1``: the same open and append, then txnq's
  commit function (timed), as ``commit()`` runs it.

One process per client, each on its own partition with its own producer
(no lock waits between clients); every call a prepared statement through
libpq. DSN names a scratch database migrated to head (``txnq migrate``); the
benchmark creates a topic ``commit-floor-<pid>-<clients>`` and a schema
``txnq_commit_floor`` (dropped at the end). Each round runs the operations in
turn, the order rotating; p50 and p99 of the timed step per round, medians
over the rounds. ``commit()`` (``wait=True``) waits for the marker phase
(DESIGN.md, protocol step 7), so its floor is the commit's writes, not the
decision row's.
"""

from __future__ import annotations

import multiprocessing
import os
import statistics
import time
from typing import Any

import psycopg

from bench import floor_runs

SCHEMA = "txnq_commit_floor"

#: The writes of a one-partition commit and nothing else (see the module doc).
FLOOR_FUNCTION = f"""
CREATE FUNCTION {SCHEMA}.commit_writes(
    p_tc_id integer, p_txn_seq bigint, p_topic_id integer, p_partition integer,
    p_entry_log_id integer) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_next bigint;
    v_ledger bigint;
    v_time timestamptz;
BEGIN
    UPDATE txnq.transactions t
       SET state = 'COMMITTED', reason = 'client', decided_at = now(), completed_at = now()
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    INSERT INTO txnq.txn_log (tc_id, txn_seq, state, reason)
    VALUES (p_tc_id, p_txn_seq, 'COMMITTED', 'client');
    DELETE FROM txnq.txn_buffer_ongoing o
     WHERE o.topic_id = p_topic_id AND o.partition = p_partition
       AND o.tc_id = p_tc_id AND o.txn_seq = p_txn_seq;
    UPDATE txnq.partitions h
       SET next_offset = h.next_offset + 1, ongoing_txns = greatest(h.ongoing_txns - 1, 0),
           max_read_offset = h.next_offset,
           last_publish_time = greatest(clock_timestamp(), h.last_publish_time)
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition
    RETURNING h.next_offset, h.ledger_id, h.last_publish_time INTO v_next, v_ledger, v_time;
    INSERT INTO txnq.entries (topic_id, partition, entry_offset, entry_log_id, ledger_id,
                              publish_time, message_count, payload_bytes, payloads,
                              txn_tc, txn_seq, marker)
    VALUES (p_topic_id, p_partition, v_next - 1, p_entry_log_id, v_ledger, v_time, 0, 0, '{{}}',
            p_tc_id, p_txn_seq, 1);
    UPDATE txnq.txn_partitions tp SET marker_offset = v_next - 1
     WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq
       AND tp.topic_id = p_topic_id AND tp.partition = p_partition;
    RETURN v_next - 1;
END;
$$
"""

#: The statements a worker prepares: name -> text.
STATEMENTS = {
    "raw_flushed": f"INSERT INTO {SCHEMA}.raw (client, payload) VALUES ($1::integer, $2::bytea)",
    "raw_unflushed": (
        f"INSERT INTO {SCHEMA}.raw (client, payload) "
        "SELECT $1::integer, $2::bytea "
        "FROM pg_catalog.set_config('synchronous_commit', 'off', true)"
    ),
    # As the client opens (open_txn_prepared) and sends (append_prepared_unflushed).
    "open": "SELECT tc_id, txn_seq FROM txnq.open_txn_v3($1::integer, 60, true)",
    "append": (
        "SELECT a.entry_offset "
        "FROM pg_catalog.set_config('synchronous_commit', 'off', true) AS lazy, "
        "txnq.append_v6($1::integer, $2::integer, $3::bigint, $4::integer, $5::bigint, "
        "ARRAY[$6::bytea], NULL, NULL, NULL, $7::integer, $8::bigint) AS a"
    ),
    "floor": f"SELECT {SCHEMA}.commit_writes($1::integer, $2::bigint, $3::integer, $4::integer, "
    "$5::integer)",
    "txnq": (
        "SELECT final_state FROM txnq.end_and_complete_txn_v1($1::integer, $2::bigint, true, "
        "'client')"
    ),
    # commit(wait=False): the decision alone; its marker phase, untimed, after.
    "decide": "SELECT state FROM txnq.end_txn_v3($1::integer, $2::bigint, true, 'client', false)",
    "complete": (
        "SELECT txnq.complete_txn_v2($1::integer, $2::bigint) "
        "FROM pg_catalog.set_config('synchronous_commit', 'off', true)"
    ),
    "decision_row": (
        "UPDATE txnq.transactions SET state = 'COMMITTING', reason = 'client', decided_at = now() "
        "WHERE tc_id = $1::integer AND txn_seq = $2::bigint"
    ),
}

OPERATIONS = (
    "raw INSERT + COMMIT",
    "raw, three steps",
    "floor: the decision row only",
    "txnq end_txn_v3 (wait=False)",
    "floor: the commit's writes only",
    "txnq end_and_complete_txn_v1",
)


def _exec(pgconn: Any, name: str, params: list[Any]) -> Any:
    return floor_runs.checked(
        pgconn.exec_prepared(name.encode(), [str(p).encode() for p in params]), name
    )


def _worker(
    args: tuple[str, str, int, int, int, int, int, int, int, float],
) -> tuple[list[float], int]:
    """Run one operation's cycles for ``seconds``: (timed latencies, next sequence)."""
    dsn, operation, client, coordinator, topic_id, producer_id, epoch, seq, entry_log, seconds = (
        args
    )
    payload = "\\x" + (b"x" * 100).hex()
    latencies: list[float] = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        pgconn = conn.pgconn
        for name, text in STATEMENTS.items():
            pgconn.prepare(name.encode(), text.encode())
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            if operation == "raw INSERT + COMMIT":
                start = time.perf_counter()
                _exec(pgconn, "raw_flushed", [client, payload])
            elif operation == "raw, three steps":
                _exec(pgconn, "raw_unflushed", [client, payload])
                _exec(pgconn, "raw_unflushed", [client, payload])
                start = time.perf_counter()
                _exec(pgconn, "raw_flushed", [client, payload])
            else:
                res = _exec(pgconn, "open", [coordinator])
                tc_id, txn_seq = (int(res.get_value(0, i) or b"0") for i in (0, 1))
                _exec(
                    pgconn,
                    "append",
                    [topic_id, client, producer_id, epoch, seq, payload, tc_id, txn_seq],
                )
                seq += 1
                start = time.perf_counter()
                if operation == "txnq end_and_complete_txn_v1":
                    _exec(pgconn, "txnq", [tc_id, txn_seq])
                elif operation == "floor: the commit's writes only":
                    _exec(pgconn, "floor", [tc_id, txn_seq, topic_id, client, entry_log])
                else:
                    step = "decide" if operation.startswith("txnq") else "decision_row"
                    _exec(pgconn, step, [tc_id, txn_seq])
                    latencies.append(time.perf_counter() - start)
                    _exec(pgconn, "complete", [tc_id, txn_seq])
                    continue
            latencies.append(time.perf_counter() - start)
    return latencies, seq


def _setup(dsn: str, clients: int) -> tuple[int, list[tuple[int, int]], int, int]:
    """The topic, its producers (id, epoch), the active entry log id and the
    number of transaction coordinators (a client opens on its own, as the
    client's round robin spreads them)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")
        conn.execute(f"CREATE SCHEMA {SCHEMA}")
        conn.execute(FLOOR_FUNCTION)
        conn.execute(
            f"CREATE TABLE {SCHEMA}.raw (id bigserial PRIMARY KEY, client integer NOT NULL, "
            "at timestamptz NOT NULL DEFAULT now(), payload bytea NOT NULL)"
        )
        topic_id, producers = floor_runs.topic_with_producers(
            conn, f"commit-floor-{os.getpid()}-{clients}", clients
        )
        config = conn.execute("SELECT active_entry_log_id FROM txnq.config").fetchone()
        limits = conn.execute("SELECT tc_count FROM txnq.txn_limits_v1()").fetchone()
        assert config is not None and limits is not None
    return topic_id, producers, int(config[0]), int(limits[0])


#: The tables a transaction updates or deletes from, vacuumed before each
#: operation's turn (untimed): with autovacuum off, as on the project's
#: PostgreSQL 15, their dead rows piled up from one operation to the next
#: (200,000 dead rows in txn_buffer_ongoing after one run, and the commit
#: functions' reads of it slowed down turn after turn); in production
#: autovacuum or txnq's hot-table vacuum job (docs/lifecycle.md) keeps
#: them small.
VACUUMED = (
    "txnq.transactions",
    "txnq.txn_partitions",
    "txnq.txn_buffer_ongoing",
    "txnq.partitions",
    "txnq.producer_sequences",
    "txnq.coordinators",
)


def _vacuum(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"VACUUM (ANALYZE) {', '.join(VACUUMED)}")


def _teardown(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP SCHEMA IF EXISTS {SCHEMA} CASCADE")


def _ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def measure(dsn: str, clients: int, rounds: int, seconds: float) -> dict[str, dict[str, float]]:
    """Per operation: median over the rounds of the timed step's p50 and p99
    (ms) and of the cycles per second over all clients."""
    topic_id, producers, entry_log, coordinators = _setup(dsn, clients)
    next_seq = [0] * clients
    figures: dict[str, dict[str, list[float]]] = {
        op: {"p50_ms": [], "p99_ms": [], "cycles_per_s": []} for op in OPERATIONS
    }
    try:
        with multiprocessing.Pool(clients) as pool:
            for r in range(rounds):
                order = OPERATIONS[r % len(OPERATIONS) :] + OPERATIONS[: r % len(OPERATIONS)]
                for op in order:
                    _vacuum(dsn)
                    tail = (entry_log, seconds)
                    work = [
                        (dsn, op, i, i % coordinators, topic_id, *producers[i], next_seq[i], *tail)
                        for i in range(clients)
                    ]
                    start = time.perf_counter()
                    done = pool.map(_worker, work)
                    elapsed = time.perf_counter() - start
                    next_seq = [seq for _, seq in done]
                    latencies = [value for per_client, _ in done for value in per_client]
                    figures[op]["p50_ms"].append(_ms(latencies, 0.5))
                    figures[op]["p99_ms"].append(_ms(latencies, 0.99))
                    figures[op]["cycles_per_s"].append(len(latencies) / elapsed)
    finally:
        _teardown(dsn)
    return {
        op: {name: statistics.median(values) for name, values in per_op.items()}
        for op, per_op in figures.items()
    }


def show(results: dict[str, dict[str, dict[str, float]]], rounds: int) -> None:
    """The results as a table per client count."""
    for clients, ops in results.items():
        raw = ops["raw INSERT + COMMIT"]["p50_ms"]
        print(f"\n{clients} client(s), the timed step of a cycle (medians of {rounds} rounds)")
        print(f"{'operation':<34}{'p50 ms':>9}{'x raw':>7}{'p99 ms':>9}{'cycles/s':>10}")
        for op, f in ops.items():
            print(
                f"{op:<34}{f['p50_ms']:>9.3f}{f['p50_ms'] / raw:>7.2f}{f['p99_ms']:>9.3f}"
                f"{f['cycles_per_s']:>10,.0f}"
            )


if __name__ == "__main__":
    raise SystemExit(floor_runs.main(__doc__, measure, show))
