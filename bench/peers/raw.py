"""The raw PostgreSQL limits: what the server does with the same 100-byte rows
and no queue at all, measured in every run next to the peers."""

from __future__ import annotations

from typing import Any

import psycopg

from bench.peers.common import (
    BATCH,
    CTP_BATCH,
    Config,
    PeerRun,
    analyze,
    bounded,
    latency_summary,
    measure_storage,
    sql_single_commits,
)
from bench.produce_consume import (
    PARTITIONS,
    RAW_INSERT_ONE,
    RAW_TABLE,
    raw_copy,
    raw_insert_batched,
)
from bench.transactions import RAW_TABLE as RAW_LATENCY_TABLE
from bench.transactions import raw_commit_latencies

name = "raw"
title = "raw PostgreSQL"
payload = "bytes"

OFFSETS_TABLE = """
CREATE TABLE txnq_bench_offsets (partition integer PRIMARY KEY, seq bigint NOT NULL)
"""
OUT_TABLE = "CREATE TABLE txnq_bench_out (LIKE txnq_bench_raw INCLUDING ALL)"
READ = """
SELECT seq, payload FROM txnq_bench_raw
 WHERE partition = %s AND seq > %s ORDER BY seq LIMIT %s
"""
SAVE_OFFSET = "UPDATE txnq_bench_offsets SET seq = %s WHERE partition = %s"
WRITE_OUT = """
INSERT INTO txnq_bench_out (partition, seq, payload)
SELECT %s, s, p FROM unnest(%s::bigint[], %s::bytea[]) AS u(s, p)
"""
DELETE_QUEUE = """
DELETE FROM txnq_bench_raw
 WHERE (partition, seq) IN (SELECT partition, seq FROM txnq_bench_raw
                             ORDER BY partition, seq LIMIT %s FOR UPDATE SKIP LOCKED)
RETURNING payload
"""


def available(server_dsn: str) -> str | None:
    return None


def single_row_commits(dsn: str, cfg: Config, clients: int, data: list[bytes]) -> float:
    """Autocommit single-row INSERTs from ``clients`` connections; msgs/s overall."""
    _, rate = sql_single_commits(
        dsn, cfg, clients, RAW_INSERT_ONE, lambda index, seq: (index, seq, data[seq % len(data)])
    )
    return rate


def read_ack(conn: psycopg.Connection[Any], cfg: Config, table_rows: int) -> float:
    """Keyset-read the partitions in turn in 1000-row pages, saving the offset
    in the same transaction: the floor of a log consumer that commits its
    position."""
    return _read_loop(conn, cfg, table_rows, BATCH, write_out=False)


def consume_transform_produce(conn: psycopg.Connection[Any], cfg: Config) -> float:
    """Per transaction: read 500 rows, write 500 transformed rows, save the offset."""
    return _read_loop(conn, cfg, cfg.ctp_messages, CTP_BATCH, write_out=True)


def _read_loop(
    conn: psycopg.Connection[Any], cfg: Config, n: int, page: int, *, write_out: bool
) -> float:
    conn.execute("TRUNCATE txnq_bench_offsets")
    conn.execute(
        "INSERT INTO txnq_bench_offsets SELECT p, -1 FROM generate_series(0, %s) p",
        (PARTITIONS - 1,),
    )
    positions = dict.fromkeys(range(PARTITIONS), -1)
    turn = [0]

    def step(_: int) -> int:
        for _attempt in range(PARTITIONS):
            partition = turn[0] % PARTITIONS
            turn[0] += 1
            with conn.transaction():
                rows = conn.execute(READ, (partition, positions[partition], page)).fetchall()
                if not rows:
                    continue
                seqs = [r[0] for r in rows]
                if write_out:
                    conn.execute(WRITE_OUT, (partition, seqs, [bytes(r[1]).upper() for r in rows]))
                positions[partition] = seqs[-1]
                conn.execute(SAVE_OFFSET, (seqs[-1], partition))
            return len(rows)
        return 0

    _, rate = bounded(n, cfg.seconds, step)
    return rate


def delete_queue(conn: psycopg.Connection[Any], cfg: Config, table_rows: int) -> tuple[int, float]:
    """The classic SKIP LOCKED work queue: delete 1000 rows per commit."""
    return bounded(
        table_rows, cfg.seconds, lambda _: len(conn.execute(DELETE_QUEUE, (BATCH,)).fetchall())
    )


def run(dsn: str, cfg: Config, data: list[bytes], progress: Any) -> PeerRun:
    result = PeerRun()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(RAW_TABLE)
        conn.execute(OFFSETS_TABLE)
        conn.execute(OUT_TABLE)
        progress("single-row commits, 1 client")
        result.rates["single_1"] = single_row_commits(dsn, cfg, 1, data)
        conn.execute("TRUNCATE txnq_bench_raw")
        progress(f"single-row commits, {cfg.clients} clients")
        result.rates["single_4"] = single_row_commits(dsn, cfg, cfg.clients, data)
        progress("COPY")
        result.rates["copy"] = raw_copy(conn, cfg.messages, data)
        progress("INSERT unnest, 100 per commit")
        result.rates["insert_100"] = raw_insert_batched(conn, cfg.messages, data, chunk=100)
        progress("INSERT unnest, 1000 per commit")
        result.rates["insert_1000"] = raw_insert_batched(conn, cfg.messages, data, chunk=BATCH)
        analyze(dsn)
        progress("keyset read + offset commit")
        result.rates["read_ack"] = read_ack(conn, cfg, cfg.messages)
        progress("read + insert + offset, one transaction")
        result.rates["ctp"] = consume_transform_produce(conn, cfg)
        conn.execute("DROP TABLE txnq_bench_out")
        progress("DELETE … SKIP LOCKED queue")
        consumed, result.rates["delete_queue"] = delete_queue(conn, cfg, cfg.messages)
        progress(f"single-row INSERT + COMMIT latency, {cfg.clients} clients")
        conn.execute(RAW_LATENCY_TABLE)
        result.latencies["commit"] = latency_summary(
            raw_commit_latencies(dsn, cfg.clients, cfg.commits, data[0], cfg.seconds)
        )
        conn.execute("DROP TABLE txnq_bench_txn_raw")
    progress("storage")
    result.storage = measure_storage(dsn, consumed)
    return result
