"""The Python client, unchanged, with its DSN at a two-shard cluster's proxy
(docs/cluster.md): topic administration, produce (single, batched,
idempotent, fenced) and exclusive / failover consume with individual and
cumulative acks, with each partition's data on the shard that owns it; what
the proxy does not route yet fails with TQ030 and changes nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

import txnq
from tests.cluster.conftest import Cluster
from txnq import errors
from txnq.cluster.setup import shard_of

MESSAGES = 40
RECEIVE_TIMEOUT = 10.0


def _heads(cluster: Cluster, topic_id: int) -> list[dict[int, int]]:
    """Each shard's next offset of every partition of the topic, read on the shard."""
    heads = []
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            rows = conn.execute(
                "SELECT partition, next_offset FROM txnq.partitions WHERE topic_id = %s",
                (topic_id,),
            ).fetchall()
        heads.append({int(p): int(n) for p, n in rows})
    return heads


def _receive_all(consumer: Any, count: int) -> list[Any]:
    received = []
    for _ in range(count):
        message = consumer.receive(timeout=RECEIVE_TIMEOUT)
        assert message is not None, f"only {len(received)} of {count} messages arrived"
        received.append(message)
    return received


def test_topic_admin_through_the_proxy_reaches_every_shard(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("admin")
    with txnq.Client(cluster.proxy) as client:
        created = client.admin.create_topic(name, partitions=2, retention="1d", ttl="1h")
        with pytest.raises(errors.TopicExistsError):
            client.admin.create_topic(name, partitions=2)
        grown = client.admin.update_topic(name, partitions=4)
        listed = {t.name: t for t in client.admin.list_topics()}
        described = client.admin.describe_topic(name)

        assert grown.partitions == 4 and listed[name].topic_id == created.topic_id
        assert [p.partition for p in described.partitions] == [0, 1, 2, 3]
        # The topic is on every shard, with the id the proxy allocated.
        for shard in range(len(cluster.shards)):
            with cluster.shard_conn(shard) as conn:
                row = conn.execute(
                    "SELECT topic_id, partitions, ttl_seconds FROM txnq.topics WHERE name = %s",
                    (name,),
                ).fetchone()
            assert row == (created.topic_id, 4, 3600.0), shard

        client.admin.delete_topic(name)
        with pytest.raises(errors.TopicNotFoundError):
            client.admin.describe_topic(name)
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            assert (
                conn.execute("SELECT 1 FROM txnq.topics WHERE name = %s", (name,)).fetchone()
                is None
            )


def test_a_four_partition_topics_partitions_are_on_both_shards_and_stay_ordered(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("spread")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        owners = {p: shard_of(cluster.proxy, topic.topic_id, p) for p in range(4)}
        assert set(owners.values()) == {0, 1}, owners
        with client.producer(name, name="spreader") as producer:
            sent = [producer.send(f"m{i}".encode(), partition=i % 4) for i in range(MESSAGES)]
        # Each partition's entries are on its owner; the other shard's head row is empty.
        heads = _heads(cluster, topic.topic_id)
        for partition, owner in owners.items():
            assert heads[owner][partition] == MESSAGES // 4, (partition, heads)
            assert heads[1 - owner][partition] == 0, (partition, heads)

        with client.subscribe(name, "ordered", initial_position="earliest") as consumer:
            received = _receive_all(consumer, MESSAGES)
            for message in received:
                consumer.acknowledge(message)
        by_partition: dict[int, list[bytes]] = defaultdict(list)
        offsets: dict[int, list[int]] = defaultdict(list)
        for message in received:
            by_partition[message.message_id.partition].append(message.value)
            offsets[message.message_id.partition].append(message.message_id.offset)
        for partition in range(4):
            expected = [f"m{i}".encode() for i in range(partition, MESSAGES, 4)]
            assert by_partition[partition] == expected
            assert offsets[partition] == sorted(offsets[partition])
        assert set(sent) == {m.message_id for m in received}
        backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(name)}
        assert backlog == {"ordered": 0}


def test_batched_sends_are_written_once_to_their_partitions_owners(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("batched")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        with client.producer(name, name="batcher") as producer:
            for i in range(MESSAGES):
                producer.send_async(f"b{i}".encode(), key=f"k{i % 7}")
            producer.flush()
        description = client.admin.describe_topic(name)
        with client.subscribe(name, "all", initial_position="earliest") as consumer:
            received = _receive_all(consumer, MESSAGES)
            assert consumer.receive(timeout=0.5) is None
    assert sorted(m.value for m in received) == sorted(f"b{i}".encode() for i in range(MESSAGES))
    # The batches (entries) are each on their partition's owner, once.
    entries = sum(p.high_watermark + 1 for p in description.partitions)
    heads = _heads(cluster, topic.topic_id)
    assert sum(heads[0].values()) + sum(heads[1].values()) == entries


def test_a_retried_append_through_the_proxy_is_a_duplicate_not_a_second_entry(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("idempotent")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
    with cluster.proxy_conn() as conn:
        sessions = conn.execute(
            "SELECT producer_id, epoch, partition, last_sequence "
            "FROM txnq.register_producer_v2(%s, 'retrier')",
            (topic.topic_id,),
        ).fetchall()
        assert [row[2] for row in sessions] == [0, 1, 2, 3]
        producer_id, epoch = sessions[0][0], sessions[0][1]
        for partition in range(4):
            results = [
                conn.execute(
                    "SELECT entry_offset, duplicate FROM txnq.append_v5(%s, %s, %s, %s, 0, %s)",
                    (topic.topic_id, partition, producer_id, epoch, [b"once"]),
                ).fetchone()
                for _ in range(2)
            ]
            assert results == [(0, False), (0, True)], partition
    heads = _heads(cluster, topic.topic_id)
    assert [heads[0][p] + heads[1][p] for p in range(4)] == [1, 1, 1, 1]


def test_a_newer_producer_of_the_same_name_fences_the_older_on_every_shard(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("fenced")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        owners = {shard_of(cluster.proxy, topic.topic_id, p): p for p in range(4)}
        older = client.producer(name, name="etl")
        older.send(b"before", partition=0)
        newer = client.producer(name, name="etl")
        for partition in owners.values():  # one partition on each shard
            with pytest.raises(errors.ProducerFencedError):
                older.send(b"late", partition=partition)
            newer.send(b"after", partition=partition)
        newer.close()
        older.close()


def test_failover_consume_with_cumulative_acks_resumes_after_the_acked_messages(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("failover")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=4)
        with client.producer(name, name="p") as producer:
            for i in range(MESSAGES):
                producer.send(f"f{i}".encode(), partition=i % 4)
        kwargs: dict[str, Any] = {"subscription_type": "failover", "initial_position": "earliest"}
        with client.subscribe(name, "fo", **kwargs) as consumer:
            received = _receive_all(consumer, MESSAGES)
            last: dict[int, Any] = {}
            for message in received:
                last[message.message_id.partition] = message  # in order per partition
            # Acknowledge half of each partition cumulatively.
            for partition, message in last.items():
                half = [m for m in received if m.message_id.partition == partition][4]
                assert half.message_id.offset < message.message_id.offset
                consumer.acknowledge_cumulative(half)
        described = client.admin.describe_subscription(name, "fo")
        assert [c.mark_delete_offset for c in described.cursors] == [4, 4, 4, 4]
        with client.subscribe(name, "fo", **kwargs) as consumer:
            again = _receive_all(consumer, MESSAGES - 4 * 5)
            assert all(m.message_id.offset >= 5 for m in again)
            for message in again:
                consumer.acknowledge(message)
            assert consumer.receive(timeout=0.5) is None
        backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(name)}
        assert backlog == {"fo": 0}


def test_a_second_exclusive_consumer_is_refused_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("exclusive")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=2)
        with client.subscribe(name, "only"), pytest.raises(errors.ConsumerBusyError):
            client.subscribe(name, "only")


def _shard_counts(cluster: Cluster) -> list[tuple[int, ...]]:
    counts = []
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM txnq.subscriptions), "
                "(SELECT count(*) FROM txnq.transactions), (SELECT count(*) FROM txnq.topics)"
            ).fetchone()
        assert row is not None
        counts.append(tuple(row))
    return counts


