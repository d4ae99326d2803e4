"""The direct route (txnq.database.routes, docs/cluster.md "The direct
route"): with the DSN at a cluster's proxy, a producer's plain appends and a
consumer's fetches and acks run on the shard that owns the partition, on the
client's own connections to it; CLUSTER_ROUTE=proxy sends them through the
proxy; a shard the client cannot reach directly is reached through the proxy.
Either way the same guarantees: order per partition, nothing lost, nothing
twice, idempotent retries recognised across routes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import pytest

import txnq
import txnq.aio
from tests.cluster.conftest import Cluster
from txnq.cluster.setup import advertise, init
from txnq.database.routes import SyncRoutes

PARTITIONS = 4
PER_PARTITION = 25
RECEIVE_TIMEOUT = 10.0


def _shard_sessions(cluster: Cluster, application_name: str) -> list[int]:
    """Per shard, how many sessions of ``application_name`` it has."""
    counts = []
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
                (application_name,),
            ).fetchone()
            assert row is not None
            counts.append(int(row[0]))
    return counts


def _produce(
    cluster: Cluster,
    client: txnq.Client,
    name: str,
    producer_name: str,
    sessions_on: list[int] | None = None,
) -> None:
    """Send PER_PARTITION messages to every partition; while the producer is
    open, it has a session of its own on the shards ``sessions_on`` (default:
    every shard with the direct route, none with CLUSTER_ROUTE=proxy)."""
    with client.producer(name, name=producer_name) as producer:
        for i in range(PER_PARTITION):
            for partition in range(PARTITIONS):
                producer.send_async(f"a{partition}-{i}".encode(), partition=partition)
        producer.flush()
        sessions = _shard_sessions(cluster, f"txnq-producer-{producer_name}")
        if sessions_on is None:
            direct = client.settings.cluster_route == "direct"
            sessions_on = list(range(len(sessions))) if direct else []
        assert [shard for shard, count in enumerate(sessions) if count] == sessions_on, sessions


def _backlog(client: txnq.Client, name: str, subscription: str) -> int:
    subs = {s.name: s for s in client.admin.list_subscriptions(name)}
    return subs[subscription].backlog_entries


def _consume_all(client: txnq.Client, name: str, subscription: str) -> dict[int, list[bytes]]:
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    with client.subscribe(name, subscription, initial_position="earliest") as consumer:
        while True:
            message = consumer.receive(timeout=2.0)
            if message is None:
                break
            consumer.acknowledge(message)
            got[message.message_id.partition].append(message.value)
    return got


@pytest.mark.parametrize("route", ["direct", "proxy"])
def test_the_same_messages_in_order_whichever_route(
    cluster: Cluster, topic_name: Callable[[str], str], route: str
) -> None:
    name = topic_name(f"route-{route}")
    with txnq.Client(cluster.proxy, cluster_route=route) as client:
        client.admin.create_topic(name, partitions=PARTITIONS)
        _produce(cluster, client, name, f"p-{route}")
        got = _consume_all(client, name, "s")
        # Acknowledged on the route: a second consumer of the subscription
        # gets nothing more, and the backlog is gone on every shard.
        assert _consume_all(client, name, "s") == {p: [] for p in range(PARTITIONS)}
        backlog = _backlog(client, name, "s")
    for partition in range(PARTITIONS):
        assert got[partition] == [f"a{partition}-{i}".encode() for i in range(PER_PARTITION)]
    assert backlog == 0


def test_routes_mix_the_direct_and_the_proxy_route_on_one_topic(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """Produced directly, consumed through the proxy, and the other way round;
    a producer that goes on under the same name continues its sequences on
    either route (the state is the shard's)."""
    name = topic_name("route-mix")
    with (
        txnq.Client(cluster.proxy, cluster_route="direct") as direct,
        txnq.Client(cluster.proxy, cluster_route="proxy") as proxied,
    ):
        direct.admin.create_topic(name, partitions=PARTITIONS)
        with direct.producer(name, name="same") as producer:
            for partition in range(PARTITIONS):
                producer.send(b"first", partition=partition)
        with proxied.producer(name, name="same") as producer:
            for partition in range(PARTITIONS):
                producer.send(b"second", partition=partition)
        got = _consume_all(proxied, name, "mixed")
        again = _consume_all(direct, name, "other")
    expected = {p: [b"first", b"second"] for p in range(PARTITIONS)}
    assert got == expected
    assert again == expected


def test_a_shard_the_client_cannot_reach_is_reached_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    """The shard map names shard 0 at a port nothing listens on (as for an
    address only the proxy's server resolves): that shard's partitions go
    through the proxy, logged once; the other shard's stay direct."""
    name = topic_name("route-away")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=PARTITIONS)
        with client.producer(name, name="away") as producer:
            owners: dict[int, tuple[int, str]] = producer._owners  # white box: the shard map
            assert {shard for shard, _ in owners.values()} == {0, 1}
            producer._owners = {
                p: (shard, "host=127.0.0.1 port=1 dbname=nowhere" if shard == 0 else dsn)
                for p, (shard, dsn) in owners.items()
            }
            producer._routes.reset()
            with caplog.at_level(logging.WARNING, logger="txnq.cluster"):
                for i in range(3):
                    for partition in range(PARTITIONS):
                        producer.send(f"w{i}".encode(), partition=partition)
        warnings = [r for r in caplog.records if "cannot be reached directly" in r.getMessage()]
        assert len(warnings) == 1, [r.getMessage() for r in warnings]
        assert "nowhere" in warnings[0].getMessage()
        assert "port=1" not in warnings[0].getMessage()  # a location, not a DSN
        got = _consume_all(client, name, "s")
    assert got == {p: [b"w0", b"w1", b"w2"] for p in range(PARTITIONS)}


