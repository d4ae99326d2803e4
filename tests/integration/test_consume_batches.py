"""Consuming in batches: where batch_receive ends a batch, and a cursor that
folds in long runs of individually acknowledged entries (issue 23's consume
path: docs/benchmarks.md).

Also run through a two-shard cluster's proxy (the cluster pass,
tests/cluster_pass.py): the one partition's entries, cursor and acks are read
on the database that holds it (tests.helpers.partition_database)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import txnq
from tests.helpers import assert_nothing_more, partition_database, receive_messages, sql, sql_value

FAST = {"poll_interval": "200ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        yield client


def owner(dsn: str) -> str:
    """The database of the one partition of "orders": ``dsn``, or its owner shard."""
    return partition_database(dsn, "orders", 0)


def cursor(dsn: str, subscription: str = "billing") -> int:
    return int(
        sql_value(
            owner(dsn),
            "SELECT c.mark_delete_offset FROM txnq.cursors c "
            "JOIN txnq.subscriptions s USING (subscription_id) WHERE s.name = %s",
            (subscription,),
        )
    )


def send_singles(client: txnq.Client, count: int, first: int = 0) -> None:
    with client.producer("orders") as producer:
        for i in range(first, first + count):
            producer.send(f"m{i}")


def send_batch(client: txnq.Client, count: int, first: int) -> None:
    with client.producer("orders", batching_max_delay="1s") as producer:
        for i in range(first, first + count):
            producer.send_async(f"m{i}")


def test_a_batch_ends_before_an_entry_it_would_split(client: txnq.Client, dsn: str) -> None:
    client.admin.create_topic("orders")
    send_singles(client, 3)
    send_batch(client, 5, first=3)
    assert sql(owner(dsn), "SELECT message_count FROM txnq.entries ORDER BY entry_offset") == [
        (1,),
        (1,),
        (1,),
        (5,),
    ]
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        first = consumer.batch_receive(6, timeout="5s")
        # Three more would fit, but they would split the entry of five.
        assert [m.value for m in first] == [b"m0", b"m1", b"m2"]
        consumer.acknowledge_cumulative(first[-1])
        second = consumer.batch_receive(6, timeout="5s")
        assert [m.value for m in second] == [f"m{i}".encode() for i in range(3, 8)]
        consumer.acknowledge_cumulative(second[-1])
        assert_nothing_more(consumer)
    assert cursor(dsn) == 3
    assert sql(owner(dsn), "SELECT count(*) FROM txnq.individual_acks") == [(0,)]


def test_an_entry_larger_than_the_batch_is_split(client: txnq.Client, dsn: str) -> None:
    client.admin.create_topic("orders")
    send_singles(client, 1)
    send_batch(client, 5, first=1)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        # The entry of five does not fit in any batch of three: the first
        # batch fills up with its beginning.
        batches = [consumer.batch_receive(3, timeout="5s") for _ in range(2)]
        assert [[m.value for m in b] for b in batches] == [
            [b"m0", b"m1", b"m2"],
            [b"m3", b"m4", b"m5"],
        ]
        consumer.acknowledge_cumulative(batches[0][-1])  # inside the entry
    assert cursor(dsn) == 0
    with client.subscribe("orders", "billing", **FAST) as consumer:
        assert [m.value for m in receive_messages(consumer, 3)] == [b"m3", b"m4", b"m5"]
        assert_nothing_more(consumer)


def test_the_cursor_folds_in_more_individually_acked_entries_than_one_read_takes(
    client: txnq.Client, dsn: str
) -> None:
    # apply_acks_v2 reads the entries above the cursor 64 at a time: runs of
    # 64, 128 and more acknowledged entries fold in whole, and a gap stops them.
    client.admin.create_topic("orders")
    send_singles(client, 200)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        m = receive_messages(consumer, 200)
        consumer.acknowledge(m[1:150] + m[151:200])  # 0 and 150 are left
        assert cursor(dsn) == -1
        consumer.acknowledge(m[0])
        assert cursor(dsn) == 149
        assert sql(owner(dsn), "SELECT min(entry_offset), count(*) FROM txnq.individual_acks") == [
            (151, 49)
        ]
        consumer.acknowledge(m[150])
        assert cursor(dsn) == 199
        assert sql(owner(dsn), "SELECT count(*) FROM txnq.individual_acks") == [(0,)]
