"""The parts of txnq.spark that need no Spark: the two-phase-commit sink and
its recovery after an engine restart, committed ranges, and the JDBC
environment (URL, driver jar, Java check)."""

from __future__ import annotations

import time
from datetime import UTC, datetime

import pytest

import txnq
from tests.helpers import sql, sql_value
from txnq import errors
from txnq.spark import TwoPhaseCommitSink, committed_range, jdbc_target
from txnq.spark import environment as env


def committed_payloads(dsn: str, topic: str) -> list[bytes]:
    return [
        bytes(row[0])
        for row in sql(
            dsn,
            "SELECT payload FROM txnq.committed_messages WHERE topic = %s"
            " ORDER BY partition, entry_offset, batch_index",
            (topic,),
        )
    ]


def test_recovery_commits_what_the_checkpoint_completed_and_aborts_the_rest(dsn: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("out", partitions=2)
        engine = TwoPhaseCommitSink("out", "job-1.sink-0", client=client)
        assert engine.recover(None).committed == []
        first = engine.begin_transaction()
        for i in range(3):
            engine.send(first, f"c1-{i}", key=f"k{i}")
        engine.pre_commit(first, 1)
        second = engine.begin_transaction()
        engine.send(second, "c2")
        engine.pre_commit(second, 2)
        third = engine.begin_transaction()
        engine.send(third, "open")
        # Prepared is not visible: the engine's checkpoint has not completed.
        assert committed_payloads(dsn, "out") == []
        # The engine dies here; its checkpoint 1 had completed, 2 had not.

        restarted = TwoPhaseCommitSink("out", "job-1.sink-0", client=client)
        report = restarted.recover(1)
        assert report.committed == [(first.txn_id, 1)]
        assert sorted(report.aborted) == sorted([second.txn_id, third.txn_id])
        assert report.epoch > (engine.epoch or 0)
        assert sorted(committed_payloads(dsn, "out")) == [b"c1-0", b"c1-1", b"c1-2"]
        states = dict(
            ((tc, seq), state)
            for tc, seq, state in sql(dsn, "SELECT tc_id, txn_seq, state FROM txnq.transactions")
        )
        assert states[tuple(second.txn_id)] == "ABORTED"
        assert states[tuple(third.txn_id)] == "ABORTED"
        assert sql_value(dsn, "SELECT count(*) FROM txnq.sink_transactions") == 0

        # The old instance is a zombie now: it can commit nothing.
        with pytest.raises(errors.ProducerFencedError):
            engine.commit(second)
        with pytest.raises(errors.ProducerFencedError):
            engine.begin_transaction()
        assert sql_value(dsn, "SELECT count(*) FROM txnq.sink_transactions") == 0
        with pytest.raises((errors.ProducerFencedError, errors.TransactionEndedError)):
            engine.send(third, "late")
            engine.pre_commit(third, 3)

        # The new session goes on, and a repeated recovery changes nothing.
        fourth = restarted.begin_transaction()
        restarted.send(fourth, "c3")
        restarted.pre_commit(fourth, 3)
        restarted.commit(fourth)
        restarted.commit(fourth)  # idempotent
        assert sorted(committed_payloads(dsn, "out")) == [b"c1-0", b"c1-1", b"c1-2", b"c3"]
        again = TwoPhaseCommitSink("out", "job-1.sink-0", client=client).recover(3)
        assert again.committed == [] and again.aborted == []


def test_a_prepared_transaction_lost_to_its_timeout_is_reported_not_dropped(dsn: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("out")
        sink = TwoPhaseCommitSink("out", "short", client=client, transaction_timeout="1s")
        sink.recover(None)
        txn = sink.begin_transaction()
        sink.send(txn, "x")
        sink.pre_commit(txn, 7)
        time.sleep(1.2)
        sql(dsn, "SELECT * FROM txnq.abort_timed_out_v1()")  # what the scheduler does
        with pytest.raises(errors.PreparedTransactionLostError, match="checkpoint 7"):
            TwoPhaseCommitSink("out", "short", client=client).recover(7)
        assert committed_payloads(dsn, "out") == []


def test_the_sink_refuses_misuse_and_changes_nothing(dsn: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("out")
        sink = TwoPhaseCommitSink("out", "misuse", client=client)
        with pytest.raises(errors.TransactionError, match="recover"):
            sink.begin_transaction()
        with pytest.raises(errors.InvalidNameError):
            TwoPhaseCommitSink("out", "bad id", client=client)
        with pytest.raises(errors.TopicNotFoundError):
            TwoPhaseCommitSink("missing", "x", client=client)
        with pytest.raises(errors.InvalidArgumentError, match="TXN_MAX_TIMEOUT"):
            TwoPhaseCommitSink("out", "x", client=client, transaction_timeout="1d")
        sink.recover(None)
        txn = sink.begin_transaction()
        with pytest.raises(errors.TransactionEndedError):
            sink.commit(txn)  # not prepared
        with pytest.raises(errors.InvalidArgumentError):
            sink.pre_commit(txn, "1")  # type: ignore[arg-type]
        sink.abort(txn)
        sink.abort(txn)
        assert sql_value(dsn, "SELECT count(*) FROM txnq.sink_transactions") == 0
        assert committed_payloads(dsn, "out") == []


def test_committed_ranges_take_offsets_positions_and_times(dsn: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("t", partitions=2)
        producer = client.producer("t", name="p")
        for i in range(4):
            producer.send(f"a{i}", key="x")
        middle = datetime.now(UTC)
        time.sleep(0.01)
        for i in range(3):
            producer.send(f"b{i}", key="x")
        part = next(
            p
            for p in (0, 1)
            if sql_value(dsn, "SELECT next_offset FROM txnq.partitions WHERE partition = %s", (p,))
            > 0
        )
        other = 1 - part
        txn = client.new_transaction()
        producer.send("open", key="x", txn=txn)  # holds this partition's max read offset
        producer.send("after", key="x")

        whole = committed_range("t", client=client)
        assert whole.offsets == {part: (0, 7), other: (0, 0)}
        assert committed_range("t", {part: 5}, client=client).offsets[part] == (5, 7)
        assert committed_range("t", "earliest", {part: 2}, client=client).offsets[part] == (0, 2)
        assert committed_range("t", middle, client=client).offsets[part] == (4, 7)
        assert committed_range("t", "latest", client=client).empty
        txn.commit()
        assert committed_range("t", client=client).offsets[part] == (0, 10)
        with pytest.raises(errors.InvalidArgumentError):
            committed_range("t", "newest", client=client)
        with pytest.raises(errors.InvalidArgumentError, match="partitions"):
            committed_range("t", {5: 0}, client=client)
        with pytest.raises(errors.InvalidArgumentError, match="timezone"):
            committed_range("t", datetime.now(), client=client)


def test_jdbc_urls_come_from_dsns_and_sockets_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    target = jdbc_target("postgresql://alice:s3cret@127.0.0.1:5433/db?sslmode=disable")
    assert target.url == "jdbc:postgresql://127.0.0.1:5433/db"
    assert target.properties["user"] == "alice"
    assert target.properties["password"] == "s3cret"
    assert target.properties["driver"] == "org.postgresql.Driver"
    assert jdbc_target("host=10.0.0.1 port=6000 dbname=x user=bob").url == (
        "jdbc:postgresql://10.0.0.1:6000/x"
    )
    with pytest.raises(errors.SparkUnavailableError, match="TCP"):
        jdbc_target("host=/var/run/postgresql dbname=x")


def test_the_jdbc_jar_setting_overrides_and_a_wrong_path_is_explained(
    monkeypatch: pytest.MonkeyPatch, tmp_path: object
) -> None:
    monkeypatch.setenv("TXNQ_SPARK_JDBC_JAR", "/nonexistent/postgresql.jar")
    with pytest.raises(errors.SparkUnavailableError, match="TXNQ_SPARK_JDBC_JAR"):
        env.find_jdbc_jar()
    monkeypatch.delenv("TXNQ_SPARK_JDBC_JAR")
    monkeypatch.setattr(env, "JDBC_JAR_PLACES", ())
    assert env.find_jdbc_jar() is None
    assert env.jdbc_jar_config() == {"spark.jars.packages": "org.postgresql:postgresql:42.7.4"}


def test_java_older_than_17_is_refused_with_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(env, "java_version", lambda: 11)
    with pytest.raises(errors.SparkUnavailableError, match="Java 17"):
        env.check_java()
    monkeypatch.setattr(env, "java_version", lambda: None)
    with pytest.raises(errors.SparkUnavailableError, match="openjdk"):
        env.check_java()


def test_the_committed_view_unpacks_batches_and_hides_what_is_not_committed(dsn: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("t")
        producer = client.producer("t", name="p", batching_max_delay="1s")
        for i in range(3):
            producer.send_async(
                f"m{i}", key=f"k{i}" if i != 1 else None, properties={"i": str(i)} if i else None
            )
        producer.flush()  # one entry, three messages
        with client.new_transaction() as committed:
            producer.send("in-committed", txn=committed)
        aborted = client.new_transaction()
        producer.send("in-aborted", txn=aborted)
        aborted.abort()
        hanging = client.new_transaction()
        producer.send("in-open", txn=hanging)
        producer.send("after-open")  # above the max read offset until the open one ends

        rows = sql(
            dsn,
            "SELECT entry_offset, batch_index, batch_size, key, properties, payload, txn_id"
            " FROM txnq.committed_messages ORDER BY entry_offset, batch_index",
        )
        assert [(o, b, n) for o, b, n, *_ in rows] == [(0, 0, 3), (0, 1, 3), (0, 2, 3), (1, 0, 1)]
        assert [None if k is None else bytes(k) for _, _, _, k, *_ in rows] == [
            b"k0",
            None,
            b"k2",
            None,
        ]
        assert [r[4] for r in rows] == [None, {"i": "1"}, {"i": "2"}, None]
        assert [bytes(r[5]) for r in rows] == [b"m0", b"m1", b"m2", b"in-committed"]
        assert rows[3][6] == str(committed.txn_id) and rows[0][6] is None

        hanging.commit()
        payloads = [
            bytes(p)
            for (p,) in sql(
                dsn, "SELECT payload FROM txnq.committed_messages ORDER BY entry_offset"
            )
        ]
        assert payloads[-2:] == [b"in-open", b"after-open"]
        assert b"in-aborted" not in payloads
        # No marker is ever a row: every row is a message of a data entry.
        assert (
            sql_value(
                dsn,
                "SELECT count(*) FROM txnq.committed_messages m JOIN txnq.entries e"
                " ON e.topic_id = m.topic_id AND e.partition = m.partition"
                " AND e.entry_offset = m.entry_offset WHERE e.marker IS NOT NULL",
            )
            == 0
        )


def test_an_ingestion_runs_once_at_a_time_and_checks_its_input(dsn: str) -> None:
    from txnq.spark import ingest

    with txnq.Client(dsn) as client:
        client.admin.create_topic("t")

    def sink(frame: object, run: object) -> None:
        raise AssertionError("the sink must not run")

    import psycopg

    with psycopg.connect(dsn, autocommit=True) as holder:
        holder.execute(
            "SELECT pg_advisory_lock(hashtext('txnq.spark_ingestions'), hashtext('lake'))"
        )
        with pytest.raises(errors.IngestionBusyError, match="lake"):
            ingest(None, "t", "lake", sink, dsn=dsn)  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidNameError):
        ingest(None, "t", "no spaces", sink, dsn=dsn)  # type: ignore[arg-type]
    with pytest.raises(errors.InvalidArgumentError, match="callable"):
        ingest(None, "t", "lake", "parquet", dsn=dsn)  # type: ignore[arg-type]
    with pytest.raises(errors.TopicNotFoundError):
        ingest(None, "missing", "lake", sink, dsn=dsn)  # type: ignore[arg-type]
    assert sql_value(dsn, "SELECT count(*) FROM txnq.spark_ingestions") == 0