def test_the_asyncio_faces_take_the_direct_route(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("route-aio")

    async def run() -> tuple[dict[int, list[bytes]], list[int], int]:
        async with txnq.aio.Client(cluster.proxy) as client:
            await client.admin.create_topic(name, partitions=PARTITIONS)
            async with await client.producer(name, name="aio-direct") as producer:
                for i in range(PER_PARTITION):
                    for partition in range(PARTITIONS):
                        await producer.send(f"{partition}-{i}".encode(), partition=partition)
                sessions = await asyncio.to_thread(
                    _shard_sessions, cluster, "txnq-producer-aio-direct"
                )
            consumer = await client.subscribe(name, "s", initial_position="earliest")
            got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
            for _ in range(PER_PARTITION * PARTITIONS):
                message = await consumer.receive(timeout=RECEIVE_TIMEOUT)
                assert message is not None
                await consumer.acknowledge(message)
                got[message.message_id.partition].append(message.value)
            await consumer.close()
            subs = {s.name: s for s in await client.admin.list_subscriptions(name)}
            return got, sessions, subs["s"].backlog_entries

    got, sessions, backlog = asyncio.run(run())
    assert all(count >= 1 for count in sessions), sessions
    for partition in range(PARTITIONS):
        assert got[partition] == [f"{partition}-{i}".encode() for i in range(PER_PARTITION)]
    assert backlog == 0


def test_the_routes_leave_unkeyed_and_unknown_calls_to_the_face() -> None:
    """No shard map (one server, CLUSTER_ROUTE=proxy, a partition past the
    map, another topic): no direct connection, nothing logged."""
    owners: dict[int, tuple[int, str]] = {}
    routes = SyncRoutes(lambda key: owners.get(key[1]) if key[0] == 7 else None, "t")
    assert routes.connection((7, 0)) is None
    owners[0] = (0, "host=127.0.0.1 port=1 dbname=x")
    assert routes.connection((8, 0)) is None
    routes.close()


def test_cluster_route_is_checked() -> None:
    with pytest.raises(txnq.errors.ConfigurationError, match="CLUSTER_ROUTE"):
        txnq.load_settings(cluster_route="sideways")


def test_an_advertised_address_is_where_clients_reach_a_shard(
    cluster: Cluster, topic_name: Callable[[str], str], caplog: pytest.LogCaptureFixture
) -> None:
    """`txnq cluster advertise` (Kafka's advertised.listeners): clients take
    the shard's advertised address, not the proxy's; one they cannot reach is
    the detour through the proxy; cleared, the proxy's address again; a
    `cluster init` with the same shards keeps it."""
    name = topic_name("route-advertised")
    try:
        location = advertise(cluster.proxy, 0, "host=127.0.0.1 port=1")
        assert "port=1" in location and "dbname=" in location, location
        init(cluster.proxy, cluster.shards)  # configured again: the address stays
        with txnq.Client(cluster.proxy) as client:
            client.admin.create_topic(name, partitions=PARTITIONS)
            with caplog.at_level(logging.WARNING, logger="txnq.cluster"):
                _produce(cluster, client, name, "advertised-away", sessions_on=[1])
            said = [r.getMessage() for r in caplog.records if "reached directly" in r.getMessage()]
            assert any("shard 0 (127.0.0.1:1/" in m for m in said), said
            advertise(cluster.proxy, 0, None)
            _produce(cluster, client, name, "advertised-back", sessions_on=[0, 1])
            got = _consume_all(client, name, "s")
        assert all(len(got[p]) == 2 * PER_PARTITION for p in range(PARTITIONS)), got
    finally:
        advertise(cluster.proxy, 0, None)


@pytest.mark.parametrize(
    ("shard", "address", "fragment"),
    [
        (7, "host=127.0.0.1", "no shard 7"),
        (0, "host=127.0.0.1 user=evil", "no address of a shard"),
        (0, "port=5432 junk", "no address of a shard"),
        (0, "sslmode=disable", "no address of a shard"),
    ],
)
def test_advertise_refuses_what_is_no_address(
    cluster: Cluster, shard: int, address: str, fragment: str
) -> None:
    with pytest.raises(txnq.errors.InvalidArgumentError, match=fragment):
        advertise(cluster.proxy, shard, address)
    with cluster.proxy_conn() as conn:
        row = conn.execute("SELECT advertised FROM txnq_cluster.shards WHERE shard = 0").fetchone()
    assert row == (None,)
