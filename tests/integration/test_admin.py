"""Administration: topics are created, listed, described, grown (never shrunk)
and deleted (not while a subscription still has a backlog, unless forced);
subscriptions are described, reset and deleted.

Also run through a two-shard cluster's proxy (the cluster pass,
tests/cluster_pass.py): what a test reads of txnq's tables it reads on every
database behind its DSN (tests.helpers.databases), where every shard holds
the topics' metadata alike and an entry on the shard that owns its partition."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import txnq
from tests.helpers import receive_messages, sql, sql_everywhere, sql_total
from txnq import errors

FAST = {"poll_interval": "200ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        yield client


def everywhere(dsn: str, query: str, *, rows: bool = False) -> Any:
    """What ``query`` reads of metadata: the same on every database behind
    ``dsn`` (a cluster's shards), so one answer; its first value unless ``rows``."""
    answers = sql_everywhere(dsn, query)
    assert all(a == answers[0] for a in answers), f"the shards disagree on {query!r}: {answers}"
    return answers[0] if rows else answers[0][0][0]


def test_a_created_topic_is_listed_and_described(client: txnq.Client) -> None:
    created = client.admin.create_topic(
        "orders", partitions=4, retention="7d", ttl="1h", max_message_bytes="64KiB"
    )
    client.admin.create_topic("audit")

    assert (created.name, created.partitions) == ("orders", 4)
    assert created.retention_seconds == 7 * 86400
    assert created.ttl_seconds == 3600
    assert created.max_message_bytes == 64 * 1024
    assert [t.name for t in client.admin.list_topics()] == ["audit", "orders"]
    assert client.admin.get_topic("orders") == created

    with client.producer("orders") as producer:
        producer.send(b"x", partition=2)
    client.subscribe("orders", "billing", initial_position="earliest", **FAST).close()
    described = client.admin.describe_topic("orders")
    assert described.topic == created
    assert [(p.partition, p.high_watermark, p.ledgers) for p in described.partitions] == [
        (0, -1, 1),
        (1, -1, 1),
        (2, 0, 1),
        (3, -1, 1),
    ]
    assert [(s.name, s.backlog_entries, s.consumers) for s in described.subscriptions] == [
        ("billing", 1, 0)
    ]


def test_a_topic_name_is_taken_only_once(client: txnq.Client, dsn: str) -> None:
    client.admin.create_topic("orders", partitions=2)

    with pytest.raises(errors.TopicExistsError, match="exists already"):
        client.admin.create_topic("orders", partitions=3)

    assert client.admin.get_topic("orders").partitions == 2
    assert everywhere(dsn, "SELECT count(*) FROM txnq.partitions") == 2


def test_growing_a_topic_gives_existing_subscriptions_cursors_on_the_new_partitions(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders", partitions=2)
    client.subscribe("orders", "billing", initial_position="latest", **FAST).close()

    grown = client.admin.update_topic("orders", partitions=4)

    assert grown.partitions == 4
    assert everywhere(
        dsn, "SELECT partition, mark_delete_offset FROM txnq.cursors ORDER BY partition", rows=True
    ) == [(0, -1), (1, -1), (2, -1), (3, -1)]
    assert everywhere(
        dsn,
        "SELECT partition, state FROM txnq.ledgers WHERE partition >= 2 ORDER BY partition",
        rows=True,
    ) == [(2, "OPEN"), (3, "OPEN")]
    with client.producer("orders") as producer:
        sent = producer.send(b"to a new partition", partition=3)
    assert (sent.partition, sent.offset) == (3, 0)
    with client.subscribe("orders", "billing", **FAST) as consumer:
        (message,) = receive_messages(consumer, 1)
    assert message.message_id == sent


def test_growing_a_topic_to_its_current_size_changes_nothing(client: txnq.Client, dsn: str) -> None:
    client.admin.create_topic("orders", partitions=2)
    assert client.admin.update_topic("orders", partitions=2).partitions == 2
    assert everywhere(dsn, "SELECT count(*) FROM txnq.partitions") == 2


def test_a_topic_never_shrinks(client: txnq.Client, dsn: str) -> None:
    client.admin.create_topic("orders", partitions=3)

    with pytest.raises(errors.InvalidArgumentError, match="can only grow"):
        client.admin.update_topic("orders", partitions=2)

    assert client.admin.get_topic("orders").partitions == 3
    assert everywhere(dsn, "SELECT count(*) FROM txnq.partitions") == 3


def test_deleting_a_topic_with_a_backlog_is_refused_unless_forced(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders", partitions=2)
    client.subscribe("orders", "billing", initial_position="earliest", **FAST).close()
    with client.producer("orders") as producer:
        producer.send(b"unread")

    with pytest.raises(errors.TopicBusyError, match="force the delete"):
        client.admin.delete_topic("orders")
    assert client.admin.get_topic("orders").partitions == 2

    client.admin.delete_topic("orders", force=True)

    with pytest.raises(errors.TopicNotFoundError):
        client.admin.get_topic("orders")
    for table in ("topics", "partitions", "subscriptions", "cursors", "producers"):
        assert everywhere(dsn, f"SELECT count(*) FROM txnq.{table}") == 0, table
    # Entries leave with their entry log (GC), not by row deletes; ledgers say so.
    assert everywhere(dsn, "SELECT DISTINCT state FROM txnq.ledgers", rows=True) == [("DELETED",)]
    assert sql_total(dsn, "SELECT count(*) FROM txnq.entries") == 1


def test_deleting_a_topic_with_a_connected_consumer_is_refused(client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    with (
        client.subscribe("orders", "billing", **FAST),
        pytest.raises(errors.TopicBusyError, match="connected consumers"),
    ):
        client.admin.delete_topic("orders")
    client.admin.delete_topic("orders")
    assert client.admin.list_topics() == []


def test_a_consumed_topic_can_be_deleted_and_created_again(client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders") as producer:
        producer.send(b"x")
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        consumer.acknowledge(receive_messages(consumer, 1))

    client.admin.delete_topic("orders")
    again = client.admin.create_topic("orders")

    with client.producer("orders") as producer:
        assert producer.send(b"y").offset == 0
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        assert [m.value for m in receive_messages(consumer, 1)] == [b"y"]
    assert again.partitions == 1


def test_deleting_an_unknown_topic_fails_with_topic_not_found(client: txnq.Client) -> None:
    with pytest.raises(errors.TopicNotFoundError, match="create_topic"):
        client.admin.delete_topic("nope")


def test_describing_a_subscription_shows_its_cursors_backlog_and_consumers(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("orders", partitions=2)
    with client.producer("orders") as producer:
        for i in range(3):
            producer.send(f"m{i}", partition=0)
    with client.subscribe(
        "orders", "billing", initial_position="earliest", consumer_name="c1", **FAST
    ) as consumer:
        consumer.acknowledge(receive_messages(consumer, 3)[1])

        described = client.admin.describe_subscription("orders", "billing")

        assert described.subscription.subscription_type == "exclusive"
        assert described.subscription.backlog_entries == 3
        assert [
            (c.partition, c.mark_delete_offset, c.individual_acks) for c in described.cursors
        ] == [
            (0, -1, 1),
            (1, -1, 0),
        ]
        assert [c.name for c in described.consumers] == ["c1"]

    with pytest.raises(errors.SubscriptionNotFoundError, match="subscribe to create it"):
        client.admin.describe_subscription("orders", "nobody")


def test_resetting_a_subscription_to_an_offset_redelivers_from_there(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders") as producer:
        for i in range(4):
            producer.send(f"m{i}")
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        consumer.acknowledge(receive_messages(consumer, 4))

    cursors = client.admin.reset_subscription("orders", "billing", 2)

    assert [c.mark_delete_offset for c in cursors] == [1]
    with client.subscribe("orders", "billing", **FAST) as consumer:
        assert [m.value for m in receive_messages(consumer, 2)] == [b"m2", b"m3"]


def test_a_subscription_with_a_connected_consumer_is_deleted_only_by_force(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    consumer = client.subscribe("orders", "billing", **FAST)
    try:
        with pytest.raises(errors.ConsumerBusyError, match="force"):
            client.admin.delete_subscription("orders", "billing")
        assert everywhere(dsn, "SELECT count(*) FROM txnq.subscriptions") == 1

        client.admin.delete_subscription("orders", "billing", force=True)

        assert client.admin.list_subscriptions("orders") == []
        assert everywhere(dsn, "SELECT count(*) FROM txnq.cursors") == 0
    finally:
        consumer.close()


def test_the_client_works_on_after_its_idle_pooled_connections_were_cut(
    client: txnq.Client, dsn: str
) -> None:
    # What a server restart, a failover or an idle-session timeout does to a pool.
    client.admin.create_topic("orders")
    with client.producer("orders") as producer:
        producer.send(b"before")
    cut = sql(  # the proxy's sessions when dsn is a cluster's proxy
        dsn,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
        "WHERE datname = current_database() AND pid <> pg_backend_pid()",
    )
    assert cut, "the test needs pooled connections to cut"

    assert [t.name for t in client.admin.list_topics()] == ["orders"]
    with client.producer("orders") as producer:
        assert producer.send(b"after").offset == 1


def test_a_call_whose_connection_is_ended_after_checkout_runs_once_more_on_a_new_one(
    client: txnq.Client, dsn: str
) -> None:
    # The race the pool's check at checkout cannot see: the server ends the
    # connection after it was handed out and before the statement runs. The
    # server then answers with 57P01 instead of a result, for a statement it
    # did not run, so the call is run once more on a new connection.
    from txnq.database.plans import Call, run

    client.admin.create_topic("orders")

    def plan() -> Any:
        return (yield Call("topic_by_name", {"name": "orders"}, "one"))

    with client._io() as io:
        conn = io.connection()
        pid = conn.info.backend_pid
        assert sql(dsn, "SELECT pg_terminate_backend(%s, 10000)", (pid,)) == [(True,)]
        row = run(plan(), io)
        assert row is not None and io.connection().info.backend_pid != pid
    # The same for the client's own queries (admin reads).
    with client.connection() as conn:
        pid = conn.info.backend_pid
    sql(dsn, "SELECT pg_terminate_backend(%s, 10000)", (pid,))
    assert [t.name for t in client.admin.list_topics()] == ["orders"]
