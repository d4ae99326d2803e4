"""procrastinate (PyPI): an ``App`` on its async psycopg connector, the calls
its worker makes: ``defer_async`` / ``batch_defer_async`` to enqueue,
``fetch_job`` (one job per call: procrastinate has no batch fetch) and
``finish_job`` as succeeded, keeping the row (its default, ``delete_jobs``
"never")."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bench.peers.common import BATCH, Config, PeerRun, Skipped, abounded, analyze, measure_storage

name = "procrastinate"
title = "procrastinate"
payload = "text"
QUEUE = "bench"


def available(server_dsn: str) -> str | None:
    try:
        import procrastinate  # noqa: F401
    except ImportError:
        return "procrastinate is not installed: pip install '.[bench]'"
    return None


async def _run(dsn: str, cfg: Config, data: list[str], progress: Any, result: PeerRun) -> int:
    import procrastinate
    from procrastinate.jobs import Status

    app = procrastinate.App(
        connector=procrastinate.PsycopgConnector(
            conninfo=dsn, min_size=1, max_size=max(4, cfg.clients)
        )
    )

    @app.task(name="bench", queue=QUEUE)
    def bench(p: str) -> None:  # never run: the benchmark fetches and finishes jobs itself
        del p

    async with app.open_async():
        progress("apply schema")
        await app.schema_manager.apply_schema_async()

        async def single(clients: int) -> tuple[int, float]:
            async def client() -> int:
                async def one(i: int) -> int:
                    await bench.defer_async(p=data[i % len(data)])
                    return 1

                done, _ = await abounded(cfg.single, cfg.seconds, one)
                return done

            start = time.perf_counter()
            counts = await asyncio.gather(*(client() for _ in range(clients)))
            return sum(counts), sum(counts) / (time.perf_counter() - start)

        progress("defer, 1 client")
        sent_1, result.rates["send_single"] = await single(1)
        progress(f"defer, {cfg.clients} clients")
        sent_4, result.rates["send_single_4"] = await single(cfg.clients)
        progress(f"batch_defer, {BATCH} per call")

        async def send_batch(done: int) -> int:
            k = min(BATCH, cfg.messages - done)
            await bench.batch_defer_async(*({"p": data[(done + i) % len(data)]} for i in range(k)))
            return k

        sent_b, result.rates["send_batch"] = await abounded(cfg.messages, cfg.seconds, send_batch)
        total = sent_1 + sent_4 + sent_b
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
    consumed = asyncio.run(_run(dsn, cfg, data, progress, result))
    result.notes.append("procrastinate fetches one job per call (no batch fetch)")
    progress("storage")
    result.storage = measure_storage(dsn, consumed)
    return result
