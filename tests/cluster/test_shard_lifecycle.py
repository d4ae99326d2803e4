"""The lifecycle on every shard (docs/cluster.md, operators): TTL, retention,
GC, vacuum and history purge are scheduler jobs run against each shard's own
DSN (`txnq worker scheduler --dsn <shard>` per shard). A job on a shard acts on
the partitions that shard owns, and the proxy's views show the result, each
partition once."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from txnq.workers.scheduler_jobs import JOBS, JobContext
from typer.testing import CliRunner

import txnq
from tests.cluster.conftest import Cluster
from tests.helpers import receive_messages
from txnq.cli import app
from txnq.cluster.setup import init, partition_dsn, scheduler_commands, shard_of, status
from txnq.database.migrate import upgrade
from txnq.settings import load_settings

#: The scheduler's lifecycle jobs, run once on each shard.
LIFECYCLE_JOBS = (
    "expire_ttl",
    "apply_retention",
    "collect_entry_logs",
    "vacuum_hot_tables",
    "purge_history",
    "backlog_quota",
)


@pytest.fixture(scope="module")
def small_ledgers(cluster: Cluster) -> Iterator[tuple[str, list[str]]]:
    """A cluster of its own on the same servers (databases ``life_cluster``),
    its shards rolling a ledger every two entries, so a few sends make ledgers
    that retention can delete."""
    urls = [cluster.proxy, *cluster.shards]
    for url in urls:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS life_cluster")
            conn.execute("CREATE DATABASE life_cluster")
    proxy, *shards = (re.sub(r"/postgres$", "/life_cluster", url) for url in urls)
    init(proxy, shards)
    for shard in shards:
        upgrade(shard, settings=load_settings(ledger_max_entries=2, ledger_min_rollover_seconds=0))
    yield proxy, shards


def _run_jobs(shard: str, names: tuple[str, ...]) -> dict[str, str | None]:
    jobs = {job.name: job for job in JOBS}
    with txnq.Client(shard) as client:
        context = JobContext(client)
        return {name: jobs[name].run(context) for name in names}


def _query(dsn: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(query, params)
        return [tuple(row) for row in cursor] if cursor.description else []


def test_ttl_and_retention_jobs_run_per_shard_on_the_partitions_it_owns(
    small_ledgers: tuple[str, list[str]],
) -> None:
    proxy, shards = small_ledgers
    with txnq.Client(proxy) as client:
        kept = client.admin.create_topic("kept", partitions=2)  # retention 0: once consumed
        expiring = client.admin.create_topic("expiring", partitions=2, ttl="1h")
        reader = client.subscribe("kept", "all", initial_position="earliest", poll_interval="200ms")
        client.subscribe("expiring", "lagging", initial_position="earliest").close()
        for topic in ("kept", "expiring"):
            with client.producer(topic, name=f"p-{topic}") as producer:
                for partition in range(2):
                    for i in range(5):  # one entry each: ledgers [0, 1] [2, 3] closed, [4] open
                        producer.send(f"m{i}", partition=partition)
        last: dict[int, txnq.Message] = {}
        for message in receive_messages(reader, 10):
            last[message.partition] = message
        for message in last.values():
            reader.acknowledge_cumulative(message)
        reader.close()
    owners = {p: shard_of(proxy, kept.topic_id, p) for p in range(2)}
    assert set(owners.values()) == {0, 1}  # one partition on each shard
    for shard in shards:  # the expiring topic's messages, two hours old
        _query(
            shard,
            "UPDATE txnq.entries SET publish_time = publish_time - interval '2 hours' "
            "WHERE topic_id = %s",
            expiring.topic_id,
        )

    # The shards as `txnq cluster schedulers` gives them to each scheduler.
    commands = scheduler_commands(proxy)
    assert [argv[:4] for _, _, argv in commands] == [["txnq", "worker", "scheduler", "--dsn"]] * 2
    assert [s.last_lifecycle_run for s in status(proxy)] == [None, None]
    outcomes = [_run_jobs(dsn, LIFECYCLE_JOBS) for _, dsn, _ in commands]
    # `txnq cluster status` shows each shard's lifecycle: a run, no failure.
    shown = status(proxy)
    assert all(s.last_lifecycle_run is not None and s.job_failures == 0 for s in shown), shown

    for shard, outcome in zip(shards, outcomes, strict=True):
        # Each shard deleted the two consumed (or expired), closed ledgers of
        # each topic's partition it owns...
        assert outcome["apply_retention"] == "deleted 4 ledger(s) of 2 topic(s), 16 bytes"
        assert outcome["expire_ttl"] == "expired 5 entries on 1 cursor(s)"
        states = _query(
            shard,
            "SELECT partition, state, count(*) FROM txnq.ledgers WHERE topic_id = %s "
            "GROUP BY 1, 2 ORDER BY 1, 2",
            kept.topic_id,
        )
        [owned] = [p for p, owner in owners.items() if owner == shards.index(shard)]
        # ... and of the other's only the empty open ledger of its head row.
        expected = {(owned, "DELETED", 2), (owned, "OPEN", 1), (1 - owned, "OPEN", 1)}
        assert set(states) == expected
    with psycopg.connect(proxy, autocommit=True) as conn:
        partitions = conn.execute(
            "SELECT partition, next_offset, live_ledgers, live_entries, live_first_offset "
            "FROM txnq.partition_status WHERE topic_id = %s ORDER BY partition",
            (kept.topic_id,),
        ).fetchall()
        topic = conn.execute(
            "SELECT entries_written, live_entries, live_messages FROM txnq.topic_status "
            "WHERE topic_id = %s",
            (kept.topic_id,),
        ).fetchall()
        expired = conn.execute(
            "SELECT partition, mark_delete_offset, lag_entries FROM txnq.cursor_status "
            "WHERE topic_id = %s ORDER BY partition",
            (expiring.topic_id,),
        ).fetchall()
        ledgers = conn.execute(
            "SELECT partition, state, count(*) FROM txnq.ledger_status WHERE topic_id = %s "
            "GROUP BY 1, 2 ORDER BY 1, 2",
            (kept.topic_id,),
        ).fetchall()
        backlog = conn.execute(
            "SELECT backlog_messages FROM txnq.subscription_status WHERE topic_id = %s",
            (expiring.topic_id,),
        ).fetchall()
    assert partitions == [(0, 5, 1, 1, 4), (1, 5, 1, 1, 4)]
    assert topic == [(10, 2, 2)]
    assert expired == [(0, 4, 0), (1, 4, 0)]
    assert backlog == [(0,)]
    # Each partition's ledgers once, from its owner.
    assert ledgers == [(0, "DELETED", 2), (0, "OPEN", 1), (1, "DELETED", 2), (1, "OPEN", 1)]
    with txnq.Client(proxy) as client:
        described = client.admin.describe_topic("kept")
    assert [p.earliest_offset for p in described.partitions] == [4, 4]


def test_the_cli_prints_one_scheduler_per_shard(small_ledgers: tuple[str, list[str]]) -> None:
    proxy, shards = small_ledgers
    runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})

    shown = runner.invoke(
        app, ["cluster", "schedulers", "--dsn", proxy, "--metrics-port", "9100", "--json"]
    )
    assert shown.exit_code == 0, shown.output
    listed = json.loads(shown.stdout)
    assert [(s["shard"], s["command"][-2:]) for s in listed] == [
        (0, ["--metrics-port", "9100"]),
        (1, ["--metrics-port", "9101"]),
    ]
    assert [s["dsn"] for s in listed] == [partition_dsn(dsn) for dsn in shards]
    text = runner.invoke(app, ["cluster", "schedulers", "--dsn", proxy])
    assert text.exit_code == 0, text.output
    lines = text.stdout.strip().splitlines()
    assert [shlex.split(line) for line in lines] == [s["command"][:5] for s in listed]
