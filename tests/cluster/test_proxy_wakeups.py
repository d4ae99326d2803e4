"""A consumer through a two-shard cluster's proxy is woken by the shards'
NOTIFYs (docs/cluster.md, "How a consumer through the proxy is woken"): it
LISTENs on a connection of its own to each shard that owns one of its
partitions, so a message produced through the proxy reaches a waiting
consumer in well under a second although it polls only every 30 s, on every
subscription type, sync and asyncio. A shard the consumer cannot reach for
LISTEN is polled instead, and said once."""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from psycopg import sql

import txnq
import txnq.aio
from tests.cluster.conftest import Cluster
from txnq.cluster.setup import shard_of

SUBSCRIPTION_TYPES = ["exclusive", "failover", "shared", "key_shared"]
#: Neither a poll nor a heartbeat (every third of the lease) during a test:
#: only a NOTIFY wakes the consumer in time.
SLOW: dict[str, Any] = {"poll_interval": "30s", "lease": "120s"}
#: A woken consumer has the message within this (a poll would take 30 s).
WOKEN_WITHIN = 2.0
#: Long enough for the consumer to be waiting again after a receive.
SETTLE = 0.4


def _owners(cluster: Cluster, topic_id: int, partitions: int) -> dict[int, int]:
    owners = {p: shard_of(cluster.proxy, topic_id, p) for p in range(partitions)}
    assert set(owners.values()) == {0, 1}, owners  # the topic spans both shards
    return owners


def _listening_shards(cluster: Cluster, consumer_name: str) -> set[int]:
    """The shards where the consumer holds a connection LISTENing (its
    application name, its last statement a LISTEN), as each shard sees it."""
    found = set()
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity"
                " WHERE application_name = %s AND query LIKE 'LISTEN %%'",
                (f"txnq-consumer-{consumer_name}",),
            ).fetchone()
        if row and row[0]:
            found.add(shard)
    return found


def _wait_until_listening(cluster: Cluster, consumer_name: str, shards: set[int]) -> None:
    deadline = time.monotonic() + 10
    while _listening_shards(cluster, consumer_name) != shards:
        assert time.monotonic() < deadline, (
            f"consumer {consumer_name} listens on {_listening_shards(cluster, consumer_name)}, "
            f"not on {shards}"
        )
        time.sleep(0.05)
    time.sleep(SETTLE)  # registered as a waiter and waiting


@pytest.mark.parametrize("subscription_type", SUBSCRIPTION_TYPES)
def test_a_waiting_consumer_is_woken_by_every_shards_notify(
    cluster: Cluster, topic_name: Callable[[str], str], subscription_type: str
) -> None:
    name = topic_name(f"wake-{subscription_type}")
    consumer_name = f"c-{uuid.uuid4().hex[:8]}"
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        owners = _owners(cluster, topic.topic_id, 4)
        with (
            client.producer(name, name="p") as producer,
            client.subscribe(
                name, "s", subscription_type, consumer_name=consumer_name, **SLOW
            ) as consumer,
        ):
            _wait_until_listening(cluster, consumer_name, {0, 1})
            for partition in range(4):
                sent = time.monotonic()
                producer.send(f"m{partition}".encode(), partition=partition, key=f"k{partition}")
                message = consumer.receive(timeout=10)
                took = time.monotonic() - sent
                assert message is not None
                assert message.message_id.partition == partition
                assert took < WOKEN_WITHIN, (
                    f"a message on partition {partition} (shard {owners[partition]}) took "
                    f"{took:.2f}s: the consumer was not woken by the shard's NOTIFY"
                )
                consumer.acknowledge(message)
                time.sleep(SETTLE)
        assert client._cluster_proxy is True


