"""Spark benchmark: reading a topic's committed range over JDBC next to a plain
JDBC read of the same rows from a plain table, measured in one run.

    python bench/spark.py [--dsn DSN] [--messages 1000000] [--partitions 4]
                          [--batch 100] [--properties 1] [--parallelism 4]
                          [--repeat 5] [--json]

Without --dsn (and TXNQ_DSN) it uses the embedded PostgreSQL under ./.txnq
(over TCP, as Spark needs). Setup (not timed): a topic with --partitions
partitions gets --messages 100-byte messages in producer batches of --batch,
with keys and --properties properties each; the same rows (topic, partition,
offset, batch index, key, properties, payload, publish time) are copied into
a plain table.

Reported: the three reads below, run --repeat rounds interleaved (each round
reads all three, in an order that rotates from round to round, so a change in
the machine's load hits all of them alike); each read is a full
materialisation (``.write.format("noop")``) of a DataFrame built inside the
timing, same session, same parallelism:

1. ``txnq.spark.read_committed`` with properties as a ``map<string,string>``
   (the default) — the committed-range view, batch entries unpacked, with
   --parallelism JDBC predicates over (partition, offset ranges);
2. the same with ``parse_properties=False`` (properties left as JSON text,
   as the plain table gives them);
3. a plain ``spark.read.jdbc`` of the plain table with the same number of
   predicates over the same (partition, offset) ranges — the PostgreSQL + JDBC
   limit for the same rows in this run.

Per read the best round (rows/s) and, for (1) and (2), the ratio to (3): the
median over the rounds of (3)'s time / its time in the same round, and the
ratio of the best times. The ratio is what txnq's visibility rules, batch
unpacking and (1) the map cost. Also each read's median CPU time of Spark's
tasks (from Spark's status store): on a loaded machine the steadiest figure
of the JVM side's cost, though without PostgreSQL's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

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


def fill(client: txnq.Client, topic: str, messages: int, batch: int, properties: int) -> None:
    producer = client.producer(
        topic, name=f"bench-{uuid.uuid4().hex[:8]}", batching_max_messages=batch
    )
    payload = os.urandom(100)
    for i in range(messages):
        producer.send_async(
            payload,
            key=f"k{i % 1000}",
            properties={f"p{j}" if j else "i": str((i + j) % 10) for j in range(properties)},
        )
    producer.flush()
    producer.close()


def task_cpu_seconds(spark: Any) -> float | None:
    """CPU seconds Spark's tasks spent so far, summed over every stage (the
    executors' own measure, unlike wall time barely moved by the machine's
    load; PostgreSQL's side is not in it). Read from Spark's status store
    through py4j, an internal API: None where it is not there."""
    try:
        context = spark.sparkContext
        jvm = context._jvm
        stages = (
            context._jsc.sc()
            .statusStore()
            .stageList(
                jvm.java.util.ArrayList(),
                False,
                False,
                context._gateway.new_array(jvm.double, 0),
                jvm.java.util.ArrayList(),
            )
        )
        nanoseconds = sum(stages.apply(i).executorCpuTime() for i in range(stages.length()))
        return float(nanoseconds) / 1e9
    except Exception:  # a figure we can do without
        return None


def timed_rounds(
    spark: Any, reads: dict[str, Callable[[], Any]], repeat: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, int]]:
    """Seconds and task CPU seconds of each read in each of ``repeat`` rounds
    (each round reads all, starting one further along each time), and each
    read's row count."""
    seconds: dict[str, list[float]] = {name: [] for name in reads}
    cpu: dict[str, list[float]] = {name: [] for name in reads}
    names = list(reads)
    for round_number in range(repeat):
        for name in names[round_number % len(names) :] + names[: round_number % len(names)]:
            cpu_before = task_cpu_seconds(spark)
            start = time.perf_counter()
            reads[name]().write.format("noop").mode("overwrite").save()
            seconds[name].append(time.perf_counter() - start)
            cpu_after = task_cpu_seconds(spark)
            if cpu_before is not None and cpu_after is not None:
                cpu[name].append(cpu_after - cpu_before)
    return seconds, cpu, {name: read().count() for name, read in reads.items()}


