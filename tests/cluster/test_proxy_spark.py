"""Spark through a cluster's proxy: committed ranges read on every shard in
parallel, incremental ingestion exactly once (also after a run that died
between the shards), writes refused (docs/cluster.md, "Spark").

The user points txnq.spark at the proxy's DSN, unchanged. The tests share the
two-shard cluster of conftest.py and the SparkSession of tests/spark_support.py
(they skip, naming what to install, without Java 17+, the JDBC jar or PySpark).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

import txnq
from tests.cluster.conftest import Cluster
from tests.spark_support import spark  # noqa: F401  (the session fixture)
from txnq import errors
from txnq.spark import (
    TwoPhaseCommitSink,
    committed_range,
    drop_ingestion,
    ingest,
    ingestion_offsets,
    list_ingestions,
    parquet_sink,
    read_committed,
    write_dataframe,
)
from txnq.spark import ingestion as ingest_module
from txnq.spark.datasource import RangePiece, TxnqReader, TxnqStreamReader

PARTITIONS = 4
Ids = Counter[tuple[int, int, int]]


def port_of(dsn: str | None) -> int:
    assert dsn is not None
    return int(conninfo_to_dict(dsn)["port"] or 5432)


def owners(cluster: Cluster, topic_id: int) -> dict[int, int]:
    """partition -> shard, by the proxy's route."""
    with cluster.proxy_conn() as conn:
        return {
            int(p): int(shard)
            for p, shard in conn.execute(
                "SELECT p, txnq_cluster.shard_of(%s, p) FROM generate_series(0, %s) p",
                (topic_id, PARTITIONS - 1),
            )
        }


def committed_ids(cluster: Cluster, topic: str) -> Ids:
    """(partition, offset, batch_index) of every committed message, from every
    shard's own view (a partition's messages are on its owner only)."""
    ids: Ids = Counter()
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            ids.update(
                conn.execute(
                    "SELECT partition, entry_offset, batch_index FROM txnq.committed_messages"
                    " WHERE topic = %s",
                    (topic,),
                ).fetchall()
            )
    return ids


def frame_ids(frame: Any) -> Ids:
    return Counter(
        (r["partition"], r["offset"], r["batch_index"])
        for r in frame.select("partition", "offset", "batch_index").collect()
    )


def produce(client: txnq.Client, topic: str, tag: str, count: int = 40) -> None:
    """Through the proxy: one entry per message (offsets count messages),
    round the partitions."""
    producer = client.producer(topic, name=f"load-{tag}")
    for i in range(count):
        producer.send(f"{tag}-{i}", partition=i % PARTITIONS)
    producer.close()


def jdbc_urls(frame: Any) -> list[tuple[str, int]]:
    """The JDBC relations of a DataFrame's plan: (URL, number of pieces)."""
    leaves = frame._jdf.queryExecution().analyzed().collectLeaves()
    found = []
    for i in range(leaves.size()):
        relation = leaves.apply(i).relation()
        found.append((str(relation.jdbcOptions().url()), len(relation.parts())))
    return found


def test_the_shard_map_gives_locations_only(cluster: Cluster) -> None:
    with cluster.proxy_conn() as conn:
        rows = conn.execute("SELECT * FROM txnq.cluster_shard_map_v1(7, 4)").fetchall()
        names = [
            c.name
            for c in conn.execute("SELECT * FROM txnq.cluster_shard_map_v1(7, 0)").description or []
        ]
        with pytest.raises(psycopg.Error, match="partition count") as raised:
            conn.execute("SELECT * FROM txnq.cluster_shard_map_v1(7, -1)")
        assert raised.value.sqlstate == "TQ005"
    assert names == ["partition", "shard", "host", "hostaddr", "port", "dbname"]
    assert [r[0] for r in rows] == [0, 1, 2, 3]
    for partition, shard, host, _hostaddr, port, dbname in rows:
        assert port == str(port_of(cluster.shards[shard])), partition
        assert host == conninfo_to_dict(cluster.shards[shard])["host"]
        assert dbname == conninfo_to_dict(cluster.shards[shard])["dbname"]


