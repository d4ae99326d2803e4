"""The other faces through a two-shard cluster's proxy, unchanged: the asyncio
client, seek, and the command line's topics / produce / consume."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import pytest
from typer.testing import CliRunner

import txnq
import txnq.aio
from tests.cluster.conftest import Cluster
from txnq.cli import app

MESSAGES = 12
RECEIVE_TIMEOUT = 10.0


def test_the_asyncio_client_produces_and_consumes_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("aio")

    async def run() -> list[tuple[int, bytes]]:
        async with txnq.aio.Client(cluster.proxy) as client:
            await client.admin.create_topic(name, partitions=4)
            async with await client.producer(name, name="aio-p") as producer:
                for i in range(MESSAGES):
                    await producer.send(f"a{i}".encode(), partition=i % 4)
            consumer = await client.subscribe(name, "aio-s", initial_position="earliest")
            received = []
            for _ in range(MESSAGES):
                message = await consumer.receive(timeout=RECEIVE_TIMEOUT)
                assert message is not None
                await consumer.acknowledge(message)
                received.append((message.message_id.partition, message.value))
            await consumer.close()
            return received

    received = asyncio.run(run())
    for partition in range(4):
        values = [value for p, value in received if p == partition]
        assert values == [f"a{i}".encode() for i in range(partition, MESSAGES, 4)]


def test_seek_rewinds_a_partition_on_its_owner(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("seek")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=2)
        with client.producer(name, name="p") as producer:
            for i in range(6):
                producer.send(f"s{i}".encode(), partition=i % 2)
        with client.subscribe(name, "rewind", initial_position="earliest") as consumer:
            for _ in range(6):
                message = consumer.receive(timeout=RECEIVE_TIMEOUT)
                assert message is not None
                consumer.acknowledge(message)
            consumer.seek("earliest")
            again = [consumer.receive(timeout=RECEIVE_TIMEOUT) for _ in range(6)]
        assert sorted(m.value for m in again if m is not None) == [
            f"s{i}".encode() for i in range(6)
        ]


@pytest.fixture
def runner(cluster: Cluster) -> CliRunner:
    return CliRunner(env={"COLUMNS": "120", "TXNQ_DSN": cluster.proxy, "TXNQ_CONFIG": None})


def test_the_command_line_works_unchanged_with_txnq_dsn_at_the_proxy(
    runner: CliRunner, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("cli")

    def ok(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, (args, result.output)
        return result.stdout

    ok("topics", "create", name, "--partitions", "4")
    ok("produce", name, "-m", "one", "-m", "two", "-m", "three", "--key", "k")
    described = json.loads(ok("topics", "describe", name, "--json"))
    assert sum(p["high_watermark"] + 1 for p in described["partitions"]) >= 1
    consumed = ok("consume", name, "-s", "cli", "--initial-position", "earliest", "--count", "3")
    assert all(word in consumed for word in ("one", "two", "three"))
    listed = json.loads(ok("subscriptions", "list", name, "--json"))
    assert [(s["name"], s["backlog_entries"]) for s in listed] == [("cli", 0)]
    ok("subscriptions", "reset", name, "cli", "--to", "earliest")
    listed = json.loads(ok("subscriptions", "list", name, "--json"))
    assert [(s["name"], s["backlog_entries"]) for s in listed] == [("cli", 1)]  # one batch
    ok("subscriptions", "delete", name, "cli", "--force")
    assert json.loads(ok("subscriptions", "list", name, "--json")) == []
    ok("topics", "delete", name)


def test_a_negative_ack_on_an_exclusive_subscription_redelivers_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("nack")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=2)
        with client.producer(name, name="p") as producer:
            producer.send(b"again", partition=1)
        with client.subscribe(
            name, "retry", initial_position="earliest", negative_ack_redelivery_delay=0.1
        ) as consumer:
            first = consumer.receive(timeout=RECEIVE_TIMEOUT)
            assert first is not None
            consumer.negative_acknowledge(first)
            second = consumer.receive(timeout=RECEIVE_TIMEOUT)
            assert second is not None and second.message_id == first.message_id
            consumer.acknowledge(second)