@pytest.mark.parametrize("subscription_type", SUBSCRIPTION_TYPES)
def test_a_waiting_asyncio_consumer_is_woken_by_every_shards_notify(
    cluster: Cluster, topic_name: Callable[[str], str], subscription_type: str
) -> None:
    name = topic_name(f"awake-{subscription_type}")
    consumer_name = f"a-{uuid.uuid4().hex[:8]}"

    async def run() -> list[float]:
        took = []
        async with txnq.aio.Client(cluster.proxy) as client:
            topic = await client.admin.create_topic(name, partitions=4)
            _owners(cluster, topic.topic_id, 4)
            producer = await client.producer(name, name="p")
            consumer = await client.subscribe(
                name, "s", subscription_type, consumer_name=consumer_name, **SLOW
            )
            await asyncio.to_thread(_wait_until_listening, cluster, consumer_name, {0, 1})
            for partition in range(4):
                sent = time.monotonic()
                await producer.send(f"m{partition}".encode(), partition=partition, key="k")
                message = await consumer.receive(timeout=10)
                took.append(time.monotonic() - sent)
                assert message is not None
                assert message.message_id.partition == partition
                await consumer.acknowledge(message)
                await asyncio.sleep(SETTLE)
            await consumer.close()
            await producer.close()
        return took

    took = asyncio.run(run())
    assert max(took) < WOKEN_WITHIN, f"not woken by the shards' NOTIFYs: {took}"


@pytest.mark.parametrize("subscription_type", ["exclusive", "shared"])
def test_a_committed_transaction_over_both_shards_wakes_the_consumer(
    cluster: Cluster, topic_name: Callable[[str], str], subscription_type: str
) -> None:
    """A transaction's messages become readable at its commit markers, each
    written on the partition's shard, which notifies there too."""
    name = topic_name(f"txn-{subscription_type}")
    consumer_name = f"t-{uuid.uuid4().hex[:8]}"
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        _owners(cluster, topic.topic_id, 4)
        with (
            client.producer(name, transactional_id=topic_name("txn")) as producer,
            client.subscribe(
                name, "s", subscription_type, consumer_name=consumer_name, **SLOW
            ) as consumer,
        ):
            _wait_until_listening(cluster, consumer_name, {0, 1})
            txn = client.new_transaction(timeout="1m")
            for partition in range(4):
                producer.send(f"t{partition}".encode(), partition=partition, txn=txn)
            time.sleep(SETTLE)  # the consumer waits again: nothing is readable yet
            committed = time.monotonic()
            txn.commit()
            got = []
            while len(got) < 4:
                message = consumer.receive(timeout=10)
                assert message is not None
                got.append(message)
                consumer.acknowledge(message)
            took = time.monotonic() - committed
    assert {m.message_id.partition for m in got} == {0, 1, 2, 3}
    assert took < WOKEN_WITHIN, f"the commit's markers did not wake the consumer ({took:.2f}s)"


@pytest.mark.parametrize("subscription_type", ["exclusive", "shared"])
def test_a_consumer_listens_on_the_shards_of_partitions_added_later(
    cluster: Cluster, topic_name: Callable[[str], str], subscription_type: str
) -> None:
    name = topic_name(f"grow-{subscription_type}")
    consumer_name = f"g-{uuid.uuid4().hex[:8]}"
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=1)
        first = shard_of(cluster.proxy, topic.topic_id, 0)
        # A short lease: the heartbeat (every second) follows the new partitions.
        options: dict[str, Any] = {"poll_interval": "30s", "lease": "3s"}
        with client.subscribe(
            name, "s", subscription_type, consumer_name=consumer_name, **options
        ) as consumer:
            _wait_until_listening(cluster, consumer_name, {first})
            client.admin.update_topic(name, partitions=4)
            _wait_until_listening(cluster, consumer_name, {0, 1})
            with client.producer(name, name="p") as producer:
                for partition in range(4):
                    producer.send(b"g", partition=partition)
            got = {consumer.receive(timeout=10) for _ in range(4)}
            assert {m.message_id.partition for m in got if m is not None} == {0, 1, 2, 3}


