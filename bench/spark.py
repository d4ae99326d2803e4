"""Spark benchmark: reading a topic's committed range over JDBC next to a plain
JDBC read of the same rows from a plain table, measured in one run.

    python bench/spark.py [--dsn DSN] [--messages 200000] [--partitions 4]
                          [--batch 100] [--parallelism 4] [--repeat 3] [--json]

Without --dsn (and TXNQ_DSN) it uses the embedded PostgreSQL under ./.txnq
(over TCP, as Spark needs). Setup (not timed): a topic with --partitions
partitions gets --messages 100-byte messages in producer batches of --batch,
with keys and a property; the same rows (topic, partition, offset, batch
index, key, properties, payload, publish time) are copied into a plain table.

Reported, each the best of --repeat runs of ``count()`` after a full
materialisation (``.write.format("noop")``), same session, same parallelism:

1. ``txnq.spark.read_committed`` — the committed-range view, unpacking batch
   entries, with --parallelism JDBC predicates over (partition, offset ranges);
   and again with ``parse_properties=False`` (properties left as JSON text);
2. a plain ``spark.read.jdbc`` of the plain table with the same number of
   predicates over the same (partition, offset) ranges — the PostgreSQL + JDBC
   limit for the same rows in this run.

The ratio (1)/(2) is what txnq's visibility rules and batch unpacking cost.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid

import psycopg

import txnq
from txnq.spark import committed_range, jdbc_target, read_committed, spark_session
from txnq.spark.ranges import split

PLAIN_TABLE = """
CREATE UNLOGGED TABLE IF NOT EXISTS txnq_bench_spark_plain AS
SELECT topic, partition, entry_offset, batch_index, key, properties, payload, publish_time
  FROM txnq.committed_messages WHERE topic = %(topic)s
"""
PLAIN_INDEX = (
    "CREATE INDEX IF NOT EXISTS txnq_bench_spark_plain_key "
    "ON txnq_bench_spark_plain (partition, entry_offset)"
)


def fill(client: txnq.Client, topic: str, messages: int, batch: int) -> None:
    producer = client.producer(
        topic, name=f"bench-{uuid.uuid4().hex[:8]}", batching_max_messages=batch
    )
    payload = os.urandom(100)
    for i in range(messages):
        producer.send_async(payload, key=f"k{i % 1000}", properties={"i": str(i % 10)})
    producer.flush()
    producer.close()


def timed(frame_factory: object, repeat: int) -> tuple[float, int]:
    """Best seconds of ``repeat`` full reads, and the row count."""
    best = float("inf")
    rows = 0
    for _ in range(repeat):
        start = time.perf_counter()
        frame = frame_factory()  # type: ignore[operator]
        frame.write.format("noop").mode("overwrite").save()
        best = min(best, time.perf_counter() - start)
    rows = frame.count()
    return best, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("TXNQ_DSN"))
    parser.add_argument("--messages", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--parallelism", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    client = txnq.Client(args.dsn)
    dsn = client.dsn
    topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
    client.admin.create_topic(topic, partitions=args.partitions)
    print(f"filling {args.messages} messages into {topic} ...", file=sys.stderr)
    fill(client, topic, args.messages, args.batch)
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS txnq_bench_spark_plain")
        conn.execute(PLAIN_TABLE, {"topic": topic})
        conn.execute(PLAIN_INDEX)
        conn.execute("ANALYZE txnq_bench_spark_plain")
    fixed = committed_range(topic, client=client)

    spark = spark_session(
        "txnq-bench",
        f"local[{max(2, args.parallelism)}]",
        {"spark.sql.shuffle.partitions": str(args.parallelism)},
    )
    spark.sparkContext.setLogLevel("ERROR")
    target = jdbc_target(dsn)
    predicates = [
        f"partition = {p:d} AND entry_offset >= {lo:d} AND entry_offset < {hi:d}"
        for p, lo, hi in split(fixed, args.parallelism)
    ]

    def txnq_read() -> object:
        return read_committed(spark, topic, dsn=dsn, parallelism=args.parallelism)

    def txnq_read_json() -> object:
        return read_committed(
            spark, topic, dsn=dsn, parallelism=args.parallelism, parse_properties=False
        )

    def plain_read() -> object:
        return spark.read.jdbc(
            target.url,
            "txnq_bench_spark_plain",
            predicates=predicates,
            properties={**target.properties, "fetchsize": "2000"},
        )

    plain_read().count()  # warm the JVM, the JDBC driver and the caches alike
    txnq_seconds, txnq_rows = timed(txnq_read, args.repeat)
    json_seconds, _ = timed(txnq_read_json, args.repeat)
    plain_seconds, plain_rows = timed(plain_read, args.repeat)
    spark.stop()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS txnq_bench_spark_plain")
    client.admin.delete_topic(topic, force=True)
    client.close()

    result = {
        "messages": args.messages,
        "partitions": args.partitions,
        "batch": args.batch,
        "parallelism": args.parallelism,
        "read_committed_rows": txnq_rows,
        "read_committed_seconds": round(txnq_seconds, 3),
        "read_committed_rows_per_second": round(txnq_rows / txnq_seconds),
        "read_committed_json_properties_rows_per_second": round(txnq_rows / json_seconds),
        "plain_jdbc_rows": plain_rows,
        "plain_jdbc_seconds": round(plain_seconds, 3),
        "plain_jdbc_rows_per_second": round(plain_rows / plain_seconds),
        "ratio": round(plain_seconds / txnq_seconds, 3),
        "ratio_json_properties": round(plain_seconds / json_seconds, 3),
    }
    if args.json:
        print(json.dumps(result))
        return
    print(f"rows: {txnq_rows} (txnq) / {plain_rows} (plain table)")
    print(
        f"read_committed (view over JDBC): {result['read_committed_rows_per_second']:>10,} rows/s"
        f"  ({txnq_seconds:.2f} s)"
    )
    print(
        f"read_committed, JSON properties: "
        f"{result['read_committed_json_properties_rows_per_second']:>10,} rows/s"
        f"  ({json_seconds:.2f} s)"
    )
    print(
        f"plain JDBC read, plain table:    {result['plain_jdbc_rows_per_second']:>10,} rows/s"
        f"  ({plain_seconds:.2f} s)"
    )
    print(
        f"read_committed / plain JDBC:     {result['ratio']:.0%} "
        f"({result['ratio_json_properties']:.0%} with JSON properties)"
    )


if __name__ == "__main__":
    main()
