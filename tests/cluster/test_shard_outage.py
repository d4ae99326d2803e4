"""A shard server down in a two-shard cluster: `txnq cluster status` says which,
the partitions on the other shard go on working through the proxy, a call for
a partition of the stopped shard fails with an error (nothing is written
elsewhere instead), and all works again once the shard is back."""

from __future__ import annotations

from collections.abc import Callable

import psycopg
import pytest

import txnq
from tests.cluster.conftest import Cluster
from txnq import errors
from txnq.cluster.setup import shard_of, status

RECEIVE_TIMEOUT = 10.0


def test_a_stopped_shard_stops_its_partitions_only(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("outage")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=2)
        owners = {shard_of(cluster.proxy, topic.topic_id, p): p for p in range(2)}
        producer = client.producer(name, name="p")
        down = cluster.servers.shards[1]
        cluster.servers.pause(down, mode="immediate")  # a crash
        try:
            shards = status(cluster.proxy)
            assert [s.healthy for s in shards] == [True, False]
            assert shards[1].error

            producer.send(b"still here", partition=owners[0])
            with pytest.raises(errors.TxnqError) as raised:
                producer.send(b"lost?", partition=owners[1])
            assert "PL/Proxy" in str(raised.value)  # says which call could not reach its shard
        finally:
            cluster.servers.resume(down)
        # Back: the shard's partition takes appends again (a new producer
        # session; the failed one may have given up).
        producer.close()
        with client.producer(name, name="p") as again:
            again.send(b"back", partition=owners[1])
        with client.subscribe(name, "after", initial_position="earliest") as consumer:
            values = set()
            for _ in range(2):
                message = consumer.receive(timeout=RECEIVE_TIMEOUT)
                assert message is not None
                values.add(message.value)
                consumer.acknowledge(message)
            assert consumer.receive(timeout=0.5) is None
    assert values == {b"still here", b"back"}
    assert all(s.healthy for s in status(cluster.proxy))


def test_a_shared_claim_with_a_shard_down_hands_out_the_other_shards_messages(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """The proxy's claim_v6 asks each shard in turn: one that cannot be
    reached is passed over while another one has messages (never dropping
    claims made), and its error is raised when no shard had any."""
    name = topic_name("outage-shared")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=2)
        owners = {shard_of(cluster.proxy, topic.topic_id, p): p for p in range(2)}
        with client.producer(name, name="p") as producer:
            for shard in (0, 1):
                producer.send(f"on {shard}".encode(), partition=owners[shard])
    claim = "SELECT partition, payload FROM txnq.claim_v6(%s, %s, %s, 10)"
    with cluster.proxy_conn() as conn:
        row = conn.execute(
            "SELECT txnq.subscribe_v2(%s, 'pool', 'shared', 'read_committed', 'earliest')",
            (topic.topic_id,),
        ).fetchone()
        assert row is not None
        subscription_id = row[0]
        row = conn.execute(
            "SELECT txnq.register_consumer_v2(%s, 'c', 0, 60)", (subscription_id,)
        ).fetchone()
        assert row is not None
        ids = (topic.topic_id, subscription_id, row[0])
        down = cluster.servers.shards[1]
        cluster.servers.pause(down, mode="immediate")
        try:
            for _ in range(2):  # whichever shard a call starts at
                claimed = conn.execute(claim, ids).fetchall()
                if claimed:
                    break
            assert claimed == [(owners[0], b"on 0")]
            with pytest.raises(psycopg.Error, match="PL/Proxy"):
                conn.execute(claim, ids)
        finally:
            cluster.servers.resume(down)
        assert conn.execute(claim, ids).fetchall() == [(owners[1], b"on 1")]
        conn.execute(
            "SELECT txnq.ack_shared_v5(%s, %s, %s, '{0}', '{0}')",
            (topic.topic_id, owners[0], subscription_id),
        )
        conn.execute(
            "SELECT txnq.ack_shared_v5(%s, %s, %s, '{0}', '{0}')",
            (topic.topic_id, owners[1], subscription_id),
        )
        conn.execute("SELECT txnq.close_consumer_v1(%s, %s)", (topic.topic_id, ids[2]))
