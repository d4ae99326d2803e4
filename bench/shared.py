"""Shared-subscription benchmark: consume + ack throughput with 1, 2, 4 and 8
consumers, next to the single consumer of an exclusive subscription and the
same claim loop on a plain table, in one run.

    python bench/shared.py [--dsn DSN] [--messages 40000] [--batch 100]
                           [--consumers 1,2,4,8] [--json]

Without --dsn (and TXNQ_DSN) it uses the embedded PostgreSQL under ./.txnq.
Messages are 100 bytes on a 4-partition topic, produced beforehand (entries of
--batch messages). Each consumer is its own process (no shared GIL) and loops:
receive up to --batch messages (claim_v1 takes up to --batch per call:
receiver_queue_size = --batch), acknowledge them in one call, until all
messages are consumed (a shared counter). A fresh subscription per run starts
at the earliest message; the figure is messages over the time from the start
signal to the last acknowledgement; the run fails unless every message was
consumed exactly once in total. The exclusive figure is one consumer of an
exclusive subscription running the same loop (fetch instead of claims; the
acknowledgement of a list is per message too).

The PostgreSQL reference is the classic work-queue loop on a plain table with
the same rows and consumer processes: per batch one transaction of
``SELECT id, payload FROM q ORDER BY id LIMIT --batch FOR UPDATE SKIP LOCKED``
then ``DELETE FROM q WHERE id = ANY(...)`` (claim while processing, delete
when done). txnq does the same work in two commits (claim, ack) because a
claim outlives its PostgreSQL transaction (leases, ack timeouts, nacks,
redelivery), and it keeps the log: nothing is deleted.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import uuid
from multiprocessing.synchronize import Barrier
from typing import Any

import psycopg

import txnq

PAYLOAD_BYTES = 100
PARTITIONS = 4
CONSUMER_COUNTS = (1, 2, 4, 8)
IDLE_LIMIT_SECONDS = 30.0

PLAIN_TABLE = """
CREATE TABLE IF NOT EXISTS txnq_bench_queue (
    id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    payload bytea NOT NULL
)
"""
PLAIN_FILL = "INSERT INTO txnq_bench_queue (payload) SELECT p FROM unnest(%b::bytea[]) AS p"
PLAIN_CLAIM = "SELECT id, payload FROM txnq_bench_queue ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED"
PLAIN_DELETE = "DELETE FROM txnq_bench_queue WHERE id = ANY(%s)"


def txnq_consumer(
    dsn: str,
    topic: str,
    subscription: str,
    batch: int,
    kind: str,
    barrier: Barrier,
    done: Any,
    out: Any,
) -> None:
    count = 0
    with txnq.Client(dsn) as client:
        consumer = client.subscribe(
            topic,
            subscription,
            kind,
            initial_position="earliest",
            receiver_queue_size=batch,
            poll_interval="100ms",
        )
        barrier.wait()
        last = time.perf_counter()
        while not finished(done, last):
            messages = consumer.batch_receive(max_messages=batch, timeout="200ms")
            if not messages:
                continue
            consumer.acknowledge(messages)
            count += len(messages)
            last = time.perf_counter()
            with done.get_lock():
                done.value -= len(messages)
        consumer.close()
    out.put((count, last))


def finished(done: Any, last: float) -> bool:
    """Everything is consumed, or nothing came for a long while (then run() fails)."""
    return bool(done.value <= 0) or time.perf_counter() - last > IDLE_LIMIT_SECONDS


def plain_consumer(dsn: str, batch: int, barrier: Barrier, done: Any, out: Any) -> None:
    count = 0
    with psycopg.connect(dsn, autocommit=True) as conn:
        barrier.wait()
        last = time.perf_counter()
        while not finished(done, last):
            with conn.transaction():
                rows = conn.execute(PLAIN_CLAIM, (batch,)).fetchall()
                if rows:
                    conn.execute(PLAIN_DELETE, ([r[0] for r in rows],))
            if not rows:
                time.sleep(0.01)
                continue
            count += len(rows)
            last = time.perf_counter()
            with done.get_lock():
                done.value -= len(rows)
    out.put((count, last))


def run(target: Any, args: tuple[Any, ...], consumers: int, expected: int) -> float:
    """Start ``consumers`` processes, release them together; messages per second."""
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(consumers + 1)
    done = ctx.Value("q", expected)  # messages still to consume
    out = ctx.Queue()
    processes = [
        ctx.Process(target=target, args=(*args, barrier, done, out)) for _ in range(consumers)
    ]
    for process in processes:
        process.start()
    barrier.wait(timeout=60)
    start = time.perf_counter()
    results = [out.get(timeout=600) for _ in processes]
    for process in processes:
        process.join(timeout=30)
    total = sum(r[0] for r in results)
    if total != expected:
        raise SystemExit(f"consumed {total} messages, expected {expected}")
    return total / (max(r[1] for r in results) - start)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", default=os.environ.get("TXNQ_DSN"))
    parser.add_argument("--messages", type=int, default=40_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument(
        "--consumers",
        default=",".join(map(str, CONSUMER_COUNTS)),
        help="consumer counts to measure, comma-separated (default 1,2,4,8)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        counts = [int(c) for c in args.consumers.split(",")]
    except ValueError:
        parser.error("--consumers takes counts such as 1,2,4,8")
    if args.messages < 1 or args.batch < 1 or not counts or min(counts) < 1:
        parser.error("--messages, --batch and every consumer count must be positive")

    client = txnq.Client(args.dsn)
    dsn = client.dsn
    topic = f"bench-shared-{uuid.uuid4().hex[:8]}"
    client.admin.create_topic(topic, partitions=PARTITIONS)
    data = [os.urandom(PAYLOAD_BYTES) for _ in range(args.messages)]
    with client.producer(topic, batching_max_messages=args.batch) as producer:
        for i, payload in enumerate(data):
            producer.send_async(payload, partition=i % PARTITIONS)
        producer.flush()

    results: dict[str, float] = {}
    results["txnq exclusive, 1 consumer"] = run(
        txnq_consumer, (dsn, topic, "bench-exclusive", args.batch, "exclusive"), 1, args.messages
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(PLAIN_TABLE)
        for consumers in counts:
            subscription = f"bench-{consumers}"
            results[f"txnq shared, {consumers} consumer(s)"] = run(
                txnq_consumer,
                (dsn, topic, subscription, args.batch, "shared"),
                consumers,
                args.messages,
            )
            conn.execute("TRUNCATE txnq_bench_queue")
            for start in range(0, len(data), 1000):
                conn.execute(PLAIN_FILL, (data[start : start + 1000],))
            conn.execute("VACUUM ANALYZE txnq_bench_queue")
            results[f"plain table SKIP LOCKED, {consumers} consumer(s)"] = run(
                plain_consumer, (dsn, args.batch), consumers, args.messages
            )
        conn.execute("DROP TABLE txnq_bench_queue")
    client.admin.delete_topic(topic)
    client.close()

    if args.json:
        print(json.dumps({"messages": args.messages, "batch": args.batch, "rates": results}))
        return 0
    server = psycopg.connect(dsn).info.server_version
    print(
        f"{args.messages} messages of {PAYLOAD_BYTES} bytes, {PARTITIONS} partitions, "
        f"batch {args.batch}, PostgreSQL {server // 10000}"
    )
    exclusive = results["txnq exclusive, 1 consumer"]
    print(f"txnq exclusive subscription, 1 consumer: {exclusive:,.0f} msg/s")
    print(f"{'consumers':>9} {'txnq shared msg/s':>18} {'plain table msg/s':>18} {'ratio':>7}")
    for consumers in counts:
        mine = results[f"txnq shared, {consumers} consumer(s)"]
        plain = results[f"plain table SKIP LOCKED, {consumers} consumer(s)"]
        print(f"{consumers:>9} {mine:>18,.0f} {plain:>18,.0f} {mine / plain:>7.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
