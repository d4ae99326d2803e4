"""One bad topic never stops background work for the others: TTL, retention,
the backlog quota check and GC process each topic (entry log) on its own, the
coordinators' marker phase each transaction and partition; what fails is
logged, counted in txnq_job_topic_failures_total{job, topic}, recorded in the
run's txnq.gc_runs row (`txnq gc history`) and in txnq.job_failure_status,
and forgotten once it works again.

The bad rows are written with plain SQL as the table owner (an older version,
or a hand edit, may have stored them; txnq's own functions refuse them).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest
from prometheus_client import CollectorRegistry
from psycopg import errors as pg_errors
from txnq.workers.coordinator import CoordinatorWorker
from txnq.workers.scheduler import _JobRunner
from txnq.workers.scheduler_jobs import Job, apply_retention, backlog_quota, expire_ttl
from typer.testing import CliRunner

import txnq
from tests.helpers import Login, receive_messages, sql, sql_value
from txnq import lifecycle
from txnq.cli import app
from txnq.database.migrate import upgrade
from txnq.lifecycle.backlog_quota import check_backlog_quotas
from txnq.metrics import JobMetrics, MetricsServer
from txnq.settings import load_settings

FAST = {"poll_interval": "200ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    # Ledgers of two entries, rolled at once: a few messages make several ledgers.
    upgrade(dsn, settings=load_settings(ledger_max_entries=2, ledger_min_rollover_seconds=0))
    with txnq.Client(dsn) as client:
        yield client


def two_topics(client: txnq.Client, dsn: str, **policy: Any) -> dict[str, txnq.Consumer]:
    """ "bad" (created first: its topic id is lower, so every job meets it
    first) and "good", same policy, four consumed-or-not messages each, aged
    by an hour; one exclusive subscription each (returned, by topic)."""
    readers = {}
    for name in ("bad", "good"):
        client.admin.create_topic(name, **policy)
        readers[name] = client.subscribe(name, "all", initial_position="earliest", **FAST)
        with client.producer(name) as producer:
            for i in range(4):
                producer.send(f"{name}{i}", partition=0)
    for table, column in (("entries", "publish_time"), ("ledgers", "closed_at")):
        sql(dsn, f"UPDATE txnq.{table} SET {column} = {column} - interval '1 hour'")
    return readers


def mark_delete(dsn: str, topic: str) -> int:
    return int(
        sql_value(
            dsn,
            "SELECT c.mark_delete_offset FROM txnq.cursors c JOIN txnq.topics t USING (topic_id)"
            " WHERE t.name = %s",
            (topic,),
        )
    )


def failing(dsn: str) -> list[tuple[Any, ...]]:
    return sql(
        dsn,
        "SELECT job, topic, partition, subject, failures FROM txnq.job_failure_status"
        " ORDER BY job, topic, partition, subject",
    )


def metric(registry: CollectorRegistry, job: str, topic: str) -> float | None:
    return registry.get_sample_value("txnq_job_topic_failures_total", {"job": job, "topic": topic})


def refuse_changes(dsn: str, table: str, topic: str) -> None:
    """Make every change of ``table``'s rows of ``topic`` fail: a trigger the
    table owner adds, standing for whatever a topic's rows may hold that its
    job cannot handle (since revision 0015 the lifecycle functions take even
    a NaN or infinite policy in their stride: they do nothing for it)."""
    sql(
        dsn,
        "CREATE OR REPLACE FUNCTION public.refuse_change() RETURNS trigger LANGUAGE plpgsql"
        " AS $$ BEGIN RAISE EXCEPTION 'this row cannot change' USING ERRCODE = '22023'; END $$",
    )
    topic_id = sql_value(dsn, "SELECT topic_id FROM txnq.topics WHERE name = %s", (topic,))
    sql(
        dsn,
        f"CREATE TRIGGER refuse_{table} BEFORE UPDATE ON txnq.{table} FOR EACH ROW"
        f" WHEN (OLD.topic_id = {int(topic_id)}) EXECUTE FUNCTION public.refuse_change()",
    )


def allow_changes(dsn: str, table: str) -> None:
    sql(dsn, f"DROP TRIGGER refuse_{table} ON txnq.{table}")


def test_a_topic_whose_ttl_fails_never_stops_ttl_for_the_others(
    client: txnq.Client, dsn: str
) -> None:
    two_topics(client, dsn, ttl="1m")
    refuse_changes(dsn, "cursors", "bad")

    report = lifecycle.expire_ttl(client)

    assert {i.topic for i in report.items} == {"good"}
    assert mark_delete(dsn, "good") == 3 and mark_delete(dsn, "bad") == -1
    [failure] = report.failures
    assert (failure.job, failure.topic, failure.partition) == ("ttl", "bad", None)
    assert "this row cannot change" in failure.error and failure.sqlstate == "22023"
    assert "ttl_seconds = 60.0" in failure.error  # a data exception: the policy is shown
    [run] = sql(dsn, "SELECT items, failures, details FROM txnq.gc_history WHERE job = 'ttl'")
    assert run[:2] == (1, 1)
    assert run[2]["failures"][0]["where"] == "topic 'bad'"
    assert failing(dsn) == [("ttl", "bad", None, None, 1)]

    lifecycle.expire_ttl(client)  # still failing: counted up, since the first time
    assert failing(dsn) == [("ttl", "bad", None, None, 2)]
    allow_changes(dsn, "cursors")  # fixed
    assert lifecycle.expire_ttl(client).failures == []
    assert mark_delete(dsn, "bad") == 3
    assert failing(dsn) == []


@pytest.mark.parametrize("bad_ttl", ["NaN", "Infinity", "1e300", "-5"])
def test_a_topic_with_a_nonsense_ttl_never_stops_ttl_for_the_others(
    client: txnq.Client, dsn: str, bad_ttl: str
) -> None:
    """A NaN, infinite or negative TTL (create_topic_v1 took them from SQL
    before revision 0015) expires nothing on its topic; the others expire."""
    two_topics(client, dsn, ttl="1m")
    sql(dsn, "UPDATE txnq.topics SET ttl_seconds = %s::float8 WHERE name = 'bad'", (bad_ttl,))
    report = lifecycle.expire_ttl(client)
    assert {i.topic for i in report.items} == {"good"}
    assert mark_delete(dsn, "bad") == -1


def test_a_topic_whose_retention_fails_never_stops_retention_for_the_others(
    client: txnq.Client, dsn: str
) -> None:
    readers = two_topics(client, dsn, retention="1s")
    for reader in readers.values():
        reader.acknowledge_cumulative(receive_messages(reader, 4)[-1])
    refuse_changes(dsn, "ledgers", "bad")

    report = lifecycle.apply_retention(client)

    assert {(i.topic, i.ledger_id) for i in report.items} == {("good", 0), ("good", 1)}
    assert [(f.topic, f.sqlstate) for f in report.failures] == [("bad", "22023")]
    assert "retention_seconds = 1.0, retention_bytes = 0" in report.failures[0].error
    assert failing(dsn) == [("retention", "bad", None, None, 1)]


def test_a_topic_whose_quota_check_fails_never_stops_the_check_for_the_others(
    client: txnq.Client, dsn: str
) -> None:
    two_topics(client, dsn, backlog_quota_size=10, backlog_quota_policy="consumer_backlog_eviction")
    refuse_changes(dsn, "cursors", "bad")  # eviction moves cursors

    report = check_backlog_quotas(client)

    assert [(b.topic, b.evicted_entries > 0) for b in report.items] == [("good", True)]
    assert [f.topic for f in report.failures] == ["bad"]
    assert failing(dsn) == [("backlog_quota", "bad", None, None, 1)]
    # A check of one topic replaces only that topic's record.
    check_backlog_quotas(client, "good")
    assert failing(dsn) == [("backlog_quota", "bad", None, None, 1)]


def test_an_entry_log_gc_cannot_handle_never_stops_gc_of_the_others(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    reader = client.subscribe("orders", "all", initial_position="earliest", **FAST)
    with client.producer("orders") as producer:
        for i in range(4):
            producer.send(f"m{i}")
    sql_value(dsn, "SELECT txnq.roll_entry_log_v1(true)")
    reader.acknowledge_cumulative(receive_messages(reader, 4)[-1])
    lifecycle.apply_retention(client)
    # A sealed entry log whose table is not an entry-log table (a hand edit).
    sql(
        dsn,
        "INSERT INTO txnq.entry_logs (entry_log_id, table_name, state, sealed_at)"
        " VALUES (0, 'not_an_entry_log', 'SEALED', now() - interval '1 day')",
    )

    report = lifecycle.collect_entry_logs(client, grace_seconds=0)

    assert [(i.entry_log_id, i.action) for i in report.items] == [(1, "dropped")]
    assert [(f.subject, f.topic) for f in report.failures] == [("entry log 0", None)]
    assert "unexpected table" in report.failures[0].error
    assert failing(dsn) == [("gc", None, None, "entry log 0", 1)]

    runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})
    history = runner.invoke(app, ["gc", "history", "--job", "gc", "--json", "--dsn", dsn])
    assert history.exit_code == 0, history.stderr
    [run] = json.loads(history.stdout)
    assert run["failures"] == 1 and run["details"]["failures"][0]["where"] == "entry log 0"
    table = runner.invoke(app, ["gc", "history", "--dsn", dsn])
    assert "Failures" in table.stdout
    now = runner.invoke(app, ["gc", "failures", "--dsn", dsn])
    assert now.exit_code == 1 and "entry log 0" in now.stdout
    gc_run = runner.invoke(app, ["gc", "run", "--dsn", dsn])
    assert gc_run.exit_code == 1 and "entry log 0" in gc_run.stdout, gc_run.stdout

    sql(dsn, "DELETE FROM txnq.entry_logs WHERE entry_log_id = 0")
    assert lifecycle.collect_entry_logs(client, grace_seconds=0).failures == []
    assert failing(dsn) == []
    assert runner.invoke(app, ["gc", "failures", "--dsn", dsn]).exit_code == 0


def test_the_scheduler_counts_a_failing_topic_per_job_and_topic(
    client: txnq.Client, dsn: str
) -> None:
    readers = two_topics(
        client,
        dsn,
        ttl="1m",
        retention="1s",
        backlog_quota_size=1,
        backlog_quota_policy="consumer_backlog_eviction",
    )
    for reader in readers.values():  # consumed up to offset 1: TTL and eviction have work
        reader.acknowledge_cumulative(receive_messages(reader, 2)[-1])
    refuse_changes(dsn, "cursors", "bad")
    refuse_changes(dsn, "ledgers", "bad")
    registry = CollectorRegistry()
    metrics = JobMetrics(registry)
    for job in (
        Job("expire_ttl", expire_ttl),
        Job("apply_retention", apply_retention),
        Job("backlog_quota", backlog_quota),
    ):
        metrics.declare(job.name)
        runner = _JobRunner(job, client, metrics)
        try:
            runner()
            runner()
        finally:
            runner.close()
        assert metric(registry, job.name, "bad") == 2
        assert metric(registry, job.name, "good") is None
        # The run itself succeeded: the good topic was processed.
        assert registry.get_sample_value("txnq_job_failures_total", {"job": job.name}) == 0
    assert [row[0] for row in failing(dsn)] == ["backlog_quota", "retention", "ttl"]


def test_a_transaction_whose_marker_phase_fails_on_one_partition_never_stops_the_others(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("broken", partitions=2)
    client.admin.create_topic("fine")
    transactions = []
    for topic, partitions in (("broken", (0, 1)), ("fine", (0,))):
        with client.producer(topic) as producer:
            txn = client.new_transaction()
            for partition in partitions:
                producer.send(f"{topic}{partition}", partition=partition, txn=txn)
            txn.commit(wait=False)  # decided; the coordinator writes the markers
            transactions.append(txn.txn_id)
    broken, fine = transactions
    head = (
        "FROM txnq.topics t WHERE p.topic_id = t.topic_id AND t.name = 'broken' AND p.partition = 0"
    )
    next_offset = sql_value(dsn, f"SELECT p.next_offset FROM txnq.partitions p, {head[5:]}")
    sql(dsn, f"UPDATE txnq.partitions p SET next_offset = 9223372036854775807 {head}")

    server = MetricsServer(dsn)  # not started: its registry only
    worker = CoordinatorWorker(dsn, poll_interval=0.2, grace_seconds=0.0, metrics=server)
    worker._connect()
    try:
        worker.rebalance()
        worker.work(grace=0.0)
        states = dict(sql(dsn, "SELECT id, state FROM txnq.transaction_status"))
        assert states[str(fine)] == "COMMITTED"
        assert states[str(broken)] == "COMMITTING"
        marked = sql(
            dsn,
            "SELECT partition, marker_offset IS NOT NULL FROM txnq.txn_partitions"
            " WHERE tc_id = %s AND txn_seq = %s ORDER BY partition",
            (broken.tc_id, broken.seq),
        )
        assert marked == [(0, False), (1, True)]  # the other partition is done
        assert failing(dsn) == [("marker_phase", "broken", 0, f"transaction {broken}", 1)]
        assert metric(server.registry, "marker_phase", "broken") == 1
        worker.work(grace=0.0)  # left out of the scans until its retry is due
        assert metric(server.registry, "marker_phase", "broken") == 1

        sql(dsn, f"UPDATE txnq.partitions p SET next_offset = %s {head}", (next_offset,))
        time.sleep(1.1)  # the first retry comes after a second
        worker.work(grace=0.0)
        assert (
            dict(sql(dsn, "SELECT id, state FROM txnq.transaction_status"))[str(broken)]
            == "COMMITTED"
        )
        assert failing(dsn) == []
    finally:
        worker._disconnect(reason="test over")


def test_the_worker_roles_record_failures_and_applications_cannot_touch_them(
    client: txnq.Client, dsn: str, make_login: Callable[..., Login]
) -> None:
    """Revision 0015's roles hold no table rights but those listed:
    grant_roles_v3 lets the scheduler and the coordinators write
    txnq.job_failures, the reader see it through the view, and nobody else."""
    two_topics(client, dsn, ttl="1m")
    refuse_changes(dsn, "cursors", "bad")
    with txnq.Client(make_login("txnq_scheduler").dsn) as scheduler:
        report = lifecycle.expire_ttl(scheduler)
    assert [f.topic for f in report.failures] == ["bad"]
    assert failing(dsn) == [("ttl", "bad", None, None, 1)]
    with psycopg.connect(make_login("txnq_worker").dsn, autocommit=True) as worker:
        worker.execute(
            "DELETE FROM txnq.job_failures WHERE job = 'marker_phase' AND subject = 'none'"
        )
    with psycopg.connect(make_login("txnq_reader").dsn, autocommit=True) as reader:
        assert reader.execute("SELECT job FROM txnq.job_failure_status").fetchall() == [("ttl",)]
    with psycopg.connect(make_login("txnq_client").dsn, autocommit=True) as app:
        for statement in ("SELECT * FROM txnq.job_failures", "DELETE FROM txnq.job_failures"):
            with pytest.raises(pg_errors.InsufficientPrivilege):
                app.execute(statement)