def ratios(seconds: dict[str, list[float]], name: str, reference: str) -> tuple[float, float]:
    """(median over the rounds of reference/name, best reference / best name)."""
    per_round = [ref / own for ref, own in zip(seconds[reference], seconds[name], strict=True)]
    return statistics.median(per_round), min(seconds[reference]) / min(seconds[name])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("TXNQ_DSN"))
    parser.add_argument("--messages", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--properties", type=int, default=1, help="properties per message")
    parser.add_argument("--parallelism", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    client = txnq.Client(args.dsn)
    dsn = client.dsn
    topic = f"bench-spark-{uuid.uuid4().hex[:8]}"
    client.admin.create_topic(topic, partitions=args.partitions)
    print(f"filling {args.messages} messages into {topic} ...", file=sys.stderr)
    fill(client, topic, args.messages, args.batch, args.properties)
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

    def plain_read() -> Any:
        return spark.read.jdbc(
            target.url,
            "txnq_bench_spark_plain",
            predicates=predicates,
            properties={**target.properties, "fetchsize": "2000"},
        )

    reads: dict[str, Callable[[], Any]] = {
        "map": lambda: read_committed(spark, topic, dsn=dsn, parallelism=args.parallelism),
        "json": lambda: read_committed(
            spark, topic, dsn=dsn, parallelism=args.parallelism, parse_properties=False
        ),
        "plain": plain_read,
    }
    for read in reads.values():  # warm the JVM, the JDBC driver and the caches alike
        read().count()
    seconds, cpu, rows = timed_rounds(spark, reads, args.repeat)
    spark.stop()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS txnq_bench_spark_plain")
    client.admin.delete_topic(topic, force=True)
    client.close()

    best = {name: min(times) for name, times in seconds.items()}
    map_ratio, map_ratio_best = ratios(seconds, "map", "plain")
    json_ratio, json_ratio_best = ratios(seconds, "json", "plain")
    cpu_median = {name: statistics.median(t) if t else None for name, t in cpu.items()}
    result = {
        "messages": args.messages,
        "partitions": args.partitions,
        "batch": args.batch,
        "properties": args.properties,
        "parallelism": args.parallelism,
        "repeat": args.repeat,
        "read_committed_rows": rows["map"],
        "read_committed_seconds": round(best["map"], 3),
        "read_committed_rows_per_second": round(rows["map"] / best["map"]),
        "read_committed_json_properties_rows_per_second": round(rows["json"] / best["json"]),
        "plain_jdbc_rows": rows["plain"],
        "plain_jdbc_seconds": round(best["plain"], 3),
        "plain_jdbc_rows_per_second": round(rows["plain"] / best["plain"]),
        "ratio": round(map_ratio, 3),
        "ratio_best": round(map_ratio_best, 3),
        "ratio_json_properties": round(json_ratio, 3),
        "ratio_json_properties_best": round(json_ratio_best, 3),
        "seconds": {name: [round(t, 3) for t in times] for name, times in seconds.items()},
        "task_cpu_seconds_median": {
            name: None if t is None else round(t, 3) for name, t in cpu_median.items()
        },
    }
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"rows: {rows['map']} (txnq) / {rows['plain']} (plain table); "
        f"{args.repeat} interleaved rounds, best round shown"
    )
    print(
        f"read_committed, properties as map: {result['read_committed_rows_per_second']:>10,} rows/s"
        f"  ({best['map']:.2f} s)  {map_ratio:.0%} of plain (median of rounds; "
        f"best/best {map_ratio_best:.0%})"
    )
    print(
        f"read_committed, JSON properties:   "
        f"{result['read_committed_json_properties_rows_per_second']:>10,} rows/s"
        f"  ({best['json']:.2f} s)  {json_ratio:.0%} of plain (median of rounds; "
        f"best/best {json_ratio_best:.0%})"
    )
    print(
        f"plain JDBC read, plain table:      {result['plain_jdbc_rows_per_second']:>10,} rows/s"
        f"  ({best['plain']:.2f} s)"
    )
    map_cpu, plain_cpu = cpu_median["map"], cpu_median["plain"]
    if map_cpu and plain_cpu:
        print(
            "Spark task CPU, median of rounds:  "
            + ", ".join(f"{name} {t or 0:.3f} s" for name, t in cpu_median.items())
            + f"  (plain / map {plain_cpu / map_cpu:.0%}; PostgreSQL's CPU not included)"
        )


if __name__ == "__main__":
    main()
