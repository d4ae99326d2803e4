"""pgmq, installed as plain SQL: the PyPI package ``pgmq`` (its Python client)
ships the extension's SQL script (``pgmq/sql/pgmq.sql``), which this peer
runs in the fresh database; no server extension is needed. Driven through
pgmq's SQL functions, which is what its clients call: ``send``,
``send_batch``, ``read`` with a visibility timeout and ``delete`` of the ids
read (at-least-once; ``archive`` would keep a copy)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from bench.peers.common import (
    BATCH,
    Config,
    PeerRun,
    Skipped,
    analyze,
    bounded,
    measure_storage,
    single_phases,
    sql_batches,
    sql_single_commits,
)

name = "pgmq"
title = "pgmq"
payload = "text"
QUEUE = "bench"
SEND = "SELECT pgmq.send('bench', %s)"
SEND_BATCH = "SELECT count(*) FROM pgmq.send_batch('bench', %s::jsonb[])"
READ = "SELECT msg_id FROM pgmq.read('bench', 30, %s)"
DELETE = "SELECT count(*) FROM pgmq.delete('bench', %s::bigint[])"


def _install_sql() -> str:
    try:
        from pgmq.install import get_embedded_install_sql
    except ImportError as exc:
        raise Skipped(
            "pgmq's SQL comes from the PyPI package pgmq: pip install '.[bench]'"
        ) from exc
    return str(get_embedded_install_sql())


def available(server_dsn: str) -> str | None:
    try:
        _install_sql()
    except Skipped as exc:
        return str(exc)
    except Exception as exc:  # the package is there but its SQL is not
        return f"the pgmq package carries no SQL script: {exc}"
    return None


def run(dsn: str, cfg: Config, data: list[str], progress: Any) -> PeerRun:
    result = PeerRun()
    progress("install SQL")
    bodies = [Jsonb({"p": p}) for p in data]
    with psycopg.connect(dsn) as conn:
        conn.execute(_install_sql())  # one transaction
        conn.commit()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pgmq.create(%s)", (QUEUE,))
        sent_single = single_phases(
            result,
            dsn,
            cfg,
            lambda part, k: sql_single_commits(
                dsn, part, k, SEND, lambda _, seq: (bodies[seq % len(bodies)],)
            ),
            progress,
            "send",
        )
        progress(f"send_batch, {BATCH} per commit")

        sent_b, result.rates["send_batch"] = sql_batches(conn, cfg, SEND_BATCH, bodies)
        total = sent_single + sent_b
        analyze(dsn)
        progress(f"read {BATCH} + delete")

        def consume(_: int) -> int:
            ids = [r[0] for r in conn.execute(READ, (BATCH,)).fetchall()]
            if ids:
                conn.execute(DELETE, (ids,))
            return len(ids)

        consumed, rate = bounded(total, cfg.seconds, consume)
        # A work queue: its consumers compete for messages, so this one
        # figure stands in both consume tables.
        result.rates["consume_ack"] = result.rates["consume_ack_shared"] = rate
    progress("storage")
    result.storage = measure_storage(dsn, consumed)
    return result