@pytest.fixture
def role_without_shard_1(cluster: Cluster) -> Iterator[str]:
    """A role that logs in on the proxy and on shard 0 but not on shard 1: a
    client with it cannot open a connection to shard 1, as a client that
    cannot reach a shard's address, while the proxy still reaches every
    shard (as the user its shard DSNs name)."""
    role = f"txnq_wakeup_{uuid.uuid4().hex[:8]}"
    ident = sql.Identifier(role)
    with cluster.proxy_conn() as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN SUPERUSER").format(ident))
    with cluster.shard_conn(0) as conn:
        conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
    try:
        yield role
    finally:
        for connect in (cluster.proxy_conn, lambda: cluster.shard_conn(0)):
            with connect() as conn:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                    (role,),
                )
                conn.execute(sql.SQL("DROP ROLE IF EXISTS {}").format(ident))


@pytest.mark.parametrize("face", ["sync", "asyncio"])
def test_a_shard_the_consumer_cannot_listen_on_is_polled_and_said_once(
    cluster: Cluster,
    topic_name: Callable[[str], str],
    role_without_shard_1: str,
    caplog: pytest.LogCaptureFixture,
    face: str,
) -> None:
    name = topic_name(f"unreachable-{face}")
    consumer_name = f"u-{uuid.uuid4().hex[:8]}"
    dsn = cluster.proxy.replace("postgres@", f"{role_without_shard_1}@", 1)
    poll = 3.0
    options: dict[str, Any] = {"poll_interval": poll, "lease": "120s"}
    caplog.set_level(logging.INFO, logger="txnq.consumer")
    with txnq.Client(cluster.proxy) as admin:
        topic = admin.admin.create_topic(name, partitions=4)
        owners = _owners(cluster, topic.topic_id, 4)
    on_0 = min(p for p, shard in owners.items() if shard == 0)
    on_1 = min(p for p, shard in owners.items() if shard == 1)

    def check(took: dict[int, float]) -> None:
        # Shard 0 still wakes the consumer; shard 1's message comes by the poll.
        assert took[on_0] < WOKEN_WITHIN, took
        assert took[on_1] < poll + WOKEN_WITHIN, took
        assert _listening_shards(cluster, consumer_name) == {0}

    if face == "sync":
        with (
            txnq.Client(dsn) as client,
            client.producer(name, name="p") as producer,
            client.subscribe(name, "s", consumer_name=consumer_name, **options) as consumer,
        ):
            _wait_until_listening(cluster, consumer_name, {0})
            took = {}
            for partition in (on_1, on_0, on_1):
                sent = time.monotonic()
                producer.send(b"x", partition=partition)
                message = consumer.receive(timeout=poll * 3)
                assert message is not None and message.message_id.partition == partition
                took[partition] = time.monotonic() - sent
                consumer.acknowledge(message)
                time.sleep(SETTLE)
            check(took)
    else:

        async def run() -> None:
            async with txnq.aio.Client(dsn) as client:
                producer = await client.producer(name, name="p")
                consumer = await client.subscribe(name, "s", consumer_name=consumer_name, **options)
                await asyncio.to_thread(_wait_until_listening, cluster, consumer_name, {0})
                took = {}
                for partition in (on_1, on_0, on_1):
                    sent = time.monotonic()
                    await producer.send(b"x", partition=partition)
                    message = await consumer.receive(timeout=poll * 3)
                    assert message is not None and message.message_id.partition == partition
                    took[partition] = time.monotonic() - sent
                    await consumer.acknowledge(message)
                    await asyncio.sleep(SETTLE)
                await asyncio.to_thread(check, took)
                await consumer.close()
                await producer.close()

        asyncio.run(run())
    warnings = [r for r in caplog.records if "cannot LISTEN on shard 1" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]
    assert "polled every 3s" in warnings[0].getMessage()
    listener = [r for r in caplog.records if r.name == "txnq.consumer"]
    assert not [r for r in listener if "shard 0" in r.getMessage()]
    # The direct route (txnq.database.routes) cannot use either shard with this
    # role (no login on shard 1, no grants on shard 0): said once per shard,
    # the calls went through the proxy.
    routes = [r.getMessage() for r in caplog.records if r.name == "txnq.cluster"]
    assert len([m for m in routes if m.startswith("shard 1 ")]) <= 1, routes
    assert len([m for m in routes if m.startswith("shard 0 ")]) <= 1, routes