def test_read_committed_through_the_proxy_reads_every_partition_on_its_shard(
    spark: Any,  # noqa: F811
    cluster: Cluster,
    topic_name: Callable[[str], str],
) -> None:
    topic = topic_name("spark-read")
    with txnq.Client(cluster.proxy) as client:
        info = client.admin.create_topic(topic, partitions=PARTITIONS)
        produce(client, topic, "a", 40)
        middle = datetime.now(UTC)
        produce(client, topic, "b", 40)
    placed = owners(cluster, info.topic_id)
    # A start time: each partition's first offset at or after it, from its owner.
    since = committed_range(topic, start=middle, dsn=cluster.proxy)
    assert since.offsets == dict.fromkeys(range(PARTITIONS), (10, 20))
    assert set(placed.values()) == {0, 1}  # partitions on both shards
    # A transaction open on partition 0's shard holds that partition back:
    # its message is not committed, nor anything after it there.
    with txnq.Client(cluster.shards[placed[0]]) as direct:
        hanging = direct.new_transaction(timeout="10m")
        direct.producer(topic, name="hang").send("open", partition=0, txn=hanging)
        direct.producer(topic, name="later").send("behind the open one", partition=0)
        try:
            expected = committed_ids(cluster, topic)
            fixed = committed_range(topic, dsn=cluster.proxy)
            frame = read_committed(spark, topic, dsn=cluster.proxy, parallelism=4)
            assert frame_ids(frame) == expected
            assert sum(expected.values()) == 80 and max(expected.values()) == 1
            assert fixed.offsets[0][1] == 20  # the open transaction's entry and the next wait
            # One JDBC relation per shard, at the shard's own address: the
            # proxy carries no message (its committed_messages would bring
            # every row through PL/Proxy as text).
            urls = dict(jdbc_urls(frame))
            assert {int(u.rsplit(":", 1)[1].split("/")[0]) for u in urls} == {
                port_of(d) for d in cluster.shards
            }
            assert port_of(cluster.proxy) not in {
                int(u.rsplit(":", 1)[1].split("/")[0]) for u in urls
            }
            assert sum(urls.values()) >= 4
            assert "Union" in str(frame._jdf.queryExecution().executedPlan().toString())
            # The Python data source: each piece at its partition's shard.
            reader = TxnqReader({"dsn": cluster.proxy, "path": topic})
            pieces = reader.partitions()
            assert {(p.partition, port_of(p.dsn)) for p in pieces if isinstance(p, RangePiece)} == {
                (p, port_of(cluster.shards[s])) for p, s in placed.items()
            }
            source = spark.read.format("txnq").option("dsn", cluster.proxy).load(topic)
            assert frame_ids(source) == expected
        finally:
            hanging.commit()
    # An empty range reads nothing, on a shard (the proxy has no messages).
    assert read_committed(spark, topic, "latest", dsn=cluster.proxy).count() == 0
    # Plain SQL through the proxy: one partition's messages from its owner.
    rows = 0
    for partition, shard in placed.items():
        query = "SELECT entry_offset FROM txnq.read_committed_v1(%s, %s, 0, 100)"
        with cluster.proxy_conn() as proxy, cluster.shard_conn(shard) as owner:
            through = proxy.execute(query, (info.topic_id, partition)).fetchall()
            assert through == owner.execute(query, (info.topic_id, partition)).fetchall()
            rows += len(through)
    assert rows == 82  # the open transaction committed meanwhile
    # After the commit a new range has everything, the same way.
    after = read_committed(spark, topic, dsn=cluster.proxy)
    assert frame_ids(after) == committed_ids(cluster, topic)
    assert sum(frame_ids(after).values()) == 82


def test_a_stream_through_the_proxy_reads_each_message_once_on_its_shard(
    spark: Any,  # noqa: F811
    cluster: Cluster,
    topic_name: Callable[[str], str],
    tmp_path: Path,
) -> None:
    topic = topic_name("spark-stream")
    output, checkpoint = str(tmp_path / "out"), str(tmp_path / "checkpoint")

    def run_stream() -> None:
        query = (
            spark.readStream.format("txnq")
            .option("dsn", cluster.proxy)
            .option("topic", topic)
            .load()
            .writeStream.format("parquet")
            .option("checkpointLocation", checkpoint)
            .trigger(availableNow=True)
            .start(output)
        )
        query.awaitTermination(120)
        assert query.exception() is None

    with txnq.Client(cluster.proxy) as client:
        info = client.admin.create_topic(topic, partitions=PARTITIONS)
        produce(client, topic, "first")
        run_stream()
        produce(client, topic, "second")
        run_stream()  # from the checkpoint's offsets
    streamed = frame_ids(spark.read.parquet(output))
    assert streamed == committed_ids(cluster, topic) and max(streamed.values()) == 1
    assert sum(streamed.values()) == 80
    placed = owners(cluster, info.topic_id)
    reader = TxnqStreamReader({"dsn": cluster.proxy, "path": topic})
    pieces = reader.partitions({}, reader.latestOffset())
    assert {(p.partition, port_of(p.dsn)) for p in pieces if isinstance(p, RangePiece)} == {
        (p, port_of(cluster.shards[s])) for p, s in placed.items()
    }


