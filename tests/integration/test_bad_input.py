"""Bad input fails with a clear error and changes nothing (DESIGN, Public API).

Every test asserts the error's class (a ``TxnqError``), a phrase of its message
that tells the caller what to do, and that no row was written anywhere.

Also run through a two-shard cluster's proxy (the cluster pass,
tests/cluster_pass.py): "anywhere" is then every shard (tests.helpers.databases).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pytest

import txnq
from tests.cluster_pass import needs_cluster_slice
from tests.helpers import databases, receive_messages, sql
from txnq import MessageId, errors

FAST = {"poll_interval": "200ms"}
TABLES = (
    "topics",
    "partitions",
    "ledgers",
    "entries",
    "subscriptions",
    "cursors",
    "individual_acks",
    "consumers",
    "producers",
    "producer_sequences",
)
BAD_NAMES = [
    pytest.param("has space", id="space"),
    pytest.param("a/b", id="slash"),
    pytest.param("it's", id="quote"),
    pytest.param('say "hi"', id="double-quote"),
    pytest.param("", id="empty"),
    pytest.param("x" * 201, id="201-chars"),
    pytest.param("ordrés", id="non-ascii"),
    pytest.param("orders\n", id="trailing-newline"),
]
BAD_DURATIONS = ["abc", -1, "5 parsecs", float("nan"), [1]]
BAD_SIZES = ["abc", -2, "5 parsecs", 1.5]  # -1 is a size for retention: unlimited


def row_counts(dsn: str) -> dict[str, int]:
    query = " UNION ALL ".join(f"SELECT '{t}', count(*) FROM txnq.{t}" for t in TABLES)
    return {name: count for name, count in sql(dsn, query)}


def database_state(dsn: str) -> list[dict[str, Any]]:
    """Of each database behind ``dsn`` (a cluster's every shard): row counts,
    plus the rows that change in place: head rows, cursors, individual acks
    and producer sequences."""
    return [one_database_state(database) for database in databases(dsn)]


def one_database_state(dsn: str) -> dict[str, Any]:
    return {
        **row_counts(dsn),
        "head rows": sql(dsn, "SELECT * FROM txnq.partitions ORDER BY 1, 2"),
        "cursors": sql(
            dsn,
            "SELECT topic_id, partition, subscription_id, mark_delete_offset, generation "
            "FROM txnq.cursors ORDER BY 1, 2, 3",
        ),
        "individual acks": sql(dsn, "SELECT * FROM txnq.individual_acks ORDER BY 1, 2, 3, 4"),
        "producer sequences": sql(dsn, "SELECT * FROM txnq.producer_sequences ORDER BY 1, 2, 3"),
    }


@contextmanager
def nothing_written(dsn: str) -> Iterator[None]:
    before = database_state(dsn)
    yield
    assert database_state(dsn) == before


def assert_each_refused(
    dsn: str,
    call: Callable[[Any], object],
    values: list[Any],
    match: str,
    error: type[errors.TxnqError] = errors.InvalidArgumentError,
) -> None:
    """Each value, in turn, fails with ``error`` (its message matching ``match``)
    and writes nothing."""
    for value in values:
        with nothing_written(dsn):
            try:
                call(value)
            except error as exc:
                assert re.search(match, str(exc)), f"{value!r}: {exc}"
                continue
            pytest.fail(f"{value!r} was accepted")


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2, max_message_bytes="1KiB")
        yield client


@pytest.fixture
def producer(client: txnq.Client) -> Iterator[txnq.Producer]:
    with client.producer("orders", name="p1") as producer:
        yield producer


# -- unknown topics ------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c: c.producer("nope"), id="producer"),
        pytest.param(lambda c: c.subscribe("nope", "billing", **FAST), id="subscribe"),
        pytest.param(lambda c: c.admin.describe_topic("nope"), id="describe"),
        pytest.param(lambda c: c.admin.update_topic("nope", partitions=4), id="update"),
        pytest.param(lambda c: c.admin.delete_topic("nope"), id="delete"),
        pytest.param(lambda c: c.admin.list_subscriptions("nope"), id="list-subscriptions"),
        pytest.param(lambda c: c.admin.reset_subscription("nope", "billing"), id="reset"),
    ],
)
def test_an_unknown_topic_is_reported_with_how_to_create_it(
    client: txnq.Client, dsn: str, call: Any
) -> None:
    with nothing_written(dsn), pytest.raises(errors.TopicNotFoundError, match="create_topic"):
        call(client)


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c: c.admin.reset_subscription("orders", "nobody"), id="reset"),
        pytest.param(lambda c: c.admin.delete_subscription("orders", "nobody"), id="delete"),
    ],
)
def test_an_unknown_subscription_is_reported(client: txnq.Client, dsn: str, call: Any) -> None:
    with (
        nothing_written(dsn),
        pytest.raises(errors.SubscriptionNotFoundError, match="subscribe to create it"),
    ):
        call(client)


# -- names -----------------------------------------------------------------------


NAMED_CALLS = [
    pytest.param(lambda c, name: c.admin.create_topic(name), id="topic"),
    pytest.param(lambda c, name: c.subscribe("orders", name, **FAST), id="subscription"),
    pytest.param(lambda c, name: c.producer("orders", name=name), id="producer"),
    pytest.param(
        lambda c, name: c.subscribe("orders", "billing", consumer_name=name, **FAST), id="consumer"
    ),
]


@pytest.mark.parametrize("call", NAMED_CALLS)
@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_bad_name_is_refused_with_the_naming_rule(
    client: txnq.Client, dsn: str, call: Any, name: str
) -> None:
    with nothing_written(dsn), pytest.raises(errors.InvalidNameError, match="A-Z a-z 0-9"):
        call(client, name)


@pytest.mark.parametrize("call", NAMED_CALLS)
def test_a_name_that_is_no_str_is_refused(client: txnq.Client, dsn: str, call: Any) -> None:
    assert_each_refused(
        dsn,
        lambda name: call(client, name),
        [42, b"orders"],
        "must be a str",
        errors.InvalidNameError,
    )


def test_a_name_of_200_characters_is_accepted(client: txnq.Client) -> None:
    name = "x" * 200
    client.admin.create_topic(name)
    with client.producer(name, name=name) as producer:
        producer.send(b"ok")
    client.subscribe(name, name, consumer_name=name, **FAST).close()


# -- payloads, keys, properties, event times ------------------------------------


def test_an_oversized_payload_is_refused_and_the_largest_allowed_one_is_sent(
    producer: txnq.Producer, dsn: str
) -> None:
    with nothing_written(dsn), pytest.raises(errors.MessageTooLargeError, match="split it"):
        producer.send(b"x" * 1025)
    with nothing_written(dsn), pytest.raises(errors.MessageTooLargeError, match="1024 bytes"):
        producer.send("é" * 513)  # 1026 bytes once encoded

    assert producer.send(b"x" * 1024).offset == 0


def test_a_payload_that_is_neither_bytes_nor_str_is_refused(
    producer: txnq.Producer, dsn: str
) -> None:
    assert_each_refused(dsn, producer.send, [42, {"a": 1}, None, 1.5, [b"x"]], "serialise it")


def test_a_key_that_is_neither_str_nor_bytes_is_refused(producer: txnq.Producer, dsn: str) -> None:
    assert_each_refused(
        dsn, lambda key: producer.send(b"x", key=key), [42, 1.5, ["k"], {"k": "v"}], "str or bytes"
    )


def test_properties_that_are_not_a_dict_of_str_are_refused(
    producer: txnq.Producer, dsn: str
) -> None:
    assert_each_refused(
        dsn,
        lambda properties: producer.send(b"x", properties=properties),
        [["a"], "a=b", {"a": 1}, {1: "a"}, {"a": None}, {"a": b"1"}],
        r"dict\[str, str\]|map str to str",
    )


def test_an_event_time_that_is_no_aware_time_is_refused(producer: txnq.Producer, dsn: str) -> None:
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match="timezone-aware"):
        producer.send(b"x", event_time=datetime(2024, 1, 1))
    assert_each_refused(
        dsn, lambda when: producer.send(b"x", event_time=when), ["2024-01-01", True], "datetime"
    )


@pytest.mark.parametrize(
    ("partition", "phrase"),
    [
        pytest.param(2, "partitions 0..1", id="too-high"),
        pytest.param(-1, "partitions 0..1", id="negative"),
        pytest.param("0", "must be an int", id="str"),
        pytest.param(True, "must be an int", id="bool"),
    ],
)
def test_sending_to_a_partition_the_topic_does_not_have_is_refused(
    producer: txnq.Producer, dsn: str, partition: object, phrase: str
) -> None:
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match=phrase):
        producer.send(b"x", partition=partition)  # type: ignore[arg-type]


def test_a_callback_that_is_not_callable_is_refused(producer: txnq.Producer, dsn: str) -> None:
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match="callable"):
        producer.send_async(b"x", callback="print")  # type: ignore[arg-type]


# -- durations, sizes and partition counts ---------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c, d: c.admin.create_topic("t", ttl=d), id="ttl"),
        pytest.param(lambda c, d: c.producer("orders", batching_max_delay=d), id="batching_delay"),
        pytest.param(lambda c, d: c.producer("orders", send_timeout=d), id="send_timeout"),
        pytest.param(lambda c, d: c.subscribe("orders", "s", lease=d), id="lease"),
        pytest.param(lambda c, d: c.subscribe("orders", "s", poll_interval=d), id="poll_interval"),
        pytest.param(
            lambda c, d: c.subscribe("orders", "s", negative_ack_redelivery_delay=d),
            id="nack_delay",
        ),
    ],
)
def test_a_bad_duration_is_refused_with_an_example_of_a_good_one(
    client: txnq.Client, dsn: str, call: Any
) -> None:
    assert_each_refused(dsn, lambda d: call(client, d), BAD_DURATIONS, "'30s'|non-negative")


def test_a_bad_retention_is_refused(client: txnq.Client, dsn: str) -> None:
    assert_each_refused(
        dsn,
        lambda r: client.admin.create_topic("t", retention=r),
        ["abc", -2, "5 parsecs"],
        "retention",
    )


@pytest.mark.parametrize(
    "call",
    [
        pytest.param(lambda c, s: c.admin.create_topic("t", max_message_bytes=s), id="max_bytes"),
        pytest.param(lambda c, s: c.admin.create_topic("t", retention_size=s), id="retention"),
        pytest.param(lambda c, s: c.producer("orders", batching_max_bytes=s), id="batch_bytes"),
    ],
)
def test_a_bad_size_is_refused_with_an_example_of_a_good_one(
    client: txnq.Client, dsn: str, call: Any
) -> None:
    assert_each_refused(dsn, lambda s: call(client, s), BAD_SIZES, "'5MiB'|negative")


@pytest.mark.parametrize("size", [0, "10MiB"], ids=["zero", "above-MAX_MESSAGE_BYTES"])
def test_max_message_bytes_must_be_within_the_server_limit(
    client: txnq.Client, dsn: str, size: object
) -> None:
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match="between 1 and"):
        client.admin.create_topic("t", max_message_bytes=size)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("partitions", "phrase"),
    [
        pytest.param(0, "1 to 4096", id="zero"),
        pytest.param(-1, "1 to 4096", id="negative"),
        pytest.param(5000, "1 to 4096", id="too-many"),
        pytest.param("4", "must be an int", id="str"),
        pytest.param(1.5, "must be an int", id="float"),
        pytest.param(True, "must be an int", id="bool"),
    ],
)
def test_a_bad_partition_count_is_refused(
    client: txnq.Client, dsn: str, partitions: object, phrase: str
) -> None:
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match=phrase):
        client.admin.create_topic("t", partitions=partitions)  # type: ignore[arg-type]
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match=phrase):
        client.admin.update_topic("orders", partitions=partitions)  # type: ignore[arg-type]


# -- producer and consumer options -------------------------------------------------


@pytest.mark.parametrize(
    ("options", "phrase"),
    [
        pytest.param({"subscription_type": "fanout"}, "must be one of", id="type"),
        pytest.param({"subscription_type": "Exclusive"}, "must be one of", id="type-case"),
        pytest.param({"subscription_type": None}, "must be one of", id="type-None"),
        pytest.param(
            {"ack_timeout": "1s"}, "for shared and key_shared", id="ack-timeout-exclusive"
        ),
        pytest.param(
            {"subscription_type": "shared", "ack_timeout": "0s"},
            "ack_timeout",
            id="ack-timeout-zero",
        ),
        pytest.param(
            {"subscription_type": "shared", "dead_letter_policy": 3},
            "DeadLetterPolicy",
            id="dead-letter-policy-type",
        ),
        pytest.param({"isolation": "serializable"}, "must be one of", id="isolation"),
        pytest.param({"initial_position": "middle"}, "must be one of", id="position"),
        pytest.param({"initial_position": None}, "must be one of", id="position-None"),
        pytest.param({"receiver_queue_size": 0}, "at least 1", id="queue-size"),
        pytest.param({"priority": "high"}, "must be an int", id="priority"),
    ],
)
def test_a_bad_consumer_option_is_refused(
    client: txnq.Client, dsn: str, options: dict[str, Any], phrase: str
) -> None:
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match=phrase):
        client.subscribe("orders", "billing", **options)


@pytest.mark.parametrize(
    ("options", "phrase"),
    [
        pytest.param({"batching_max_messages": 0}, "positive int", id="batch-messages"),
        pytest.param({"max_pending_messages": "many"}, "positive int", id="pending"),
        pytest.param({"routing_mode": "random"}, "must be one of", id="routing"),
        pytest.param({"encoding": "klingon"}, "unknown encoding", id="encoding"),
        pytest.param({"send_timeout": 0}, "longer than zero", id="send-timeout-zero"),
    ],
)
def test_a_bad_producer_option_is_refused(
    client: txnq.Client, dsn: str, options: dict[str, Any], phrase: str
) -> None:
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match=phrase):
        client.producer("orders", **options)


def test_attaching_with_another_type_while_consumers_are_connected_is_refused(
    client: txnq.Client, dsn: str
) -> None:
    with (
        client.subscribe("orders", "billing", "exclusive", **FAST),
        nothing_written(dsn),
        pytest.raises(errors.SubscriptionTypeMismatchError, match="close the other consumers"),
    ):
        client.subscribe("orders", "billing", "failover", **FAST)
    assert [s.subscription_type for s in client.admin.list_subscriptions("orders")] == ["exclusive"]


def test_a_bad_receive_timeout_or_batch_size_is_refused(client: txnq.Client, dsn: str) -> None:
    with client.subscribe("orders", "billing", **FAST) as consumer:
        assert_each_refused(
            dsn, lambda t: consumer.receive(timeout=t), ["abc", -1, "5 parsecs"], "timeout"
        )
        assert_each_refused(
            dsn, lambda n: consumer.batch_receive(max_messages=n), [0, -1, "9"], "positive int"
        )


def test_a_bad_seek_target_is_refused(client: txnq.Client, dsn: str) -> None:
    targets = ["middle", -1, datetime(2024, 1, 1), 1.5]
    phrase = "earliest|>= 0|timezone-aware"
    with client.subscribe("orders", "billing", **FAST) as consumer:
        assert_each_refused(dsn, consumer.seek, targets, phrase)
        assert_each_refused(
            dsn, lambda t: client.admin.reset_subscription("orders", "billing", t), targets, phrase
        )


# -- acknowledgements -------------------------------------------------------------


@pytest.fixture
def consumer_with_messages(
    client: txnq.Client, producer: txnq.Producer
) -> Iterator[tuple[txnq.Consumer, list[txnq.Message]]]:
    for partition in (0, 1):
        producer.send(f"m{partition}", partition=partition)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        yield consumer, sorted(receive_messages(consumer, 2), key=lambda m: m.message_id)


def test_acknowledging_a_message_of_another_topic_is_refused(
    client: txnq.Client,
    dsn: str,
    consumer_with_messages: tuple[txnq.Consumer, list[txnq.Message]],
) -> None:
    consumer, _ = consumer_with_messages
    client.admin.create_topic("audit")
    with client.producer("audit") as producer:
        producer.send(b"audit event")
    with client.subscribe("audit", "billing", initial_position="earliest", **FAST) as other:
        (foreign,) = receive_messages(other, 1)

        with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match="not from"):
            consumer.acknowledge(foreign)
        with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match="not from"):
            consumer.acknowledge_cumulative(foreign)
        with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match="not from"):
            consumer.negative_acknowledge(foreign)


@pytest.mark.parametrize(
    "item",
    ["orders:0:0:0", 0, MessageId("orders", 5, 0, 0)],
    ids=["str", "int", "partition-out-of-range"],
)
def test_acknowledging_something_that_is_no_message_of_the_topic_is_refused(
    dsn: str,
    consumer_with_messages: tuple[txnq.Consumer, list[txnq.Message]],
    item: object,
) -> None:
    consumer, _ = consumer_with_messages
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError):
        consumer.acknowledge(item)  # type: ignore[arg-type]


def test_acknowledging_a_message_that_was_never_written_is_refused(
    dsn: str, consumer_with_messages: tuple[txnq.Consumer, list[txnq.Message]]
) -> None:
    consumer, _ = consumer_with_messages
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match="nothing was"):
        consumer.acknowledge(MessageId("orders", 0, 99, 0))


def test_a_list_of_acks_with_one_bad_item_acknowledges_nothing(
    dsn: str, consumer_with_messages: tuple[txnq.Consumer, list[txnq.Message]]
) -> None:
    consumer, (first, _) = consumer_with_messages
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError):
        consumer.acknowledge([first, "junk"])  # type: ignore[list-item]


# Through a cluster's proxy partitions 0 and 1 live on different shards, which
# commit each on its own: a list of plain acks across them is not atomic there
# (docs/cluster.md, Limits); in a transaction it is.
@needs_cluster_slice("atomic_acks")
def test_a_list_of_acks_with_a_bad_item_on_another_partition_acknowledges_nothing(
    dsn: str, consumer_with_messages: tuple[txnq.Consumer, list[txnq.Message]]
) -> None:
    consumer, (first, _) = consumer_with_messages
    # The bad item is on another partition: its ack fails in PostgreSQL, after
    # partition 0's would already have been written.
    with nothing_written(dsn), pytest.raises(errors.InvalidArgumentError, match="nothing was"):
        consumer.acknowledge([first, MessageId("orders", 1, 99, 0)])


# -- the client ------------------------------------------------------------------


@pytest.mark.parametrize("dsn_value", [42, b"postgresql://localhost/x"], ids=["int", "bytes"])
def test_a_client_needs_a_str_dsn(dsn_value: object) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="dsn must be a str"):
        txnq.Client(dsn_value)  # type: ignore[arg-type]


def test_a_malformed_dsn_is_a_configuration_error() -> None:
    with pytest.raises(errors.ConfigurationError, match="DSN"):
        txnq.Client("this is no dsn")


def test_an_unreachable_server_is_reported_with_what_to_check() -> None:
    with pytest.raises(errors.ServerUnavailableError, match="TXNQ_DSN"):
        txnq.Client("postgresql://nobody@127.0.0.1:1/txnq?connect_timeout=2")


# -- use after close -----------------------------------------------------------------


def test_a_closed_producer_refuses_to_send(client: txnq.Client, dsn: str) -> None:
    producer = client.producer("orders")
    producer.close()
    producer.close()  # twice is fine

    with nothing_written(dsn), pytest.raises(errors.ClosedError, match="is closed"):
        producer.send(b"x")
    with nothing_written(dsn), pytest.raises(errors.ClosedError, match="is closed"):
        producer.send_async(b"x")
    with pytest.raises(errors.ClosedError):
        producer.flush()


def test_a_closed_consumer_refuses_to_receive_and_acknowledge(
    dsn: str, consumer_with_messages: tuple[txnq.Consumer, list[txnq.Message]]
) -> None:
    consumer, (first, _) = consumer_with_messages
    consumer.close()

    with nothing_written(dsn), pytest.raises(errors.ClosedError, match="is closed"):
        consumer.acknowledge(first)
    with pytest.raises(errors.ClosedError, match="is closed"):
        consumer.receive(timeout=0.1)


def test_a_closed_consumer_does_not_hand_out_what_it_had_prefetched(
    client: txnq.Client, producer: txnq.Producer
) -> None:
    for i in range(3):
        producer.send(f"m{i}", partition=0)
    consumer = client.subscribe("orders", "billing", initial_position="earliest", **FAST)
    receive_messages(consumer, 1)  # the other two wait in the receive queue
    consumer.close()

    with pytest.raises(errors.ClosedError, match="is closed"):
        consumer.receive(timeout=0.1)
    with pytest.raises(errors.ClosedError, match="is closed"):
        consumer.batch_receive(timeout=0.1)


def test_a_closed_client_refuses_everything(dsn: str) -> None:
    client = txnq.Client(dsn)
    client.admin.create_topic("orders")
    producer = client.producer("orders")
    consumer = client.subscribe("orders", "billing", **FAST)
    client.close()

    with nothing_written(dsn):
        for call in (
            lambda: client.producer("orders"),
            lambda: client.subscribe("orders", "billing"),
            lambda: client.admin.list_topics(),
            lambda: client.admin.create_topic("other"),
            lambda: producer.send(b"x"),
            lambda: consumer.receive(timeout=0.1),
        ):
            with pytest.raises(errors.ClosedError, match="closed"):
                call()
    # Closing the client closed its consumer (on every shard of a cluster).
    assert [row_counts(database)["consumers"] for database in databases(dsn)] == [0] * len(
        databases(dsn)
    )
