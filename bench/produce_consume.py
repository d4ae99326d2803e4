"""Produce/consume benchmark: txnq next to what PostgreSQL itself can do, in one run.

    python bench/produce_consume.py [--dsn DSN] [--messages 200000] [--single 2000] [--json]

Without --dsn (and TXNQ_DSN) it uses the embedded PostgreSQL under ./.txnq.
Messages are 100 bytes; the topic has 4 partitions. Reported, each as a rate
and as a ratio to its PostgreSQL reference measured in the same run:

- raw COPY of equivalent rows, 1000 rows per transaction (the ceiling);
- raw batched INSERT (1000 rows per autocommit statement) vs txnq batched produce
  (send_async + flush; one entry per partition batch)          target >= 50%;
- raw single-row autocommit INSERT vs txnq sync send()           target >= 70%;
- txnq consume (receive every message, cumulative ack every 1000)  target >= 150,000 msg/s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from typing import Any

import psycopg

import txnq

PAYLOAD_BYTES = 100
PARTITIONS = 4
CHUNK = 1000

RAW_TABLE = """
CREATE TABLE IF NOT EXISTS txnq_bench_raw (
    partition    integer NOT NULL,
    seq          bigint NOT NULL,
    publish_time timestamptz NOT NULL DEFAULT now(),
    payload      bytea NOT NULL,
    PRIMARY KEY (partition, seq)
)
"""
RAW_INSERT_BATCH = """
INSERT INTO txnq_bench_raw (partition, seq, payload)
SELECT %(partition)s, %(first)s + i - 1, p
  FROM unnest(%(payloads)b::bytea[]) WITH ORDINALITY AS u(p, i)
