"""Spark reads committed ranges exactly once and writes topics atomically.

These tests share one local SparkSession (tests/spark_support.py) and skip,
naming what to install, where Java 17+, the JDBC jar or PySpark is missing.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import txnq
from tests.helpers import sql, sql_value
from tests.spark_support import spark  # noqa: F401  (the session fixture)
from txnq.spark import (
    committed_range,
    ingest,
    ingestion_offsets,
    list_ingestions,
    parquet_sink,
    read_committed,
    write_dataframe,
)
from txnq.spark import ingestion as ingest_module
from txnq.spark.read import COLUMNS, PROPERTIES_AS_MAP, read_range


def committed_ids(dsn: str, topic: str) -> Counter[tuple[int, int, int]]:
    """(partition, offset, batch_index) of every committed message, from plain SQL."""
    return Counter(
        (p, o, b)
        for p, o, b in sql(
            dsn,
            "SELECT partition, entry_offset, batch_index FROM txnq.committed_messages"
            " WHERE topic = %s",
            (topic,),
        )
    )


def frame_ids(frame: Any) -> Counter[tuple[int, int, int]]:
    return Counter(
        (r["partition"], r["offset"], r["batch_index"])
        for r in frame.select("partition", "offset", "batch_index").collect()
    )


def produce_with_transactions(client: txnq.Client, topic: str, rounds: int, tag: str) -> None:
    """Plain sends, a committed and an aborted transaction per round."""
    producer = client.producer(topic, name=f"load-{tag}", batching_max_delay="1ms")
    for i in range(rounds):
        for j in range(5):
            producer.send_async(f"{tag}-{i}-{j}", key=f"k{j}")
        producer.flush()
        with client.new_transaction() as txn:
            producer.send(f"{tag}-{i}-committed", key=f"k{i}", txn=txn)
        aborted = client.new_transaction()
        producer.send(f"{tag}-{i}-aborted", key=f"k{i + 1}", txn=aborted)
        aborted.abort()
    producer.close()


def test_read_committed_is_one_consistent_range_while_producers_and_transactions_run(
    spark: Any,  # noqa: F811
    dsn: str,
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=3)
        produce_with_transactions(client, "orders", 6, "before")
        hanging = client.new_transaction(timeout="10m")  # holds one partition back
        client.producer("orders", name="hang").send("open", key="k2", txn=hanging)

        fixed = committed_range("orders", dsn=dsn)
        expected = committed_ids(dsn, "orders")
        assert sum(expected.values()) > 0

        stop = threading.Event()
        deadline = time.monotonic() + 20

        def keep_producing() -> None:
            with txnq.Client(dsn) as other:
                for round_number in range(40):
                    if stop.is_set() or time.monotonic() > deadline:
                        return
                    produce_with_transactions(other, "orders", 1, f"during{round_number}")

        producer_thread = threading.Thread(target=keep_producing)
        producer_thread.start()
        try:
            rows = read_range(spark, fixed, dsn, parallelism=5).collect()
            hanging.commit()  # the held-back partition moves on mid-read
            second = frame_ids(read_range(spark, fixed, dsn, parallelism=2))
        finally:
            stop.set()
            producer_thread.join()

        first = Counter((r["partition"], r["offset"], r["batch_index"]) for r in rows)
        assert first == expected  # every committed message once, nothing more
        assert second == first  # the range reads the same however and whenever it is read
        payloads = [bytes(r["payload"]) for r in rows]
        assert not any(b"aborted" in p for p in payloads)
        assert b"open" not in payloads  # was open when the range was fixed
        assert all(r["topic"] == "orders" for r in rows)
        committed = [r for r in rows if bytes(r["payload"]).endswith(b"committed")]
        assert committed and all(r["txn_id"] for r in committed)
        assert all(r["txn_id"] is None for r in rows if b"committed" not in bytes(r["payload"]))

        # A fresh read fixes a new range: everything committed by now.
        latest = read_committed(spark, "orders", dsn=dsn)
        assert frame_ids(latest) == committed_ids(dsn, "orders")
        assert b"open" in {bytes(r["payload"]) for r in latest.select("payload").collect()}
        tail = read_committed(spark, "orders", start={0: 3, 1: 3, 2: 3}, end="latest", dsn=dsn)
        assert all(r["offset"] >= 3 for r in tail.select("offset").collect())


ODD_PROPERTIES: list[dict[str, str] | None] = [
    {"i": "5"},
    {'quote"': "back\\slash", "ctl\x01\t": "é 😀\n", "": ""},
    {"a": "1", "b": "2", "c": '{"x": "y"}'},
    {"k": 'v", "w": "x'},  # looks like two properties in the JSON text
    None,
]


def test_properties_come_out_of_read_committed_as_the_producer_sent_them(
    spark: Any,  # noqa: F811
    dsn: str,
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("props", partitions=1)
        with client.producer("props", name="props", batching_max_messages=10) as producer:
            for i, properties in enumerate(ODD_PROPERTIES * 3):
                producer.send_async(f"m{i}", properties=properties)
            producer.flush()
    expected = [p or None for p in ODD_PROPERTIES * 3]

    rows = read_committed(spark, "props", dsn=dsn).orderBy("offset", "batch_index").collect()
    assert [r["properties"] for r in rows] == expected
    as_text = read_committed(spark, "props", dsn=dsn, parse_properties=False)
    texts = [r["properties"] for r in as_text.orderBy("offset", "batch_index").collect()]
    assert [None if t is None else json.loads(t) for t in texts] == expected


def test_the_properties_map_reads_any_json_as_from_json_did(spark: Any) -> None:  # noqa: F811
    # Rows written by raw SQL before revision 0015 validated properties may
    # hold any JSON: the map keeps from_json's answers (NULL for a non-object,
    # JSON text for a non-string value). The texts near the one-property fast
    # path's shape {"K": "V"} must take the general path and agree too.
    texts = [
        '{"n": 1, "o": {"x": "y"}, "l": [1, "2"], "z": null}',
        "[1, 2]",
        '"s"',
        "{}",
        None,
        '{"a": "b"}',
        '{"": ""}',
        '{"k": "v é, }"}',
        '{"a": 1, "b": "c"}',
        '{"a": {"b": "c"}}',
        '{"a": ["b", "c"]}',
        '{"a": "b", "c": "d"}',
        '{"a": "b\\"c"}',
        '{"a\\u0001": "\\n"}',
    ]
    frame = spark.createDataFrame([(t,) for t in texts], "properties string")
    rows = frame.selectExpr(
        f"{PROPERTIES_AS_MAP} AS now", "from_json(properties, 'map<string,string>') AS before"
    ).collect()
    assert [r["now"] for r in rows] == [r["before"] for r in rows]
    assert rows[0]["now"] == {"n": "1", "o": '{"x":"y"}', "l": '[1,"2"]', "z": None}
    assert [r["now"] for r in rows[5:8]] == [{"a": "b"}, {"": ""}, {"k": "v é, }"}]
    assert rows[12]["now"] == {"a": 'b"c'} and rows[13]["now"] == {"a\x01": "\n"}


class Crash(Exception):
    """Stands for the driver dying at a failpoint."""


def test_ingest_after_a_crash_at_every_point_has_no_duplicates_and_no_gaps(
    spark: Any,  # noqa: F811
    dsn: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out = str(tmp_path / "orders")
    sink = parquet_sink(out)

    def crash_at(name: str) -> None:
        def failpoint(place: str) -> None:
            if place == name:
                raise Crash(place)

        monkeypatch.setattr(ingest_module, "failpoint", failpoint)

    def half_then_crash(frame: Any, run: ingest_module.IngestRun) -> None:
        # The driver dies while the sink writes: part of the run is there.
        sink(frame.limit(2), run)
        raise Crash("during sink")

    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2)
        runs = []
        for step, crash in enumerate(
            ["spark_ingest_after_plan", "during_sink", "spark_ingest_after_sink", None]
        ):
            produce_with_transactions(client, "orders", 2, f"step{step}")
            if crash is None:
                runs.append(ingest(spark, "orders", "lake", sink, dsn=dsn))
                continue
            if crash == "during_sink":
                with pytest.raises(Crash):
                    ingest(spark, "orders", "lake", half_then_crash, dsn=dsn)
            else:
                crash_at(crash)
                with pytest.raises(Crash):
                    ingest(spark, "orders", "lake", sink, dsn=dsn)
                monkeypatch.setattr(ingest_module, "failpoint", lambda place: None)
            pending = ingestion_offsets("lake", dsn=dsn)
            assert pending is not None and pending["planned_run"] == step + 1
            produce_with_transactions(client, "orders", 1, f"late{step}")  # not in the replay
            replay = ingest(spark, "orders", "lake", sink, dsn=dsn)
            assert replay.replayed and replay.run == step + 1
            runs.append(replay)
        final = ingest(spark, "orders", "lake", sink, dsn=dsn)
        assert not final.replayed and final.run == 5
        empty = ingest(spark, "orders", "lake", sink, dsn=dsn)
        assert empty.range.empty

    lake = spark.read.parquet(out)
    assert frame_ids(lake) == committed_ids(dsn, "orders")  # each once: no duplicates, no gaps
    assert max(frame_ids(lake).values()) == 1
    state = sql(dsn, "SELECT committed_run, planned_run FROM txnq.spark_ingestions")
    assert state == [(6, None)]
    (listed,) = list_ingestions(dsn=dsn)
    assert listed["name"] == "lake" and listed["topic"] == "orders"
    assert listed["committed_offsets"] == {
        p: o - 1 for p, o in committed_range("orders", dsn=dsn).ends().items()
    }


def test_the_data_source_reads_batches_and_streams_exactly_once(
    spark: Any,  # noqa: F811
    dsn: str,
    tmp_path: Path,
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("events", partitions=2)
        produce_with_transactions(client, "events", 3, "first")
        batch = spark.read.format("txnq").option("dsn", dsn).load("events")
        assert batch.columns == list(COLUMNS)
        assert read_committed(spark, "events", dsn=dsn).columns == list(COLUMNS)
        assert frame_ids(batch) == committed_ids(dsn, "events")
        one = batch.where("partition = 0").orderBy("offset").first()
        assert one is not None and one["properties"] is None and one["key"] is not None

        checkpoint = str(tmp_path / "checkpoint")
        output = str(tmp_path / "stream")

        def run_stream() -> None:
            query = (
                spark.readStream.format("txnq")
                .option("dsn", dsn)
                .option("topic", "events")
                .load()
                .writeStream.format("parquet")
                .option("checkpointLocation", checkpoint)
                .trigger(availableNow=True)
                .start(output)
            )
            query.awaitTermination(120)
            assert query.exception() is None

        hanging = client.new_transaction(timeout="10m")
        client.producer("events", name="hang").send("late", key="k1", txn=hanging)
        produce_with_transactions(client, "events", 1, "held")  # behind the open one
        run_stream()  # stops at each partition's max read offset
        assert frame_ids(spark.read.parquet(output)) == committed_ids(dsn, "events")
        hanging.commit()
        produce_with_transactions(client, "events", 2, "second")
        run_stream()  # restarts from the checkpoint's offsets

    streamed = frame_ids(spark.read.parquet(output))
    assert streamed == committed_ids(dsn, "events")
    assert max(streamed.values()) == 1


def test_a_dataframe_lands_in_a_topic_with_all_rows_or_none(
    spark: Any,  # noqa: F811
    dsn: str,
) -> None:
    from pyspark.sql import functions as F

    with txnq.Client(dsn) as client:
        client.admin.create_topic("landing", partitions=3)
    rows = spark.range(0, 600, numPartitions=3).select(
        F.concat(F.lit("v"), F.col("id").cast("string")).alias("value"),
        F.concat(F.lit("k"), (F.col("id") % 7).cast("string")).alias("key"),
        F.create_map(F.lit("n"), F.col("id").cast("string")).alias("properties"),
    )
    write_dataframe(rows, "landing", dsn=dsn, transactional_id="etl-landing")
    landed = sql(dsn, "SELECT payload, txn_id, properties->>'n' FROM txnq.committed_messages")
    assert sorted(bytes(p) for p, _, _ in landed) == sorted(f"v{i}".encode() for i in range(600))
    assert len({txn for _, txn, _ in landed}) == 1 and landed[0][1] is not None
    assert all(bytes(p) == f"v{n}".encode() for p, _, n in landed)

    def fail_on(value):  # type: ignore[no-untyped-def]  (Spark reads hints as pandas UDFs)
        if value == "w590":
            raise ValueError("a bad row")
        return value

    fail_late = F.udf(fail_on, "string")

    failing = spark.range(0, 600, numPartitions=3).select(
        fail_late(F.concat(F.lit("w"), F.col("id").cast("string"))).alias("value")
    )
    with pytest.raises(Exception, match="bad row"):
        write_dataframe(failing, "landing", dsn=dsn, transactional_id="etl-landing")
    assert sql_value(dsn, "SELECT count(*) FROM txnq.committed_messages") == 600
    assert sql_value(dsn, "SELECT count(*) FROM txnq.sink_transactions") == 0
    # What the failed job's tasks appended stays in an aborted transaction.
    assert sql_value(dsn, "SELECT count(*) FROM txnq.transactions WHERE state = 'ABORTED'") >= 1