class Crash(Exception):
    """Stands for the driver dying at a failpoint."""


def shard_rows(cluster: Cluster, name: str) -> list[Any]:
    rows = []
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            rows.append(
                conn.execute(
                    "SELECT committed_run, committed_offsets, planned_run, planned_offsets"
                    " FROM txnq.spark_ingestions WHERE name = %s",
                    (name,),
                ).fetchone()
            )
    return rows


def test_ingestion_through_the_proxy_reads_each_message_once_also_after_a_failed_run(
    spark: Any,  # noqa: F811
    cluster: Cluster,
    topic_name: Callable[[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = topic_name("spark-ingest")
    name = topic_name("lake")
    out = str(tmp_path / "lake")
    sink = parquet_sink(out)
    proxy = cluster.proxy
    with txnq.Client(proxy) as client:
        info = client.admin.create_topic(topic, partitions=PARTITIONS)
        placed = owners(cluster, info.topic_id)
        produce(client, topic, "one")
        first = ingest(spark, topic, name, sink, dsn=proxy)
        assert (first.run, first.replayed) == (1, False)
        assert sum(frame_ids(spark.read.parquet(out)).values()) == 40

        produce(client, topic, "two")
        second = ingest(spark, topic, name, sink, dsn=proxy)
        assert second.run == 2
        assert {p: e - s for p, (s, e) in second.range.offsets.items()} == dict.fromkeys(
            range(PARTITIONS), 10
        )  # only the new ones

        # Each shard keeps the offsets of the partitions it owns, -1 elsewhere.
        for shard, (run, offsets, planned_run, _) in enumerate(shard_rows(cluster, name)):
            assert run == 2 and planned_run is None
            assert offsets == [19 if placed[p] == shard else -1 for p in range(PARTITIONS)]
        assert ingestion_offsets(name, dsn=proxy)["committed_offsets"] == dict.fromkeys(  # type: ignore[index]
            range(PARTITIONS), 19
        )

        # The driver dies after the sink, before the commit.
        produce(client, topic, "three")

        def crash(place: str) -> None:
            if place == "spark_ingest_after_sink":
                raise Crash(place)

        monkeypatch.setattr(ingest_module, "failpoint", crash)
        with pytest.raises(Crash):
            ingest(spark, topic, name, sink, dsn=proxy)
        monkeypatch.setattr(ingest_module, "failpoint", lambda place: None)
        pending = ingestion_offsets(name, dsn=proxy)
        assert pending is not None and pending["planned_run"] == 3
        assert pending["planned_offsets"] == dict.fromkeys(range(PARTITIONS), 29)
        produce(client, topic, "late")  # not in the replay
        replay = ingest(spark, topic, name, sink, dsn=proxy)
        assert (replay.run, replay.replayed) == (3, True)
        assert replay.range.ends() == dict.fromkeys(range(PARTITIONS), 30)

        final = ingest(spark, topic, name, sink, dsn=proxy)
        assert (final.run, final.replayed) == (4, False)
        assert ingest(spark, topic, name, sink, dsn=proxy).range.empty

    lake = frame_ids(spark.read.parquet(out))
    assert lake == committed_ids(cluster, topic) and max(lake.values()) == 1
    assert sum(lake.values()) == 160
    (listed,) = [i for i in list_ingestions(dsn=proxy) if i["name"] == name]
    assert listed["topic"] == topic and listed["committed_run"] == 5
    assert listed["committed_offsets"] == dict.fromkeys(range(PARTITIONS), 39)
    assert drop_ingestion(name, dsn=proxy)
    assert ingestion_offsets(name, dsn=proxy) is None
    assert shard_rows(cluster, name) == [None, None]


def test_a_run_that_died_between_the_shards_is_settled_by_the_next(
    spark: Any,  # noqa: F811
    cluster: Cluster,
    topic_name: Callable[[str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    topic = topic_name("spark-settle")
    name = topic_name("lake")
    out = str(tmp_path / "lake")
    sink = parquet_sink(out)
    proxy = cluster.proxy
    with txnq.Client(proxy) as client:
        info = client.admin.create_topic(topic, partitions=PARTITIONS)
        placed = owners(cluster, info.topic_id)
        produce(client, topic, "one")
        ingest(spark, topic, name, sink, dsn=proxy)

        # Run 2 planned and written, then committed on shard 0 only: the
        # driver died between the shards' commits. The sink returned, so the
        # next run finishes the commit and does not repeat run 2.
        produce(client, topic, "two")
        monkeypatch.setattr(
            ingest_module,
            "failpoint",
            lambda place: (
                (_ for _ in ()).throw(Crash(place)) if place == "spark_ingest_after_sink" else None
            ),
        )
        with pytest.raises(Crash):
            ingest(spark, topic, name, sink, dsn=proxy)
        monkeypatch.setattr(ingest_module, "failpoint", lambda place: None)
        with cluster.shard_conn(0) as conn:
            conn.execute("SELECT txnq.spark_ingestion_commit_v1(%s, 2)", (name,))
        assert [r[0] for r in shard_rows(cluster, name)] == [2, 1]
        merged = ingestion_offsets(name, dsn=proxy)
        assert merged is not None
        assert (merged["committed_run"], merged["planned_run"]) == (2, None)
        assert merged["committed_offsets"] == dict.fromkeys(range(PARTITIONS), 19)
        produce(client, topic, "three")
        third = ingest(spark, topic, name, sink, dsn=proxy)
        assert (third.run, third.replayed) == (3, False)
        assert third.range.offsets == dict.fromkeys(range(PARTITIONS), (20, 30))

        # Run 4 planned on shard 0 only (the driver died between the shards'
        # plans, before the sink): the next run plans the other shard's
        # partitions empty and repeats shard 0's range under run 4.
        produce(client, topic, "four")
        with cluster.shard_conn(0) as conn:
            planned = [39 if placed[p] == 0 else -1 for p in range(PARTITIONS)]
            conn.execute("SELECT txnq.spark_ingestion_plan_v1(%s, %s)", (name, planned))
        merged = ingestion_offsets(name, dsn=proxy)
        assert merged is not None and merged["planned_run"] == 4
        assert merged["planned_offsets"] == {
            p: 39 if placed[p] == 0 else 29 for p in range(PARTITIONS)
        }
        fourth = ingest(spark, topic, name, sink, dsn=proxy)
        assert (fourth.run, fourth.replayed) == (4, True)
        assert fourth.range.offsets == {
            p: (30, 40) if placed[p] == 0 else (30, 30) for p in range(PARTITIONS)
        }
        fifth = ingest(spark, topic, name, sink, dsn=proxy)
        assert (fifth.run, fifth.replayed) == (5, False)
        assert fifth.range.offsets == {
            p: (40, 40) if placed[p] == 0 else (30, 40) for p in range(PARTITIONS)
        }
        assert [r[0] for r in shard_rows(cluster, name)] == [5, 5]

    lake = frame_ids(spark.read.parquet(out))
    assert lake == committed_ids(cluster, topic) and max(lake.values()) == 1
    assert sum(lake.values()) == 160


def test_writes_through_the_proxy_are_refused_before_anything_starts(
    spark: Any,  # noqa: F811
    cluster: Cluster,
    topic_name: Callable[[str], str],
) -> None:
    topic = topic_name("spark-write")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(topic, partitions=2)
    with pytest.raises(errors.NotSupportedThroughProxyError, match="not routed across shards yet"):
        TwoPhaseCommitSink(topic, "job.sink-0", dsn=cluster.proxy)
    frame = spark.createDataFrame([("a",), ("b",)], "value string")
    with pytest.raises(Exception, match="through a txnq cluster proxy is not supported yet"):
        write_dataframe(frame, topic, dsn=cluster.proxy)
    assert committed_ids(cluster, topic) == Counter()