"""
RAW_INSERT_ONE = "INSERT INTO txnq_bench_raw (partition, seq, payload) VALUES (%s, %s, %b)"
RAW_COPY = "COPY txnq_bench_raw (partition, seq, payload) FROM STDIN (FORMAT BINARY)"


def payloads(n: int) -> list[bytes]:
    return [os.urandom(PAYLOAD_BYTES) for _ in range(min(n, 4096))]


def raw_copy(conn: psycopg.Connection[Any], n: int, data: list[bytes]) -> float:
    conn.execute("TRUNCATE txnq_bench_raw")
    start = time.perf_counter()
    seq = 0
    while seq < n:
        with conn.transaction(), conn.cursor() as cur, cur.copy(RAW_COPY) as copy:
            copy.set_types(["int4", "int8", "bytea"])
            for i in range(seq, min(seq + CHUNK, n)):
                copy.write_row((i % PARTITIONS, i, data[i % len(data)]))
        seq += CHUNK
    return n / (time.perf_counter() - start)


def raw_insert_batched(
    conn: psycopg.Connection[Any], n: int, data: list[bytes], chunk: int = CHUNK
) -> float:
    """``chunk`` rows per autocommit ``INSERT ... SELECT unnest()``; msgs/s."""
    conn.execute("TRUNCATE txnq_bench_raw")
    start = time.perf_counter()
    seq = 0
    while seq < n:
        rows = [data[i % len(data)] for i in range(seq, min(seq + chunk, n))]
        conn.execute(
            RAW_INSERT_BATCH,
            {"partition": (seq // chunk) % PARTITIONS, "first": seq, "payloads": rows},
        )
        seq += chunk
    return n / (time.perf_counter() - start)


def raw_insert_single(conn: psycopg.Connection[Any], n: int, data: list[bytes]) -> float:
    conn.execute("TRUNCATE txnq_bench_raw")
    start = time.perf_counter()
    for i in range(n):
        conn.execute(RAW_INSERT_ONE, (i % PARTITIONS, i, data[i % len(data)]))
    return n / (time.perf_counter() - start)


def txnq_produce_batched(client: txnq.Client, topic: str, n: int, data: list[bytes]) -> float:
    with client.producer(topic, batching_max_messages=CHUNK, batching_max_delay="10ms") as producer:
        start = time.perf_counter()
        for i in range(n):
            producer.send_async(data[i % len(data)])
        producer.flush()
        return n / (time.perf_counter() - start)


def txnq_send_single(client: txnq.Client, topic: str, n: int, data: list[bytes]) -> float:
    with client.producer(topic) as producer:
        start = time.perf_counter()
        for i in range(n):
            producer.send(data[i % len(data)])
        return n / (time.perf_counter() - start)


def txnq_consume(client: txnq.Client, topic: str, n: int) -> float:
    consumer = client.subscribe(
        topic,
        f"bench-{uuid.uuid4().hex[:8]}",
        initial_position="earliest",
        receiver_queue_size=20_000,
    )
    received = 0
    payload_bytes = 0  # each payload is read, as bench.peers' PgQ loop reads each event's
    last: dict[int, txnq.Message] = {}
    start = time.perf_counter()
    deadline = time.monotonic() + 300
    while received < n and time.monotonic() < deadline:
        for message in consumer.batch_receive(CHUNK, timeout=5):
            payload_bytes += len(message.value)
            last[message.partition] = message
            received += 1
        for message in last.values():
            consumer.acknowledge_cumulative(message)
        last.clear()
    elapsed = time.perf_counter() - start
    consumer.close()
    if received < n:
        raise SystemExit(f"consume: received only {received} of {n} messages")
    return received / elapsed


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", default=os.environ.get("TXNQ_DSN"))
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--single", type=int, default=2_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    client = txnq.Client(args.dsn)
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    client.admin.create_topic(topic, partitions=PARTITIONS)
    data = payloads(args.messages)
    with psycopg.connect(txnq.database.connections.libpq_dsn(client.dsn), autocommit=True) as conn:
        version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
        conn.execute(RAW_TABLE)
        copy_rate = raw_copy(conn, args.messages, data)
        insert_rate = raw_insert_batched(conn, args.messages, data)
        batched_rate = txnq_produce_batched(client, topic, args.messages, data)
        raw_single = raw_insert_single(conn, args.single, data)
        single_rate = txnq_send_single(client, topic, args.single, data)
        consume_rate = txnq_consume(client, topic, args.messages + args.single)
        conn.execute("DROP TABLE txnq_bench_raw")
    client.admin.delete_topic(topic, force=True)
    client.close()

    results = [
        ("raw COPY (1000 rows/txn)", copy_rate, None, None),
        ("raw batched INSERT (1000 rows/stmt)", insert_rate, None, None),
        ("txnq batched produce", batched_rate, batched_rate / insert_rate, 0.5),
        ("raw single-row commit", raw_single, None, None),
        ("txnq sync send", single_rate, single_rate / raw_single, 0.7),
        ("txnq consume + cumulative ack", consume_rate, None, None),
    ]
    consume_ok = consume_rate >= 150_000
    if args.json:
        print(
            json.dumps(
                {
                    "server_version": version,
                    "messages": args.messages,
                    "single": args.single,
                    "results": [
                        {"name": r[0], "msgs_per_s": round(r[1]), "ratio": r[2], "target": r[3]}
                        for r in results
                    ],
                    "consume_target_met": consume_ok,
                },
                indent=2,
            )
        )
        return 0
    print(
        f"PostgreSQL {version}; {args.messages} x {PAYLOAD_BYTES}-byte messages, "
        f"{PARTITIONS} partitions; {args.single} single sends"
    )
    print(f"{'measurement':40} {'msgs/s':>12} {'ratio':>8} {'target':>8}")
    for name, rate, ratio, target in results:
        ratio_text = f"{ratio:.0%}" if ratio is not None else ""
        target_text = f">={target:.0%}" if target is not None else ""
        print(f"{name:40} {rate:12,.0f} {ratio_text:>8} {target_text:>8}")
    print(f"consume target >= 150,000 msgs/s: {'met' if consume_ok else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
