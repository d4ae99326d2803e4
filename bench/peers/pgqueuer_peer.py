"""pgqueuer (PyPI): its ``Queries`` API on psycopg's async driver, the calls
its QueueManager makes: ``enqueue`` (a list for a batch), ``dequeue`` of up to
1000 jobs (they are marked picked) and ``log_jobs`` to complete them (moved
from the queue table to the log table)."""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from typing import Any

from bench.peers.common import (
    BATCH,
    Config,
    PeerRun,
    Skipped,
    abounded,
    analyze,
    measure_storage,
    module_missing,
    single_phases,
)

name = "pgqueuer"
title = "pgqueuer"
payload = "bytes"
ENTRYPOINT = "bench"


def available(server_dsn: str) -> str | None:
    return module_missing("pgqueuer")


async def _connect(dsn: str) -> Any:
    import psycopg
    from pgqueuer.queries import Queries

    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    return conn, Queries.from_psycopg_connection(conn)


async def _single(dsn: str, cfg: Config, clients: int, data: list[bytes]) -> tuple[int, float]:
    import time

    pairs = [await _connect(dsn) for _ in range(clients)]

    async def client(queries: Any) -> int:
        async def one(i: int) -> int:
            await queries.enqueue(ENTRYPOINT, data[i % len(data)])
            return 1

        done, _ = await abounded(cfg.single, cfg.seconds, one)
        return done

    try:
        start = time.perf_counter()
        counts = await asyncio.gather(*(client(q) for _, q in pairs))
        elapsed = time.perf_counter() - start
    finally:
        for conn, _ in pairs:
            await conn.close()
    return sum(counts), sum(counts) / elapsed


async def _install(dsn: str) -> None:
    conn, queries = await _connect(dsn)
    try:
        await queries.install()
    finally:
        await conn.close()


async def _batch_and_consume(
    dsn: str, cfg: Config, data: list[bytes], progress: Any, result: PeerRun, sent_single: int
) -> int:
    from pgqueuer.queries import EntrypointExecutionParameter

    conn, queries = await _connect(dsn)
    try:
        progress(f"enqueue, {BATCH} per call")

        async def send_batch(done: int) -> int:
            k = min(BATCH, cfg.messages - done)
            await queries.enqueue(
                [ENTRYPOINT] * k, [data[(done + i) % len(data)] for i in range(k)], [0] * k
            )
            return k

        sent_b, result.rates["send_batch"] = await abounded(cfg.messages, cfg.seconds, send_batch)
        total = sent_single + sent_b
        await asyncio.to_thread(analyze, dsn)
        progress(f"dequeue {BATCH} + log_jobs")
        entrypoints = {ENTRYPOINT: EntrypointExecutionParameter(concurrency_limit=0)}
        manager = uuid.uuid4()

        async def consume(_: int) -> int:
            jobs = await queries.dequeue(
                batch_size=BATCH,
                entrypoints=entrypoints,
                queue_manager_id=manager,
                global_concurrency_limit=None,
                heartbeat_timeout=timedelta(seconds=30),
            )
            if jobs:
                await queries.log_jobs([(job, "successful", None) for job in jobs])
            return len(jobs)

        consumed, rate = await abounded(total, cfg.seconds, consume)
        result.rates["consume_ack"] = result.rates["consume_ack_shared"] = rate
        return consumed
    finally:
        await conn.close()


def run(dsn: str, cfg: Config, data: list[bytes], progress: Any) -> PeerRun:
    if available(dsn):
        raise Skipped(str(available(dsn)))
    result = PeerRun()
    progress("install")
    asyncio.run(_install(dsn))
    sent_single = single_phases(
        result,
        dsn,
        cfg,
        lambda part, k: asyncio.run(_single(dsn, part, k, data)),
        progress,
        "enqueue",
    )
    consumed = asyncio.run(_batch_and_consume(dsn, cfg, data, progress, result, sent_single))
    progress("storage")
    result.storage = measure_storage(dsn, consumed)
    return result
