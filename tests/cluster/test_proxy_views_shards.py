"""The rest of the inspection views through the proxy (sql/proxy/views_shards.sql,
docs/cluster.md): txnq.messages and txnq.committed_messages read each
partition on its owner, the views of what each shard keeps of its own (entry
logs, job failures, lifecycle runs, console samples and actions) are every
shard's rows, txnq_cluster.<view> the same with the shard, grants one row per
grant; `txnq gc history` / `gc failures` read them through the proxy
(transaction_status: test_proxy_txn_inspection.py)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

import txnq
from tests.cluster.conftest import Cluster
from txnq.cli import app
from txnq.cluster.setup import ROUTED_VIEWS, init, shard_of
from txnq.database.queries import QUERIES

#: Columns that move between two reads (ages count from now()).
MOVING = {"age_seconds", "failing_seconds", "oldest_unacked_age_seconds"}
#: The views each shard keeps of its own: every shard's rows through the proxy.
UNION_VIEWS = (
    "entry_log_status",
    "job_failure_status",
    "gc_history",
    "storage_history",
    "topic_history",
    "console_action_log",
)
#: Messages of partition p: p + 1 batches of 3 (keys, properties, event times).
BATCH = 3


@pytest.fixture(scope="module")
def views_cluster(cluster: Cluster) -> Iterator[tuple[str, list[str], int]]:
    """A cluster of its own on the same servers (databases ``views_cluster``),
    so whole views compare: a 4-partition topic with messages on every
    partition, and on each shard planted lifecycle runs, job failures, console
    samples and actions, and grants."""
    urls = [cluster.proxy, *cluster.shards]
    for url in urls:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP DATABASE IF EXISTS views_cluster")
            conn.execute("CREATE DATABASE views_cluster")
    proxy, *shards = (re.sub(r"/postgres$", "/views_cluster", url) for url in urls)
    init(proxy, shards)
    with txnq.Client(proxy) as client:
        topic = client.admin.create_topic("browsed", partitions=4)
        with client.producer("browsed", name="p") as producer:
            for partition in range(4):
                for batch in range(partition + 1):
                    for i in range(BATCH):
                        producer.send_async(
                            f"m{partition}-{batch}-{i}".encode(),
                            partition=partition,
                            key=f"k{i}",
                            properties={"batch": str(batch)},
                        )
                    producer.flush()
    for number, shard in enumerate(shards):
        with psycopg.connect(shard, autocommit=True) as conn:
            conn.execute(
                "INSERT INTO txnq.job_failures (job, topic_id, partition, subject, topic, error, "
                "sqlstate) VALUES ('retention', %s, -1, '', 'browsed', %s, '22023'), "
                "('gc', 0, -1, 'entry log 7', NULL, 'disk full', '53100')",
                (topic.topic_id, f"bad policy on shard {number}"),
            )
            conn.execute(
                "INSERT INTO txnq.gc_runs (job, started_at, items, bytes, details, failures) "
                "SELECT 'retention', now() - make_interval(secs => i), i, 100 * i, "
                "jsonb_build_object('shard', %s::int), 0 FROM generate_series(1, %s) i",
                (number, number + 2),
            )
            conn.execute("SELECT txnq.console_sample_v1(3600)")
            conn.execute(
                "SELECT txnq.console_record_action_v1('set_policy', 'browsed', "
                "jsonb_build_object('shard', %s::int), NULL)",
                (number,),
            )
            conn.execute(
                "SELECT txnq.grant_topic_permission_v1('postgres', 'browsed', false, "
                "ARRAY['produce'])"
            )
            if number == 1:  # a grant one shard lacks
                conn.execute(
                    "SELECT txnq.grant_topic_permission_v1('postgres', 'brow', true, "
                    "ARRAY['consume'])"
                )
    yield proxy, shards, topic.topic_id


def _read(dsn: str, query: str, params: Any = None) -> tuple[list[str], list[tuple[Any, ...]]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        cursor = conn.execute(query, params)
        assert cursor.description is not None
        return [c.name for c in cursor.description], [tuple(row) for row in cursor]


def _columns(dsn: str, view: str) -> str:
    names, _ = _read(dsn, f"SELECT * FROM txnq.{view} LIMIT 0")
    return ", ".join(name for name in names if name not in MOVING)


def _sorted(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return sorted(rows, key=repr)


def test_every_view_of_a_shard_answers_through_the_proxy(cluster: Cluster) -> None:
    _, on_shard = _read(
        cluster.shards[0], "SELECT viewname FROM pg_views WHERE schemaname = 'txnq'"
    )
    assert {row[0] for row in on_shard} - set(ROUTED_VIEWS) == set()
    # transaction_status's rows: tests/cluster/test_proxy_txn_inspection.py
    with cluster.proxy_conn() as conn:
        conn.execute("SELECT count(*) FROM txnq.transaction_status").fetchone()


def test_messages_come_from_each_partitions_owner(
    views_cluster: tuple[str, list[str], int],
) -> None:
    proxy, shards, topic_id = views_cluster
    owners = {p: shard_of(proxy, topic_id, p) for p in range(4)}
    assert set(owners.values()) == {0, 1}
    order = " ORDER BY partition, entry_offset, batch_index"
    for view, where, key in (
        ("messages", "topic = %s", "browsed"),
        ("committed_messages", "topic_id = %s", topic_id),
    ):
        columns, through_proxy = _read(
            proxy, f"SELECT * FROM txnq.{view} WHERE {where}{order}", (key,)
        )
        owned: list[tuple[Any, ...]] = []
        for partition, owner in owners.items():
            names, rows = _read(
                shards[owner],
                f"SELECT * FROM txnq.{view} WHERE {where} AND partition = %s{order}",
                (key, partition),
            )
            assert names == columns
            assert len(rows) == BATCH * (partition + 1), (view, partition)
            _, elsewhere = _read(
                shards[1 - owner],
                f"SELECT count(*) FROM txnq.{view} WHERE {where} AND partition = %s",
                (key, partition),
            )
            assert elsewhere == [(0,)]  # the other shard's head row is empty
            owned += rows
        assert through_proxy == owned, view
        # Without a WHERE: every topic's messages, the same ones here.
        _, everything = _read(proxy, f"SELECT * FROM txnq.{view}{order}")
        assert everything == owned, view
    # Keys, properties and batches cross as they are.
    _, first = _read(
        proxy,
        "SELECT key, properties, batch_index, batch_size, payload FROM txnq.committed_messages "
        "WHERE topic = 'browsed' AND partition = 3 AND entry_offset = 2 ORDER BY batch_index",
    )
    assert first == [
        (f"k{i}".encode(), {"batch": "2"}, i, BATCH, f"m3-2-{i}".encode()) for i in range(BATCH)
    ]


def test_a_where_on_topic_and_partition_picks_the_partitions_before_reading(
    views_cluster: tuple[str, list[str], int],
) -> None:
    proxy, shards, topic_id = views_cluster
    owner = shard_of(proxy, topic_id, 2)
    query = (
        "SELECT * FROM txnq.committed_messages WHERE topic_id = %s AND partition = 2 "
        "AND entry_offset >= 1 ORDER BY entry_offset, batch_index"
    )
    _, through_proxy = _read(proxy, query, (topic_id,))
    _, on_owner = _read(shards[owner], query, (topic_id,))
    assert through_proxy == on_owner and len(on_owner) == 2 * BATCH
    # The partition list is filtered before any partition is read; the offset
    # is filtered on the proxy (docs/cluster.md: the cost).
    _, plan = _read(proxy, "EXPLAIN " + query, (topic_id,))
    text = "\n".join(row[0] for row in plan)
    assert re.search(
        r"Function Scan on topic_partitions_on p .*\n\s*Filter: .*partition = 2", text
    ), text
    assert re.search(
        r"Function Scan on committed_messages_of m .*\n\s*Filter: .*entry_offset >= 1", text
    )
    # The offset bounds reach the shard through the functions themselves.
    _, ranged = _read(
        proxy,
        "SELECT * FROM txnq_cluster.committed_messages_of(%s, 2, 1, 1) ORDER BY batch_index",
        (topic_id,),
    )
    assert ranged == on_owner[:BATCH]
    _, ranged_all = _read(
        proxy,
        "SELECT * FROM txnq_cluster.messages_of(%s, 'browsed', 2, 2) ORDER BY batch_index",
        (topic_id,),
    )
    _, owner_all = _read(
        shards[owner],
        "SELECT * FROM txnq.messages WHERE topic = 'browsed' AND partition = 2 "
        "AND entry_offset >= 2 ORDER BY batch_index",
    )
    assert ranged_all == owner_all and len(owner_all) == BATCH


def test_each_shards_own_views_union_every_shards_rows(
    views_cluster: tuple[str, list[str], int],
) -> None:
    proxy, shards, _ = views_cluster
    for view in UNION_VIEWS:
        columns = _columns(shards[0], view)
        _, through_proxy = _read(proxy, f"SELECT {columns} FROM txnq.{view}")
        per_shard = [_read(shard, f"SELECT {columns} FROM txnq.{view}")[1] for shard in shards]
        assert all(per_shard), view  # every shard has some: the union is not trivial
        assert _sorted(through_proxy) == _sorted(per_shard[0] + per_shard[1]), view
        # txnq_cluster.<view>: the same rows, with the shard they come from.
        for number, rows in enumerate(per_shard):
            _, with_shard = _read(
                proxy, f"SELECT {columns} FROM txnq_cluster.{view} WHERE shard = %s", (number,)
            )
            assert _sorted(with_shard) == _sorted(rows), (view, number)
    _, failures = _read(
        proxy, "SELECT shard, error FROM txnq_cluster.job_failure_status ORDER BY 1, 2"
    )
    assert failures == [
        (0, "bad policy on shard 0"),
        (0, "disk full"),
        (1, "bad policy on shard 1"),
        (1, "disk full"),
    ]
    _, runs = _read(
        proxy, "SELECT shard, count(*) FROM txnq_cluster.gc_history GROUP BY 1 ORDER BY 1"
    )
    assert runs == [(0, 2), (1, 3)]


def test_grants_show_once_per_grant_any_shard_holds(
    views_cluster: tuple[str, list[str], int],
) -> None:
    proxy, shards, _ = views_cluster
    query = (
        "SELECT role, resource, kind, action, granted_by, granted_at, role_exists "
        "FROM txnq.topic_grants ORDER BY 2, 4"
    )
    _, through_proxy = _read(proxy, query)
    on_shards = [_read(shard, query)[1] for shard in shards]
    assert [row[:4] for row in through_proxy] == [
        ("postgres", "brow", "prefix", "consume"),  # shard 1 only
        ("postgres", "browsed", "topic", "produce"),
    ]
    # Given on each shard at its own moment: the earliest shows.
    assert through_proxy[0] == on_shards[1][0]
    assert through_proxy[1][5] == min(on_shards[0][0][5], on_shards[1][1][5])
    _, where = _read(
        proxy,
        "SELECT resource, array_agg(shard ORDER BY shard) FROM txnq_cluster.topic_grants "
        "GROUP BY 1 ORDER BY 1",
    )
    assert where == [("brow", [1]), ("browsed", [0, 1])]

    # `txnq topics permissions` (txnq.topic_permissions_v1) merges them the same way.
    runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})
    shown = runner.invoke(app, ["topics", "permissions", "--dsn", proxy, "--json"])
    assert shown.exit_code == 0, shown.output
    assert [
        (g["role"], g["resource"], g["kind"], g["action"], g["granted_at"])
        for g in json.loads(shown.stdout)
    ] == [(*row[:4], row[5].isoformat()) for row in through_proxy]
    one = runner.invoke(app, ["topics", "permissions", "browsed", "--dsn", proxy, "--json"])
    assert one.exit_code == 0, one.output
    assert len(json.loads(one.stdout)) == 2  # its own grant and the prefix's
    bad = runner.invoke(app, ["topics", "permissions", "bad name", "--dsn", proxy])
    assert bad.exit_code != 0 and "is not valid" in bad.output  # the shard's TQ005


def test_the_consoles_reads_of_the_histories_and_messages_run_through_the_proxy(
    views_cluster: tuple[str, list[str], int],
) -> None:
    proxy, shards, topic_id = views_cluster
    params = {"limit": 1000, "seconds": 3600, "topic": "browsed", "partition": 1, "offset": 1}
    with psycopg.connect(proxy, autocommit=True) as conn:
        read = {
            name: conn.execute(QUERIES[name], params).fetchall()
            for name in (
                "console_gc_history",
                "console_job_failures",
                "console_actions",
                "console_topic_history",
                "console_storage_history",
                "console_messages_from_offset",
            )
        }
        since = conn.execute(
            QUERIES["console_messages_from_time"], {**params, "time": "-infinity"}
        ).fetchall()
    assert [len(read[name]) for name in read] == [5, 4, 2, 2, 2, BATCH]
    with psycopg.connect(shards[shard_of(proxy, topic_id, 1)], autocommit=True) as owner:
        assert (
            read["console_messages_from_offset"]
            == owner.execute(QUERIES["console_messages_from_offset"], params).fetchall()
        )
    assert len(since) == 2 * BATCH


def test_gc_history_and_failures_through_the_proxy_show_the_shard(
    views_cluster: tuple[str, list[str], int],
) -> None:
    proxy, shards, _ = views_cluster
    runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})

    history = runner.invoke(app, ["gc", "history", "--dsn", proxy, "--json"])
    assert history.exit_code == 0, history.output
    runs = json.loads(history.stdout)
    assert sorted((r["shard"], r["details"]["shard"]) for r in runs) == [(0, 0)] * 2 + [(1, 1)] * 3
    started = [r["started_at"] for r in runs]
    assert started == sorted(started, reverse=True)  # newest first, over the shards
    limited = runner.invoke(app, ["gc", "history", "--dsn", proxy, "--job", "gc", "--json"])
    assert limited.exit_code == 0 and json.loads(limited.stdout) == []
    table = runner.invoke(app, ["gc", "history", "--dsn", proxy, "--limit", "3"])
    assert table.exit_code == 0, table.output
    assert "Shard" in table.stdout and table.stdout.count("retention") == 3

    failing = runner.invoke(app, ["gc", "failures", "--dsn", proxy, "--json"])
    assert failing.exit_code == 1, failing.output  # something is failing
    assert sorted((r["shard"], r["job"]) for r in json.loads(failing.stdout)) == [
        (0, "gc"),
        (0, "retention"),
        (1, "gc"),
        (1, "retention"),
    ]
    shown = runner.invoke(app, ["gc", "failures", "--dsn", proxy])
    assert (
        shown.exit_code == 1 and "Shard" in shown.stdout and "bad policy on shard 1" in shown.stdout
    )

    # On a shard directly: that shard's own, without a shard column.
    direct = runner.invoke(app, ["gc", "history", "--dsn", shards[1], "--json"])
    assert direct.exit_code == 0, direct.output
    assert [sorted(r) for r in json.loads(direct.stdout)][:1] == [
        sorted(
            [
                "run_id",
                "job",
                "dry_run",
                "started_at",
                "finished_at",
                "items",
                "bytes",
                "details",
                "failures",
            ]
        )
    ]
    assert len(json.loads(direct.stdout)) == 3
