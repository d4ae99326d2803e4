"""PgQ (Skytools), the Debian package ``postgresql-15-pgq3``: driven through
its SQL API, the way its own consumers (and pgqd, the ticker daemon) do.

A background thread plays pgqd: it calls ``pgq.ticker()`` every 100 ms for the
whole run (pgqd's default period is 1 s), and the queue's ``ticker_max_lag``
is 0, so every call with new events ticks: a batch holds what arrived in
100 ms. The consumer ticks itself when it finds no batch ready.

PgQ's batch is what arrived between two ticks, so while the producer is fast
its batches are far larger than txnq's (``batch_receive(1000)``). So the
consume phase runs twice: on that queue, as PgQ would run, and on a second
queue filled (untimed, after the storage is measured, with the ticker thread
stopped) with as many events in commits of BATCH, each followed by a tick
(``pgq.force_tick`` + ``pgq.ticker``): batches of BATCH, like txnq's.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import psycopg

from bench.peers.common import (
    BATCH,
    Config,
    PeerRun,
    analyze,
    bounded,
    measure_storage,
    single_phases,
    sql_batches,
    sql_single_commits,
)

name = "pgq"
title = "PgQ"
payload = "text"
QUEUE = "bench"
QUEUE_LIKE_TXNQ = "bench_batches"  # ticked every BATCH events
CONSUMER = "bench"
INSERT_ONE = "SELECT pgq.insert_event('bench', 'm', %s)"
INSERT_MANY = "SELECT count(pgq.insert_event('bench', 'm', p)) FROM unnest(%s::text[]) AS p"
INSERT_MANY_INTO = "SELECT count(pgq.insert_event(%s, 'm', p)) FROM unnest(%s::text[]) AS p"
TICK_PERIOD = 0.1


def available(server_dsn: str) -> str | None:
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        row = conn.execute("SHOW server_version_num").fetchone()
        major = int(row[0]) // 10000 if row else 0
        if major != 15:
            return (
                f"PgQ is measured on PostgreSQL 15 (the Debian package postgresql-15-pgq3); "
                f"this server is {major}"
            )
        found = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'pgq'").fetchone()
    if not found:
        return "the pgq extension is not installed: apt-get install postgresql-15-pgq3"
    return None


class Ticker(threading.Thread):
    """pgqd in miniature: ``pgq.ticker()`` every TICK_PERIOD seconds."""

    def __init__(self, dsn: str) -> None:
        super().__init__(daemon=True)
        self._dsn = dsn
        self._done = threading.Event()

    def run(self) -> None:
        with psycopg.connect(self._dsn, autocommit=True) as conn:
            while not self._done.wait(TICK_PERIOD):
                conn.execute("SELECT pgq.ticker()")

    def stop(self) -> None:
        self._done.set()
        self.join(timeout=10)


def consume(
    conn: psycopg.Connection[Any], n: int, cfg: Config, queue: str = QUEUE
) -> tuple[int, float]:
    """next_batch / get_batch_events / finish_batch, one transaction a batch:
    each event's id and payload reach the loop as a row, as txnq's messages do,
    and the loop reads every payload, as txnq's does."""
    payload_chars = [0]

    def step(_: int) -> int:
        for attempt in range(20):
            if attempt:
                time.sleep(0.005)
            with conn.transaction():
                row = conn.execute("SELECT pgq.next_batch(%s, %s)", (queue, CONSUMER)).fetchone()
                batch_id = row[0] if row else None
                if batch_id is not None:
                    events = conn.execute(
                        "SELECT ev_id, ev_data FROM pgq.get_batch_events(%s)", (batch_id,)
                    ).fetchall()
                    for _event_id, payload in events:  # as txnq's loop reads each payload
                        payload_chars[0] += len(payload)
                    conn.execute("SELECT pgq.finish_batch(%s)", (batch_id,))
                    if events:
                        return len(events)
                    continue
            # No batch ready: tick now rather than wait for the ticker.
            conn.execute("SELECT pgq.ticker(%s)", (queue,))
        return 0

    return bounded(n, cfg.seconds, step)


def fill_in_batches(conn: psycopg.Connection[Any], n: int, data: list[str]) -> None:
    """``n`` events into QUEUE_LIKE_TXNQ, BATCH per commit, a tick after each:
    PgQ's batches then hold BATCH events, as txnq's batch_receive(BATCH)."""
    conn.execute("SELECT pgq.create_queue(%s)", (QUEUE_LIKE_TXNQ,))
    conn.execute("SELECT pgq.register_consumer(%s, %s)", (QUEUE_LIKE_TXNQ, CONSUMER))
    for start in range(0, n, BATCH):
        rows = [data[i % len(data)] for i in range(start, min(start + BATCH, n))]
        conn.execute(INSERT_MANY_INTO, (QUEUE_LIKE_TXNQ, rows))
        # pgq.ticker alone waits for ticker_max_count events or ticker_max_lag:
        # force_tick makes it tick after every commit, the last shorter one too.
        conn.execute("SELECT pgq.force_tick(%s)", (QUEUE_LIKE_TXNQ,))
        conn.execute("SELECT pgq.ticker(%s)", (QUEUE_LIKE_TXNQ,))


def run(dsn: str, cfg: Config, data: list[str], progress: Any) -> PeerRun:
    result = PeerRun()
    progress("install")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION pgq")
        conn.execute("SELECT pgq.create_queue(%s)", (QUEUE,))
        # Tick whenever there are new events (pgqd's default lag is 3 s).
        conn.execute("SELECT pgq.set_queue_config(%s, 'ticker_max_lag', '0')", (QUEUE,))
        conn.execute("SELECT pgq.register_consumer(%s, %s)", (QUEUE, CONSUMER))
    ticker = Ticker(dsn)
    ticker.start()
    try:
        sent_single = single_phases(
            result,
            dsn,
            cfg,
            lambda part, k: sql_single_commits(
                dsn, part, k, INSERT_ONE, lambda _, seq: (data[seq % len(data)],)
            ),
            progress,
            "insert_event",
        )
        progress(f"insert_event, {BATCH} per commit")
        with psycopg.connect(dsn, autocommit=True) as conn:
            sent_b, result.rates["send_batch"] = sql_batches(conn, cfg, INSERT_MANY, data)
            total = sent_single + sent_b
            analyze(dsn)
            progress("next_batch / get_batch_events / finish_batch")
            consumed, result.rates["consume_ack"] = consume(conn, total, cfg)
    finally:
        ticker.stop()
    result.notes.append(
        "PgQ has no competing consumers in this package (pgq_coop is separate); "
        "it has no transactions of its own: insert_event joins the caller's transaction"
    )
    progress("storage")
    result.storage = measure_storage(dsn, consumed)
    progress(f"a second queue ticked every {BATCH} events (untimed)")
    with psycopg.connect(dsn, autocommit=True) as conn:
        fill_in_batches(conn, total, data)
        analyze(dsn)
        progress(f"next_batch / get_batch_events / finish_batch, batches of {BATCH}")
        _, result.rates["consume_ack_1000"] = consume(conn, total, cfg, QUEUE_LIKE_TXNQ)
    return result