@pytest.mark.parametrize("face", ["sync", "asyncio"])
def test_a_listen_connection_that_breaks_leaves_its_shard_polled(
    cluster: Cluster,
    topic_name: Callable[[str], str],
    caplog: pytest.LogCaptureFixture,
    face: str,
) -> None:
    """Shard 1 ends the consumer's LISTEN connection while it waits: the
    consumer goes on, shard 1's partitions by the poll, shard 0's woken."""
    name = topic_name(f"broken-{face}")
    consumer_name = f"b-{uuid.uuid4().hex[:8]}"
    poll = 3.0
    options: dict[str, Any] = {"poll_interval": poll, "lease": "120s"}
    caplog.set_level(logging.INFO, logger="txnq.consumer")

    def break_shard_1() -> None:
        with cluster.shard_conn(1) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE application_name = %s AND query LIKE 'LISTEN %%'",
                (f"txnq-consumer-{consumer_name}",),
            )
        deadline = time.monotonic() + 10
        while _listening_shards(cluster, consumer_name) != {0}:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        time.sleep(SETTLE)

    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        owners = _owners(cluster, topic.topic_id, 4)
    on_0 = min(p for p, shard in owners.items() if shard == 0)
    on_1 = min(p for p, shard in owners.items() if shard == 1)
    took: dict[int, float] = {}

    if face == "sync":
        with (
            txnq.Client(cluster.proxy) as client,
            client.producer(name, name="p") as producer,
            client.subscribe(name, "s", consumer_name=consumer_name, **options) as consumer,
        ):
            _wait_until_listening(cluster, consumer_name, {0, 1})
            break_shard_1()
            for partition in (on_1, on_0):
                sent = time.monotonic()
                producer.send(b"x", partition=partition)
                message = consumer.receive(timeout=poll * 3)
                assert message is not None and message.message_id.partition == partition
                took[partition] = time.monotonic() - sent
                consumer.acknowledge(message)
                time.sleep(SETTLE)
    else:

        async def run() -> None:
            async with txnq.aio.Client(cluster.proxy) as client:
                producer = await client.producer(name, name="p")
                consumer = await client.subscribe(name, "s", consumer_name=consumer_name, **options)
                await asyncio.to_thread(_wait_until_listening, cluster, consumer_name, {0, 1})
                await asyncio.to_thread(break_shard_1)
                for partition in (on_1, on_0):
                    sent = time.monotonic()
                    await producer.send(b"x", partition=partition)
                    message = await consumer.receive(timeout=poll * 3)
                    assert message is not None and message.message_id.partition == partition
                    took[partition] = time.monotonic() - sent
                    await consumer.acknowledge(message)
                    await asyncio.sleep(SETTLE)
                await consumer.close()
                await producer.close()

        asyncio.run(run())
    assert took[on_0] < WOKEN_WITHIN, took
    assert took[on_1] < poll + WOKEN_WITHIN, took
    warnings = [r for r in caplog.records if "cannot LISTEN on shard 1" in r.getMessage()]
    assert len(warnings) == 1, [r.getMessage() for r in caplog.records]


def test_a_consumer_on_one_shard_directly_opens_no_listen_connection_of_its_own(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """On a plain txnq database (here a shard, read directly) the client finds
    no proxy, once, and its consumers wait on their fetch connection alone."""
    name = topic_name("direct")
    consumer_name = f"d-{uuid.uuid4().hex[:8]}"
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=1)
    with txnq.Client(cluster.shards[0]) as client:
        with client.subscribe(name, "s", consumer_name=consumer_name, poll_interval="30s"):
            time.sleep(SETTLE)
            with cluster.shard_conn(0) as conn:
                rows = conn.execute(
                    "SELECT query FROM pg_stat_activity WHERE application_name = %s",
                    (f"txnq-consumer-{consumer_name}",),
                ).fetchall()
        assert client._cluster_proxy is False
    # Its fetch connection only (LISTENing there), no connection of its own elsewhere.
    assert len(rows) == 1, rows
