"""The inspection views through the proxy (sql/proxy/views.sql,
docs/cluster.md): the columns of a shard's views, each partition's and each
cursor's row from the shard that owns the partition, topic and subscription
counts added up over the shards."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

import txnq
from tests.cluster.conftest import Cluster
from tests.helpers import receive_messages
from txnq.cluster.setup import ROUTED_VIEWS, init, shard_of
from txnq.database.queries import QUERIES

#: Columns compared between the proxy's row and the owner's (ages move).
PARTITION_COLUMNS = (
    "topic, topic_id, partition, next_offset, high_watermark, max_read_offset, ongoing_txns, "
    "open_ledger_id, open_ledger_opened_at, live_ledgers, live_entries, live_messages, live_bytes, "
    "live_first_offset, last_publish_time"
)
CURSOR_COLUMNS = (
    "topic, topic_id, subscription, subscription_id, partition, mark_delete_offset, "
    "readable_offset, lag_entries, individual_acks"
)


def _rows(conn: psycopg.Connection[Any], query: str, topic_id: int) -> list[tuple[Any, ...]]:
    return [tuple(row) for row in conn.execute(query, (topic_id,))]


def test_the_routed_views_have_the_columns_of_the_shards_views(cluster: Cluster) -> None:
    with cluster.proxy_conn() as proxy, cluster.shard_conn(0) as shard:
        for view in ROUTED_VIEWS:
            query = f"SELECT * FROM txnq.{view} LIMIT 0"
            on_proxy = proxy.execute(query).description
            on_shard = shard.execute(query).description
            assert on_proxy is not None and on_shard is not None
            assert [c.name for c in on_proxy] == [c.name for c in on_shard], view


def test_views_read_each_partition_from_its_owner_and_add_topic_counts_up(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("views")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        reader = client.subscribe(
            name, "reader", initial_position="earliest", poll_interval="200ms"
        )
        with client.producer(name, name="p") as producer:
            for partition in range(4):
                for _ in range(partition + 1):  # 1, 2, 3, 4 messages
                    producer.send(b"0123456789", partition=partition)
        received = receive_messages(reader, 10)
        for message in received:
            if message.partition in (0, 1):  # 3 of the 10 acknowledged
                reader.acknowledge(message)
        owners = {p: shard_of(cluster.proxy, topic.topic_id, p) for p in range(4)}
        assert set(owners.values()) == {0, 1}

        with cluster.proxy_conn() as proxy:
            # Timestamps cross PL/Proxy as text: the same instants whatever the zone.
            proxy.execute("SET TimeZone = 'Pacific/Chatham'")
            partitions = _rows(
                proxy,
                f"SELECT {PARTITION_COLUMNS} FROM txnq.partition_status "
                "WHERE topic_id = %s ORDER BY partition",
                topic.topic_id,
            )
            cursors = _rows(
                proxy,
                f"SELECT {CURSOR_COLUMNS} FROM txnq.cursor_status "
                "WHERE topic_id = %s ORDER BY partition",
                topic.topic_id,
            )
            topic_row = proxy.execute(
                "SELECT partitions, subscriptions, entries_written, live_entries, live_messages, "
                "live_bytes, last_publish_time IS NOT NULL FROM txnq.topic_status "
                "WHERE topic_id = %s",
                (topic.topic_id,),
            ).fetchall()
            subscription = proxy.execute(
                "SELECT subscription, partitions, consumers, backlog_entries, backlog_messages, "
                "backlog_bytes, oldest_unacked_publish_time IS NOT NULL, pending_acks "
                "FROM txnq.subscription_status WHERE topic_id = %s",
                (topic.topic_id,),
            ).fetchall()
        reader.close()

    # Each partition once, as its owner has it (the other shard's empty head
    # row never shows).
    assert [row[2] for row in partitions] == [0, 1, 2, 3]
    assert [row[3] for row in partitions] == [1, 2, 3, 4]  # next_offset
    for row in partitions:
        with cluster.shard_conn(owners[row[2]]) as shard:
            owned = shard.execute(
                f"SELECT {PARTITION_COLUMNS} FROM txnq.partition_status "
                "WHERE topic_id = %s AND partition = %s",
                (topic.topic_id, row[2]),
            ).fetchone()
        assert tuple(row) == owned
    assert [row[4] for row in cursors] == [0, 1, 2, 3]
    for row in cursors:
        with cluster.shard_conn(owners[row[4]]) as shard:
            owned = shard.execute(
                f"SELECT {CURSOR_COLUMNS} FROM txnq.cursor_status "
                "WHERE topic_id = %s AND partition = %s",
                (topic.topic_id, row[4]),
            ).fetchone()
        assert tuple(row) == owned
    # Summed over the shards, each partition counted once.
    assert topic_row == [(4, 1, 10, 10, 10, 100, True)]
    assert subscription == [("reader", 4, 1, 7, 7, 70, True, 0)]  # the reader is live


def test_init_again_keeps_the_routed_views_answering(cluster: Cluster) -> None:
    # install_refusals makes every view refuse again; views.sql follows it.
    report = init(cluster.proxy, cluster.shards)

    with cluster.shard_conn(0) as shard:
        views = shard.execute("SELECT count(*) FROM pg_views WHERE schemaname = 'txnq'").fetchone()
    assert views is not None and report.refused_views == views[0] - len(ROUTED_VIEWS)
    with cluster.proxy_conn() as conn:
        for view in ROUTED_VIEWS:
            conn.execute(f"SELECT count(*) FROM txnq.{view}").fetchone()


def test_the_consoles_reads_of_these_views_run_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("console")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=2)
        client.subscribe(name, "watcher", initial_position="earliest").close()
        with client.producer(name, name="p") as producer:
            producer.send(b"x", partition=1)
    with cluster.proxy_conn() as conn:
        read = {
            query: [row for row in conn.execute(QUERIES[query], {"limit": 1000}) if row[0] == name]
            for query in (
                "console_topics",
                "console_partitions",
                "console_subscriptions",
                "console_cursors",
                "console_ledgers",
            )
        }
    assert [len(rows) for rows in read.values()] == [1, 2, 1, 2, 2]
    assert read["console_topics"][0][7] == 1  # entries_written
    assert [row[2] for row in read["console_partitions"]] == [0, 1]  # next_offset
    assert read["console_subscriptions"][0][6] == 1  # backlog_messages
