"""Consuming, the same on both faces and on every subscription type:
receive, batch_receive, acknowledge, acknowledge_cumulative,
negative_acknowledge, seek, unsubscribe, the dead-letter policy and retries."""

from __future__ import annotations

import time
from typing import Any

import pytest
from faces import FAST

import txnq
from tests.cluster_pass import needs_cluster_slice
from tests.helpers import assert_nothing_more, receive_messages, wait_until
from txnq import MessageId, errors

#: Shared and key_shared subscriptions, not routed through a cluster's proxy yet.
SHARED = needs_cluster_slice("shared")
SUBSCRIPTION_TYPES = [
    "exclusive",
    "failover",
    pytest.param("shared", marks=SHARED),
    pytest.param("key_shared", marks=SHARED),
]
CUMULATIVE_TYPES = ["exclusive", "failover"]
#: One type of each delivery path, for behaviour the types share: a cursor
#: fetch (exclusive, failover) and claims (shared, key_shared).
EACH_PATH = ["exclusive", pytest.param("shared", marks=SHARED)]


@pytest.fixture(params=SUBSCRIPTION_TYPES)
def subscription_type(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def feed(client: Any, topic: str, count: int, **send: Any) -> list[MessageId]:
    producer = client.producer(topic)
    ids = [producer.send(f"m{i}", key=f"k{i}", **send) for i in range(count)]
    producer.close()
    return ids


def values(messages: list[Any]) -> list[bytes]:
    return sorted(m.value for m in messages)


def test_what_is_acknowledged_is_never_delivered_again(
    client: Any, topic: Any, subscription_type: str
) -> None:
    topic("orders", partitions=2)
    feed(client, "orders", 6)
    consumer = client.subscribe(
        "orders", "s", subscription_type, initial_position="earliest", **FAST
    )
    received = receive_messages(consumer, 6)
    assert values(received) == [f"m{i}".encode() for i in range(6)]
    consumer.acknowledge(received[0])
    consumer.acknowledge(received[1].message_id)
    consumer.acknowledge(received[2:4])
    consumer.close()

    again = client.subscribe("orders", "s", subscription_type, **FAST)
    redelivered = receive_messages(again, 2)
    assert values(redelivered) == values(received[4:])
    assert_nothing_more(again, 0.3)


@pytest.mark.parametrize("subscription_type", EACH_PATH)
def test_batch_receive_returns_up_to_max_messages_and_waits_only_for_the_first(
    client: Any, topic: Any, subscription_type: str
) -> None:
    topic("orders")
    consumer = client.subscribe(
        "orders", "s", subscription_type, initial_position="earliest", **FAST
    )
    started = time.monotonic()
    assert consumer.batch_receive(10, timeout="200ms") == []
    assert time.monotonic() - started >= 0.2
    feed(client, "orders", 5)
    batches = []
    deadline = time.monotonic() + 5
    while sum(map(len, batches)) < 5 and time.monotonic() < deadline:
        batch = consumer.batch_receive(3, timeout="1s")
        assert len(batch) <= 3
        if batch:
            batches.append(batch)
    assert values([m for batch in batches for m in batch]) == [f"m{i}".encode() for i in range(5)]
    assert consumer.batch_receive(3, timeout=0) == []


def test_a_negatively_acknowledged_message_is_delivered_again(
    client: Any, topic: Any, subscription_type: str
) -> None:
    topic("orders")
    (sent,) = feed(client, "orders", 1)
    consumer = client.subscribe(
        "orders",
        "s",
        subscription_type,
        initial_position="earliest",
        negative_ack_redelivery_delay="200ms",
        **FAST,
    )
    (first,) = receive_messages(consumer, 1)
    nacked_at = time.monotonic()  # before the call: the delay runs from within it
    consumer.negative_acknowledge(first)
    (second,) = receive_messages(consumer, 1, timeout=5)
    assert time.monotonic() - nacked_at >= 0.15
    assert second.message_id == first.message_id == sent
    assert second.value == first.value
    assert second.redelivery_count == first.redelivery_count + 1
    consumer.acknowledge(second)
    assert_nothing_more(consumer, 0.4)


@pytest.mark.parametrize("subscription_type", EACH_PATH)
def test_what_a_closed_consumer_did_not_acknowledge_goes_to_the_next(
    client: Any, topic: Any, subscription_type: str
) -> None:
    topic("orders")
    feed(client, "orders", 3)
    first = client.subscribe("orders", "s", subscription_type, initial_position="earliest", **FAST)
    received = receive_messages(first, 3)
    first.acknowledge(received[0])
    first.close()
    second = client.subscribe("orders", "s", subscription_type, **FAST)
    assert values(receive_messages(second, 2)) == values(received[1:])


@pytest.mark.parametrize("subscription_type", CUMULATIVE_TYPES)
def test_a_cumulative_ack_acknowledges_everything_up_to_the_message(
    client: Any, topic: Any, subscription_type: str
) -> None:
    topic("orders")
    feed(client, "orders", 5)
    consumer = client.subscribe(
        "orders", "s", subscription_type, initial_position="earliest", **FAST
    )
    received = receive_messages(consumer, 5)
    consumer.acknowledge_cumulative(received[2])
    consumer.close()
    again = client.subscribe("orders", "s", subscription_type, **FAST)
    assert values(receive_messages(again, 2)) == [b"m3", b"m4"]
    assert_nothing_more(again, 0.3)


@SHARED
@pytest.mark.parametrize("subscription_type", ["shared", "key_shared"])
def test_a_cumulative_ack_is_refused_where_consumers_share_a_partition(
    client: Any, topic: Any, subscription_type: str
) -> None:
    topic("orders")
    feed(client, "orders", 1)
    consumer = client.subscribe(
        "orders", "s", subscription_type, initial_position="earliest", **FAST
    )
    (message,) = receive_messages(consumer, 1)
    with pytest.raises(errors.InvalidArgumentError, match="cumulative"):
        consumer.acknowledge_cumulative(message)


@pytest.mark.parametrize("subscription_type", EACH_PATH)
def test_seek_moves_the_subscription(client: Any, topic: Any, subscription_type: str) -> None:
    topic("orders")
    ids = feed(client, "orders", 4)
    consumer = client.subscribe(
        "orders", "s", subscription_type, initial_position="earliest", **FAST
    )
    received = receive_messages(consumer, 4)
    consumer.acknowledge(received)

    consumer.seek("earliest")
    assert values(receive_messages(consumer, 4)) == values(received)
    consumer.seek(ids[2])
    assert values(receive_messages(consumer, 2)) == [b"m2", b"m3"]
    consumer.seek(ids[3].offset, partition=0)
    assert values(receive_messages(consumer, 1)) == [b"m3"]
    consumer.seek("latest")
    assert_nothing_more(consumer, 0.3)


@pytest.mark.parametrize("subscription_type", EACH_PATH)
def test_unsubscribe_deletes_the_subscription_and_closes(
    client: Any, topic: Any, subscription_type: str
) -> None:
    topic("orders")
    feed(client, "orders", 2)
    consumer = client.subscribe(
        "orders", "s", subscription_type, initial_position="earliest", **FAST
    )
    receive_messages(consumer, 2)
    assert [s.name for s in client.admin.list_subscriptions("orders")] == ["s"]
    consumer.unsubscribe()
    assert client.admin.list_subscriptions("orders") == []
    with pytest.raises(errors.ClosedError):
        consumer.receive(timeout=0)
    # A new subscription of the same name starts where it is told to, from scratch.
    fresh = client.subscribe("orders", "s", subscription_type, initial_position="latest", **FAST)
    assert_nothing_more(fresh, 0.3)


def test_an_exclusive_subscription_refuses_a_second_consumer(client: Any, topic: Any) -> None:
    topic("orders")
    client.subscribe("orders", "s", "exclusive", **FAST)
    with pytest.raises(errors.ConsumerBusyError):
        client.subscribe("orders", "s", "exclusive", **FAST)


def test_failover_gives_each_partition_to_one_consumer(client: Any, topic: Any) -> None:
    topic("orders", partitions=2)
    a = client.subscribe("orders", "s", "failover", consumer_name="a", lease="3s", **FAST)
    b = client.subscribe("orders", "s", "failover", consumer_name="b", lease="3s", **FAST)
    wait_until(
        lambda: a.assigned_partitions == [0] and b.assigned_partitions == [1],
        timeout=10,
        what="one partition each (p mod 2 of the consumers sorted by name)",
    )
    b.close()
    wait_until(lambda: a.assigned_partitions == [0, 1], timeout=10, what="the hand-over")


@SHARED
def test_key_shared_delivers_a_key_to_one_consumer(client: Any, topic: Any) -> None:
    topic("orders")
    a = client.subscribe("orders", "s", "key_shared", initial_position="earliest", **FAST)
    b = client.subscribe("orders", "s", "key_shared", initial_position="earliest", **FAST)
    producer = client.producer("orders")
    for i in range(20):
        producer.send(f"{i}", key=f"key-{i % 4}")
    got: dict[str, list[Any]] = {"a": [], "b": []}
    deadline = time.monotonic() + 10
    while len(got["a"]) + len(got["b"]) < 20 and time.monotonic() < deadline:
        for name, consumer in (("a", a), ("b", b)):
            message = consumer.receive(timeout=0.05)
            if message is not None:
                got[name].append(message)
                consumer.acknowledge(message)
    assert len(got["a"]) + len(got["b"]) == 20
    keys_a = {m.key for m in got["a"]}
    keys_b = {m.key for m in got["b"]}
    assert not keys_a & keys_b
    for messages in got.values():  # in order per key
        for key in {m.key for m in messages}:
            mine = [int(m.value) for m in messages if m.key == key]
            assert mine == sorted(mine)


# -- dead letters and retries -------------------------------------------------


@needs_cluster_slice("shared", "dead_letters")
@pytest.mark.parametrize("subscription_type", ["shared", "key_shared"])
def test_a_message_nacked_too_often_goes_to_the_dead_letter_topic(
    client: Any, topic: Any, subscription_type: str
) -> None:
    topic("jobs")
    producer = client.producer("jobs")
    poison = producer.send(b"poison", key="k", properties={"a": "1"})
    policy = txnq.DeadLetterPolicy(max_redeliver_count=1)
    consumer = client.subscribe(
        "jobs",
        "w",
        subscription_type,
        initial_position="earliest",
        dead_letter_policy=policy,
        negative_ack_redelivery_delay=0,
        **FAST,
    )
    counts = []
    for _ in range(2):
        (message,) = receive_messages(consumer, 1)
        counts.append(message.redelivery_count)
        consumer.negative_acknowledge(message)
    assert counts == [0, 1]
    assert_nothing_more(consumer, 0.5)

    dead = client.subscribe("jobs-w-DLQ", "inspect", initial_position="earliest", **FAST)
    (letter,) = receive_messages(dead, 1)
    assert (letter.value, letter.key) == (b"poison", "k")
    assert letter.properties["a"] == "1"
    assert letter.properties["REAL_TOPIC"] == "jobs"
    assert letter.properties["REAL_SUBSCRIPTION"] == "w"
    assert letter.properties["ORIGIN_MESSAGE_ID"] == str(poison)
    assert letter.properties["REDELIVERY_COUNT"] == "1"


@SHARED
def test_a_nack_backoff_grows_the_redelivery_delay(client: Any, topic: Any) -> None:
    topic("jobs")
    client.producer("jobs").send(b"x")
    backoff = txnq.Backoff(min_delay="100ms", max_delay="500ms", multiplier=5)
    consumer = client.subscribe(
        "jobs", "w", "shared", initial_position="earliest", negative_ack_backoff=backoff, **FAST
    )
    (message,) = receive_messages(consumer, 1)
    gaps = []
    for expected in (0.1, 0.5):  # min_delay * multiplier ** redelivery_count, capped
        nacked_at = time.monotonic()  # before the call: the delay runs from within it
        consumer.negative_acknowledge(message)
        (message,) = receive_messages(consumer, 1, timeout=5)
        gaps.append(time.monotonic() - nacked_at)
        assert gaps[-1] >= expected - 0.02
    assert message.redelivery_count == 2
    assert gaps[1] > gaps[0]


@needs_cluster_slice("shared", "dead_letters")
def test_reconsume_later_goes_through_the_retry_topic(client: Any, topic: Any) -> None:
    topic("jobs")
    client.producer("jobs").send(b"retry me", key="k")
    policy = txnq.DeadLetterPolicy(max_redeliver_count=1)
    consumer = client.subscribe(
        "jobs",
        "w",
        "shared",
        initial_position="earliest",
        dead_letter_policy=policy,
        retry_enable=True,
        **FAST,
    )
    (original,) = receive_messages(consumer, 1)
    consumer.reconsume_later(original, "300ms")
    (retried,) = receive_messages(consumer, 1, timeout=5)
    assert retried.message_id.topic == "jobs-w-RETRY"
    assert retried.properties["RECONSUMETIMES"] == "1"
    assert retried.properties["ORIGIN_MESSAGE_ID"] == str(original.message_id)
    consumer.reconsume_later(retried, "100ms")  # past max_redeliver_count: a dead letter
    assert_nothing_more(consumer, 0.5)
    dead = client.subscribe("jobs-w-DLQ", "inspect", initial_position="earliest", **FAST)
    assert [m.properties["RECONSUMETIMES"] for m in receive_messages(dead, 1)] == ["2"]


@needs_cluster_slice("shared", "dead_letters")
def test_retry_letters_are_acknowledged_and_nacked_through_the_consumer_that_asked(
    client: Any, topic: Any
) -> None:
    topic("jobs")
    feed(client, "jobs", 2)
    consumer = client.subscribe(
        "jobs",
        "w",
        "shared",
        initial_position="earliest",
        retry_enable=True,
        negative_ack_redelivery_delay="100ms",
        **FAST,
    )
    first, second = sorted(receive_messages(consumer, 2), key=lambda m: m.value)
    consumer.reconsume_later(first, 0)
    (retried,) = receive_messages(consumer, 1, timeout=5)
    assert (retried.message_id.topic, retried.value) == ("jobs-w-RETRY", b"m0")
    assert retried.properties["DELAY_TIME"] == "0"
    consumer.negative_acknowledge(retried)  # the retry-letter consumer's nack
    (again,) = receive_messages(consumer, 1, timeout=5)
    assert again.message_id == retried.message_id and again.redelivery_count == 1
    consumer.acknowledge([again, second])  # one call: each goes to its own subscription
    assert_nothing_more(consumer, 0.5)
    consumer.close()

    later = client.subscribe("jobs", "w", "shared", retry_enable=True, **FAST)
    assert_nothing_more(later, 0.5)  # nothing left unacknowledged on either topic
