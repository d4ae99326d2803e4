"""Shared and key_shared subscriptions through a two-shard cluster's proxy
(docs/cluster.md, issue 19 item 2), with the Python client, the asyncio
client and the CLI unchanged: every message once over both shards, a key to
one consumer in order, individual acks, nacks and ack timeouts redelivering,
dead letters moved across shards exactly once, delayed delivery, and the
errors of bad input."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

import txnq
import txnq.aio
from tests.cluster.conftest import Cluster
from txnq import errors
from txnq.cli import app
from txnq.cluster.setup import shard_of

RECEIVE_TIMEOUT = 10.0
FAST: dict[str, Any] = {"poll_interval": 0.05, "initial_position": "earliest"}


def _owners(cluster: Cluster, topic_id: int, partitions: int) -> dict[int, int]:
    owners = {p: shard_of(cluster.proxy, topic_id, p) for p in range(partitions)}
    assert set(owners.values()) == {0, 1}, owners  # the topic spans both shards
    return owners


def _drain(consumers: dict[str, Any], expected: int, ack: bool = True) -> list[tuple[str, Any]]:
    """Receive from the consumers in turn until ``expected`` messages came (or
    a long quiet), acknowledging each; (consumer label, message) in order."""
    got: list[tuple[str, Any]] = []
    deadline = time.monotonic() + 30
    while len(got) < expected and time.monotonic() < deadline:
        for label, consumer in consumers.items():
            message = consumer.receive(timeout=0.1)
            if message is not None:
                if ack:
                    consumer.acknowledge(message)
                got.append((label, message))
    return got


def test_two_shared_consumers_get_every_message_once_over_both_shards(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("shared")
    count = 120
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        _owners(cluster, topic.topic_id, 4)
        with client.producer(name, name="p") as producer:
            for i in range(count):
                producer.send_async(f"s{i}".encode(), partition=i % 4)
            producer.flush()
        kwargs = {"subscription_type": "shared", "receiver_queue_size": 10, **FAST}
        with (
            client.subscribe(name, "pool", consumer_name="a", **kwargs) as first,
            client.subscribe(name, "pool", consumer_name="b", **kwargs) as second,
        ):
            got = _drain({"a": first, "b": second}, count)
            assert first.receive(timeout=0.5) is None and second.receive(timeout=0.2) is None
        values = [m.value for _, m in got]
        assert sorted(values) == sorted(f"s{i}".encode() for i in range(count))
        assert len(set(values)) == count  # exactly once
        assert {label for label, _ in got} == {"a", "b"}
        assert {m.message_id.partition for _, m in got} == {0, 1, 2, 3}
        backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(name)}
        assert backlog == {"pool": 0}
    # Every claim went on its partition's owner; nothing is held anywhere.
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM txnq.claims WHERE topic_id = %s), "
                "(SELECT count(*) FROM txnq.claim_ranges WHERE topic_id = %s)",
                (topic.topic_id, topic.topic_id),
            ).fetchone()
        assert row == (0, 0), shard


def test_key_shared_keeps_each_key_with_one_consumer_in_order(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("keyed")
    keys = [f"k{i}" for i in range(12)]
    per_key = 10
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        _owners(cluster, topic.topic_id, 4)
        kwargs = {"subscription_type": "key_shared", "receiver_queue_size": 8, **FAST}
        with (
            client.subscribe(name, "keys", consumer_name="a", **kwargs) as first,
            client.subscribe(name, "keys", consumer_name="b", **kwargs) as second,
        ):
            with client.producer(name, name="p") as producer:
                for n in range(per_key):
                    for key in keys:
                        producer.send(f"{key}:{n}".encode(), key=key)
            got = _drain({"a": first, "b": second}, len(keys) * per_key)
    assert len(got) == len(keys) * per_key
    by_key: dict[str, list[int]] = defaultdict(list)
    consumers_of: dict[str, set[str]] = defaultdict(set)
    partitions = set()
    for label, message in got:
        key, n = message.value.decode().split(":")
        by_key[key].append(int(n))
        consumers_of[key].add(label)
        partitions.add(message.message_id.partition)
    assert all(by_key[key] == list(range(per_key)) for key in keys), by_key
    assert all(len(labels) == 1 for labels in consumers_of.values()), consumers_of
    assert {label for labels in consumers_of.values() for label in labels} == {"a", "b"}
    owners = {shard_of(cluster.proxy, topic.topic_id, p) for p in partitions}
    assert owners == {0, 1}  # keys on both shards


def test_a_nack_and_an_ack_timeout_redeliver_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("redeliver")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=2)
        _owners(cluster, topic.topic_id, 2)
        with client.producer(name, name="p") as producer:
            for partition in (0, 1):
                producer.send(f"n{partition}".encode(), partition=partition)
        with client.subscribe(
            name, "nacks", subscription_type="shared", negative_ack_redelivery_delay=0.2, **FAST
        ) as consumer:
            first = _drain({"c": consumer}, 2, ack=False)
            assert len(first) == 2
            for _, message in first:
                consumer.negative_acknowledge(message)
            again = _drain({"c": consumer}, 2)
            assert sorted(m.message_id for _, m in again) == sorted(m.message_id for _, m in first)
            assert all(m.redelivery_count == 1 for _, m in again)
            assert consumer.receive(timeout=0.5) is None

        with client.producer(name, name="p") as producer:
            for partition in (0, 1):
                producer.send(f"t{partition}".encode(), partition=partition)
        with client.subscribe(
            name, "timeouts", subscription_type="shared", ack_timeout="1s", **FAST
        ) as consumer:
            first = _drain({"c": consumer}, 4, ack=False)  # the n and t messages, held
            assert len(first) == 4 and all(m.redelivery_count == 0 for _, m in first)
            started = time.monotonic()
            again = _drain({"c": consumer}, 4)
            assert time.monotonic() - started >= 0.5
            assert sorted(m.message_id for _, m in again) == sorted(m.message_id for _, m in first)
            assert all(m.redelivery_count == 1 for _, m in again)
            assert consumer.receive(timeout=1.5) is None  # acked: no third delivery


def test_a_closing_consumers_claims_go_to_the_other_consumer_on_every_shard(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("released")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        _owners(cluster, topic.topic_id, 4)
        with client.producer(name, name="p") as producer:
            for i in range(8):
                producer.send(f"r{i}".encode(), partition=i % 4)
        kwargs = {"subscription_type": "shared", **FAST}
        leaves = client.subscribe(name, "pool", consumer_name="leaves", **kwargs)
        held = _drain({"leaves": leaves}, 8, ack=False)
        assert {m.value for _, m in held} == {f"r{i}".encode() for i in range(8)}
        with client.subscribe(name, "pool", consumer_name="stays", **kwargs) as stays:
            assert stays.receive(timeout=0.5) is None  # all held by the other consumer
            leaves.close()  # its claims are released on every shard, at once
            again = _drain({"stays": stays}, 8)
        assert sorted(m.value for _, m in again) == sorted(f"r{i}".encode() for i in range(8))
        assert all(m.redelivery_count >= 1 for _, m in again)
        backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(name)}
        assert backlog == {"pool": 0}


def _dead_letters(client: Any, dlq: str, expected: int) -> list[Any]:
    with client.subscribe(dlq, "inspect", **FAST) as reader:
        letters = _drain({"r": reader}, expected)
        assert reader.receive(timeout=0.5) is None
    return [m for _, m in letters]


def test_max_redeliveries_move_exactly_the_failed_messages_to_the_dead_letter_topic(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("dlq")
    count = 16
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        owners = _owners(cluster, topic.topic_id, 4)
        dlq = f"{name}-sub-DLQ"
        dlq_topic = client.admin.create_topic(dlq, partitions=1)
        # Every dead letter goes to partition 0 of the DLQ: those of the
        # partitions on the other shard cross shards.
        dlq_owner = shard_of(cluster.proxy, dlq_topic.topic_id, 0)
        assert any(owners[p] != dlq_owner for p in range(4)), (owners, dlq_owner)
        with client.producer(name, name="p") as producer:
            sent = {
                f"d{i}".encode(): producer.send(
                    f"d{i}".encode(), partition=i % 4, properties={"n": str(i)}
                )
                for i in range(count)
            }
        failing = {f"d{i}".encode() for i in range(count) if i % 3 == 0}
        policy = txnq.DeadLetterPolicy(max_redeliver_count=2)
        with client.subscribe(
            name,
            "sub",
            subscription_type="shared",
            negative_ack_redelivery_delay=0.05,
            dead_letter_policy=policy,
            **FAST,
        ) as consumer:
            deliveries: dict[bytes, int] = defaultdict(int)
            deadline = time.monotonic() + 30
            acked: set[bytes] = set()
            while time.monotonic() < deadline:
                message = consumer.receive(timeout=1.0)
                if message is None:
                    if len(acked) == count - len(failing):
                        break
                    continue
                deliveries[message.value] += 1
                if message.value in failing:
                    consumer.negative_acknowledge(message)
                else:
                    consumer.acknowledge(message)
                    acked.add(message.value)
        assert all(deliveries[v] == 3 for v in failing), deliveries  # counts 0, 1, 2
        letters = _dead_letters(client, dlq, len(failing))
        assert sorted(m.value for m in letters) == sorted(failing)
        for letter in letters:
            props = letter.properties
            origin = sent[letter.value]
            assert props["REAL_TOPIC"] == name and props["REAL_SUBSCRIPTION"] == "sub"
            assert props["ORIGIN_MESSAGE_ID"] == f"{name}:{origin.partition}:{origin.offset}:0"
            assert letter.message_id.partition == 0
            assert props["n"] == letter.value.decode()[1:]
            assert props["REDELIVERY_COUNT"] == "2"
            assert props["DEAD_LETTER_REASON"].startswith("delivered 3 times")
        backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(name)}
        assert backlog == {"sub": 0}
    # The proxy's cursor_status counts each cursor's dead letters on the shard
    # that owns the dead-letter partition.
    with cluster.proxy_conn() as conn:
        rows = conn.execute(
            "SELECT partition, dead_letters FROM txnq.cursor_status WHERE topic = %s ORDER BY 1",
            (name,),
        ).fetchall()
    assert rows == [(p, len(failing)) for p in range(4)]


def test_a_dead_letter_move_retried_after_a_failure_appends_one_copy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """A move that appended the copy and failed before acknowledging the
    original is retried when the claim comes back: the copy is found, not
    appended again."""
    name = topic_name("dlq-retry")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=2)
        dlq = client.admin.create_topic(f"{name}-DLQ", partitions=1)
        with client.producer(name, name="p") as producer:
            producer.send(b"once", partition=1)
        with client.subscribe(name, "s", subscription_type="shared", **FAST) as consumer:
            message = consumer.receive(timeout=RECEIVE_TIMEOUT)
            assert message is not None
            with cluster.proxy_conn() as conn:
                for redelivery_count in (3, 4):  # the first move, then its retry
                    conn.execute(
                        "SELECT txnq_cluster.move_dead_letter(%s, 1, %s, %s, %s, %s, 2, %s, %s, "
                        "%s, NULL, '{}', NULL)",
                        (
                            topic.topic_id,
                            consumer.subscription_id,
                            message.message_id.offset,
                            message.message_id.batch_index,
                            dlq.topic_id,
                            redelivery_count,
                            message.publish_time,
                            message.value,
                        ),
                    )
            assert consumer.receive(timeout=0.5) is None
        letters = _dead_letters(client, f"{name}-DLQ", 1)
        assert [m.value for m in letters] == [b"once"]
        backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(name)}
        assert backlog == {"s": 0}


def test_a_message_that_cannot_be_decoded_is_moved_to_a_dead_letter_partition_on_another_shard(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("undecodable")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=4)
        dlq = client.admin.create_topic(f"{name}-s-DLQ", partitions=1)
        dlq_owner = shard_of(cluster.proxy, dlq.topic_id, 0)
        # A partition on the other shard than the dead-letter topic's.
        partition = next(
            p for p in range(4) if shard_of(cluster.proxy, topic.topic_id, p) != dlq_owner
        )
        with client.producer(name, name="p") as producer:
            ids = [
                producer.send(f"u{i}".encode(), partition=partition, properties={"n": str(i)})
                for i in range(3)
            ]
        with cluster.shard_conn(1 - dlq_owner) as conn:
            changed = conn.execute(
                "UPDATE txnq.entries SET event_times = ARRAY['infinity']::timestamptz[] "
                "WHERE topic_id = %s AND partition = %s AND entry_offset = %s RETURNING 1",
                (topic.topic_id, partition, ids[1].offset),
            ).fetchall()
        assert changed == [(1,)]
        policy = txnq.DeadLetterPolicy(max_redeliver_count=3)
        with client.subscribe(
            name, "s", subscription_type="shared", dead_letter_policy=policy, **FAST
        ) as consumer:
            got = _drain({"c": consumer}, 2)
            assert [m.value for _, m in got] == [b"u0", b"u2"]
            assert consumer.receive(timeout=0.5) is None
            # Moved already: a second move answers false and copies nothing.
            with cluster.proxy_conn() as conn:
                again = conn.execute(
                    "SELECT txnq.dead_letter_v3(%s, %s, %s, %s, 0, %s, 'again')",
                    (
                        topic.topic_id,
                        partition,
                        consumer.subscription_id,
                        ids[1].offset,
                        dlq.topic_id,
                    ),
                ).fetchone()
            assert again == (False,)
        letters = _dead_letters(client, f"{name}-s-DLQ", 1)
        assert [m.value for m in letters] == [b"u1"]
        props = letters[0].properties
        assert props["DEAD_LETTER_REASON"].startswith("cannot be decoded: its event_time")
        assert props["ORIGIN_MESSAGE_ID"] == f"{name}:{partition}:{ids[1].offset}:0"
        assert props["n"] == "1" and letters[0].event_time is None
        backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(name)}
        assert backlog == {"s": 0}


def test_delayed_messages_come_at_their_time_from_both_shards(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("delayed")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=2)
        _owners(cluster, topic.topic_id, 2)
        with client.subscribe(name, "later", subscription_type="shared", **FAST) as consumer:
            with client.producer(name, name="p") as producer:
                sent_at = time.monotonic()
                for partition in (0, 1):
                    value = f"late{partition}".encode()
                    producer.send(value, partition=partition, deliver_after="2s")
                producer.send(b"now", partition=1)
            first = consumer.receive(timeout=RECEIVE_TIMEOUT)
            assert first is not None and first.value == b"now"
            consumer.acknowledge(first)
            assert consumer.receive(timeout=0.8) is None  # not before their time
            got = _drain({"c": consumer}, 2)
            assert time.monotonic() - sent_at >= 1.9
            assert sorted(m.value for _, m in got) == [b"late0", b"late1"]


def test_reconsume_later_moves_a_message_to_the_retry_topic_across_shards(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """reconsume_later sends the copy to the retry-letter topic and
    acknowledges the original in one txnq transaction: through the proxy a
    transaction across shards (the original's partition and the retry topic's
    may live on different shards). The copy comes back after its delay with
    the retry properties, the original is never delivered again, and nothing
    is left in either subscription."""
    name = topic_name("retry")
    with txnq.Client(cluster.proxy) as client:
        client.admin.create_topic(name, partitions=2)
        with client.subscribe(
            name, "r", subscription_type="shared", retry_enable=True, **FAST
        ) as consumer:
            retry_topic = f"{name}-r-RETRY"
            with client.producer(retry_topic, name="p") as producer:
                producer.send(b"from the retry topic", properties={"RECONSUMETIMES": "1"})
            with client.producer(name, name="p") as producer:
                for partition in (0, 1):  # one original on each shard's partition
                    producer.send(f"original-{partition}".encode(), partition=partition)
            got = _drain({"c": consumer}, 3, ack=False)
            values = {m.value: m for _, m in got}
            assert set(values) == {b"from the retry topic", b"original-0", b"original-1"}
            consumer.acknowledge(values[b"from the retry topic"])
            asked_at = time.monotonic()
            for partition in (0, 1):
                consumer.reconsume_later(values[f"original-{partition}".encode()], "300ms")
            retried = _drain({"c": consumer}, 2)
            assert time.monotonic() - asked_at >= 0.3
            assert sorted(m.value for _, m in retried) == [b"original-0", b"original-1"]
            for _, message in retried:
                assert message.message_id.topic == retry_topic
                assert message.properties["RECONSUMETIMES"] == "1"
                original = values[message.value]
                assert message.properties["ORIGIN_MESSAGE_ID"] == str(original.message_id)
            assert consumer.receive(timeout=0.5) is None  # the originals were acknowledged
        for topic in (name, retry_topic):
            backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(topic)}
            assert backlog == {"r": 0}, topic


def test_the_asyncio_client_consumes_a_shared_subscription_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("aio-shared")

    async def run() -> list[bytes]:
        async with txnq.aio.Client(cluster.proxy) as client:
            await client.admin.create_topic(name, partitions=4)
            async with await client.producer(name, name="p") as producer:
                for i in range(12):
                    await producer.send(f"a{i}".encode(), partition=i % 4)
            consumer = await client.subscribe(name, "aio", subscription_type="shared", **FAST)
            received = []
            for _ in range(12):
                message = await consumer.receive(timeout=RECEIVE_TIMEOUT)
                assert message is not None
                await consumer.acknowledge(message)
                received.append(message.value)
            assert await consumer.receive(timeout=0.3) is None
            await consumer.close()
            return received

    assert sorted(asyncio.run(run())) == sorted(f"a{i}".encode() for i in range(12))


def test_the_command_line_consumes_a_shared_subscription_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    runner = CliRunner(env={"COLUMNS": "120", "TXNQ_DSN": cluster.proxy, "TXNQ_CONFIG": None})
    name = topic_name("cli-shared")

    def ok(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, (args, result.output)
        return result.stdout

    ok("topics", "create", name, "--partitions", "4")
    for i in range(4):
        ok("produce", name, "-m", f"cli{i}", "--key", f"key{i}")
    consumed = ok(
        "consume", name, "-s", "sh", "--type", "shared", "--initial-position", "earliest",
        "--count", "4", "--timeout", "10s",
    )  # fmt: skip
    assert all(f"cli{i}" in consumed for i in range(4)), consumed
    consumed = ok("consume", name, "-s", "ks", "-t", "key_shared", "--initial-position",
                  "earliest", "--count", "4", "--timeout", "10s")  # fmt: skip
    assert all(f"cli{i}" in consumed for i in range(4)), consumed
    with txnq.Client(cluster.proxy) as client:
        backlog = {s.name: s.backlog_entries for s in client.admin.list_subscriptions(name)}
    assert backlog == {"sh": 0, "ks": 0}


def test_bad_input_to_the_shared_functions_fails_with_tq_codes_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("bad")
    with txnq.Client(cluster.proxy) as client:
        topic = client.admin.create_topic(name, partitions=2)
        with client.subscribe(name, "s", subscription_type="shared", **FAST) as consumer:
            ids = (topic.topic_id, consumer.subscription_id, consumer.consumer_id)
            with cluster.proxy_conn() as conn:
                for statement, args, state in (
                    ("SELECT * FROM txnq.claim_v6(%s, %s, %s, 0)", ids, "TQ005"),
                    ("SELECT * FROM txnq.claim_v6(%s, %s, %s, NULL)", ids, "TQ005"),
                    ("SELECT * FROM txnq.claim_v6(%s, %s, %s, 10, -1)", ids, "TQ005"),
                    ("SELECT * FROM txnq.claim_v6(%s, %s, %s, 10, NULL, 2)", ids, "TQ005"),
                    ("SELECT * FROM txnq.claim_v6(%s, %s, %s, 10, NULL, 2, 999999)", ids, "TQ001"),
                    ("SELECT * FROM txnq.claim_v6(%s, %s, 999999, 10)", ids[:2], "TQ009"),
                    ("SELECT * FROM txnq.claim_v6(%s, 999999, %s, 10)", ids[::2], "TQ006"),
                    (
                        "SELECT txnq.ack_shared_v5(%s, 7, %s, '{1}', '{0}')",
                        ids[:2],
                        "TQ001",
                    ),
                    (
                        "SELECT txnq.nack_shared_v3(%s, 0, %s, %s, '{1}', '{0}', '{-1}')",
                        ids,
                        "TQ005",
                    ),
                    (
                        "SELECT txnq.dead_letter_v3(%s, 9, %s, 0, 0, %s, 'why')",
                        ids[:2] + ids[:1],
                        "TQ001",
                    ),
                    (
                        "SELECT txnq.dead_letter_v3(%s, 0, %s, -1, 0, %s, 'why')",
                        ids[:2] + ids[:1],
                        "TQ005",
                    ),
                    (
                        "SELECT txnq.dead_letter_v3(%s, 0, %s, 0, 0, 999999, 'why')",
                        ids[:2],
                        "TQ001",
                    ),
                    (
                        "SELECT txnq.dead_letter_v3(%s, 0, 999999, 0, 0, %s, 'why')",
                        ids[:1] + ids[:1],
                        "TQ006",
                    ),
                    (
                        "SELECT * FROM txnq.append_delayed_v2(%s, 0, NULL, NULL, NULL, "
                        "'{a,b}', NULL, NULL, NULL, NULL, NULL, now())",
                        ids[:1],
                        "TQ005",
                    ),
                ):
                    with pytest.raises(psycopg.Error) as raised:
                        conn.execute(statement, args)
                    assert raised.value.sqlstate == state, (statement, raised.value)
        with pytest.raises(errors.InvalidArgumentError):
            client.subscribe(name, "s2", subscription_type="shared", ack_timeout="-1s")