def test_what_the_proxy_does_not_route_fails_with_tq030_and_changes_nothing(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("refused")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=2)
        before = _shard_counts(cluster)
        assert _shard_counts(cluster) == before
    with cluster.proxy_conn() as conn:
        for statement in (
            "SELECT * FROM txnq.expire_ttl_v2(1)",
            "SELECT txnq.send_at_commit_v2('t', NULL)",
        ):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(statement)
            assert raised.value.sqlstate == "TQ030", statement


def test_topic_policies_and_an_unforced_delete_of_a_busy_topic_apply_to_every_shard(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("policy")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        client.admin.set_topic_policy(name, retention="2h", ttl="30m", backlog_quota_size="1MiB")
        client.subscribe(name, "lagging").close()
        owner_of_3 = shard_of(cluster.proxy, topic.topic_id, 3)
        with client.producer(name, name="p") as producer:
            producer.send(b"unread", partition=3)  # a backlog on one shard only
        # The message a shard gives (delete_topic_v2), not the topic's id.
        with pytest.raises(
            errors.TopicBusyError,
            match=f"topic '{name}': subscription 'lagging' still has 1 unacknowledged entries",
        ) as refused:
            client.admin.delete_topic(name)
        assert "force the delete" in str(refused.value)
        quota = client.admin.describe_topic(name).backlog_quota
        assert quota is not None and quota.limit_bytes == 1024 * 1024
        for shard in range(len(cluster.shards)):
            with cluster.shard_conn(shard) as conn:
                row = conn.execute(
                    "SELECT retention_seconds, ttl_seconds, backlog_quota_bytes "
                    "FROM txnq.topics WHERE name = %s",
                    (name,),
                ).fetchone()
            assert row == (7200.0, 1800.0, 1024 * 1024), (shard, owner_of_3)
        client.admin.delete_topic(name, force=True)
        assert name not in {t.name for t in client.admin.list_topics()}


def test_an_unforced_delete_with_a_consumer_connected_to_any_shard_says_so(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("busy")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=2)
        with (
            client.subscribe(name, "live"),
            pytest.raises(
                errors.TopicBusyError, match=f"topic '{name}' has connected consumers"
            ) as refused,
        ):
            client.admin.delete_topic(name)
        assert "close them first, or force the delete" in str(refused.value)
        client.admin.delete_topic(name)
        assert name not in {t.name for t in client.admin.list_topics()}


def test_a_registration_refused_by_one_shard_leaves_no_session_on_the_others(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """A consumer registers on the shards one after the other and is undone
    where it was registered when a shard refuses: with RUN ON ALL, a shard
    that accepted kept a session nobody renews (PL/Proxy raises the first
    error without waiting for the others), which refused the exclusive
    subscription to the next consumer until its lease ran out."""
    name = topic_name("excl")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=2)
        client.subscribe(name, "only").close()
        (subscription,) = client.admin.list_subscriptions(name)
        # A live session on the last shard only: what a late registration left.
        last = len(cluster.shards) - 1
        with cluster.shard_conn(last) as conn:
            conn.execute(
                "SELECT txnq.register_consumer_v2(%s, 'stray', 0, 60)",
                (subscription.subscription_id,),
            )
        with pytest.raises(errors.ConsumerBusyError, match=r"already has a consumer \(stray\)"):
            client.subscribe(name, "only", consumer_name="second")
        for shard in range(len(cluster.shards)):
            with cluster.shard_conn(shard) as conn:
                names = [
                    row[0]
                    for row in conn.execute(
                        "SELECT name FROM txnq.consumers WHERE subscription_id = %s",
                        (subscription.subscription_id,),
                    )
                ]
            assert names == (["stray"] if shard == last else []), shard
        with cluster.shard_conn(last) as conn:
            conn.execute("DELETE FROM txnq.consumers WHERE name = 'stray'")
        client.subscribe(name, "only", consumer_name="third").close()


def test_two_failover_consumers_share_the_partitions_and_miss_nothing(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("failover2")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=4)
        with client.producer(name, name="p") as producer:
            for i in range(MESSAGES):
                producer.send(f"g{i}".encode(), partition=i % 4)
        kwargs: dict[str, Any] = {"subscription_type": "failover", "initial_position": "earliest"}
        with (
            client.subscribe(name, "pair", consumer_name="a", **kwargs) as first,
            client.subscribe(name, "pair", consumer_name="b", **kwargs) as second,
        ):
            seen: dict[str, list[Any]] = {"a": [], "b": []}
            deadline_rounds = 200
            while (
                len({m.message_id for ms in seen.values() for m in ms}) < MESSAGES
                and deadline_rounds
            ):
                deadline_rounds -= 1
                for label, consumer in (("a", first), ("b", second)):
                    message = consumer.receive(timeout=0.2)
                    if message is not None:
                        consumer.acknowledge(message)
                        seen[label].append(message)
        # Every message at least once; while the second consumer joins, a
        # partition moving to it may deliver a message twice (as on one server:
        # failover hands over at least once).
        ids = {m.message_id for ms in seen.values() for m in ms}
        assert len(ids) == MESSAGES
        assert seen["a"] and seen["b"]


def test_a_topic_created_on_some_shards_only_is_completed_by_creating_it_again(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """A create that failed part-way (RUN ON ALL commits on each shard on its
    own) leaves the topic on some shards: creating it again completes it
    under the same id, instead of failing where it exists and giving it
    another id elsewhere."""
    name = topic_name("partway")
    # What a create leaves when shard 1 did not take it: the proxy's id on shard 0 only.
    with cluster.proxy_conn() as conn:
        row = conn.execute(
            "SELECT txnq_cluster.allocate_id('txnq_cluster.topic_ids', 'txnq.topics', 'topic_id')"
        ).fetchone()
    assert row is not None
    topic_id = int(row[0])
    with cluster.shard_conn(0) as conn:
        conn.execute(
            "SELECT setval(pg_get_serial_sequence('txnq.topics', 'topic_id'), %s, false)",
            (topic_id,),
        )
        conn.execute("SELECT txnq.create_topic_v2(%s, 4, -1, -1, NULL, 1048576)", (name,))
    with txnq.Client(cluster.proxy) as client:
        with pytest.raises(errors.ClusterInconsistentError, match="some shards only"):
            client.admin.create_topic(name, partitions=2)  # not the count it has
        assert client.admin.create_topic(name, partitions=4).topic_id == topic_id
        for shard in range(len(cluster.shards)):
            with cluster.shard_conn(shard) as conn:
                row = conn.execute(
                    "SELECT topic_id, partitions, max_message_bytes FROM txnq.topics"
                    " WHERE name = %s",
                    (name,),
                ).fetchone()
            assert row == (topic_id, 4, 1048576), shard  # the settings of the shard that had it
        with pytest.raises(errors.TopicExistsError):
            client.admin.create_topic(name, partitions=4)
        with client.producer(name) as producer:
            for partition in range(4):
                producer.send(f"p{partition}".encode(), partition=partition)
        with client.subscribe(name, "s", initial_position="earliest") as consumer:
            got = {}
            for _ in range(4):
                message = consumer.receive(timeout=10)
                assert message is not None
                consumer.acknowledge(message)
                got[message.message_id.partition] = message.value
    assert got == {p: f"p{p}".encode() for p in range(4)}
