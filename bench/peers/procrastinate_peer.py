"""procrastinate (PyPI): an ``App`` on its async psycopg connector, the calls
its worker makes: ``defer_async`` / ``batch_defer_async`` to enqueue,
``fetch_job`` (one job per call: procrastinate has no batch fetch) and
``finish_job`` as succeeded, keeping the row (its default, ``delete_jobs``
"never")."""

from __future__ import annotations

import asyncio
import time
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

name = "procrastinate"
title = "procrastinate"
payload = "text"
QUEUE = "bench"


def available(server_dsn: str) -> str | None:
    return module_missing("procrastinate")


def _app(dsn: str, cfg: Config) -> tuple[Any, Any]:
    import procrastinate

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=dsn, min_size=1, max_size=max(4, cfg.clients)
        )
    )

    @app.task(name="bench", queue=QUEUE)
    def bench(p: str) -> None:  # never run: the benchmark fetches and finishes jobs itself
        del p

    return app, bench


async def _install(dsn: str, cfg: Config) -> None:
    app, _ = _app(dsn, cfg)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()


async def _single(dsn: str, cfg: Config, clients: int, data: list[str]) -> tuple[int, float]:
    """``defer_async`` from ``clients`` concurrent tasks on the app's pool."""
    app, bench = _app(dsn, cfg)
    async with app.open_async():

        async def client() -> int:
            async def one(i: int) -> int:
                await bench.defer_async(p=data[i % len(data)])
                return 1

            done, _ = await abounded(cfg.single, cfg.seconds, one)
            return done

        start = time.perf_counter()
        counts = await asyncio.gather(*(client() for _ in range(clients)))
        return sum(counts), sum(counts) / (time.perf_counter() - start)


async def _batch_and_consume(
    dsn: str, cfg: Config, data: list[str], progress: Any, result: PeerRun, sent_single: int
) -> int:
    from procrastinate.jobs import Status

    app, bench = _app(dsn, cfg)
    async with app.open_async():
        progress(f"batch_defer, {BATCH} per call")

        async def send_batch(done: int) -> int:
            k = min(BATCH, cfg.messages - done)
            await bench.batch_defer_async(*({"p": data[(done + i) % len(data)]} for i in range(k)))
            return k

        sent_b, result.rates["send_batch"] = await abounded(cfg.messages, cfg.seconds, send_batch)
        total = sent_single + sent_b
        await asyncio.to_thread(analyze, dsn)
        progress("fetch_job + finish_job")
        manager = app.job_manager
        worker_id = await manager.register_worker()

        async def consume(_: int) -> int:
            job = await manager.fetch_job([QUEUE], worker_id)
            if job is None:
                return 0
            await manager.finish_job(job, Status.SUCCEEDED, delete_job=False)
            return 1

        consumed, rate = await abounded(total, cfg.seconds, consume)
        await manager.unregister_worker(worker_id)
        result.rates["consume_ack"] = result.rates["consume_ack_shared"] = rate
        return consumed


def run(dsn: str, cfg: Config, data: list[str], progress: Any) -> PeerRun:
    if available(dsn):
        raise Skipped(str(available(dsn)))
    result = PeerRun()
    progress("apply schema")
    asyncio.run(_install(dsn, cfg))
    sent_single = single_phases(
        result,
        dsn,
        cfg,
        lambda part, k: asyncio.run(_single(dsn, part, k, data)),
        progress,
        "defer",
    )
    consumed = asyncio.run(_batch_and_consume(dsn, cfg, data, progress, result, sent_single))
    result.notes.append("procrastinate fetches one job per call (no batch fetch)")
    progress("storage")
    result.storage = measure_storage(dsn, consumed)
    return result
