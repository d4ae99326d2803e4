"""No stored row can stall delivery: a message the client cannot decode (an
event time after year 9999, properties that are not an object of strings, a
publish time of 'infinity' -- rows an older version, another language or a
hand edit by the table owner may have stored) becomes one
MessageDecodeError from receive() / batch_receive(), or goes to the
dead-letter topic, and every other message keeps flowing, on every
subscription type, in the sync and the asyncio client.

The bad rows are written with plain SQL as the table owner (an UPDATE of an
entry the producer wrote), not through txnq's functions, which refuse them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql
from txnq import errors
from txnq.aio import Client as AsyncClient
from txnq.cli import app

FAST = {"poll_interval": "200ms"}
TYPES = ("exclusive", "failover", "shared", "key_shared")

#: (field named in the error, SET clause that breaks entry 1's only message)
CORRUPTIONS = {
    "event-time-infinity": ("event_time", "event_times = ARRAY['infinity']::timestamptz[]"),
    "event-time-minus-infinity": ("event_time", "event_times = ARRAY['-infinity']::timestamptz[]"),
    "event-time-year-10000": (
        "event_time",
        "event_times = ARRAY['10000-01-01 04:00:00+00']::timestamptz[]",
    ),
    "properties-array": ("properties", "properties = ARRAY['[1, 2]']::jsonb[]"),
    "properties-number-value": ("properties", "properties = ARRAY['{\"a\": 1}']::jsonb[]"),
    "properties-null-value": ("properties", "properties = ARRAY['{\"a\": null}']::jsonb[]"),
    "properties-string": ("properties", "properties = ARRAY['\"text\"']::jsonb[]"),
    "publish-time-infinity": ("publish_time", "publish_time = 'infinity'"),
}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        yield client


def three_entries(client: txnq.Client, dsn: str, corruption: str) -> txnq.MessageId:
    """Topic "jobs" (1 partition) with m0, m1, m2 as three entries; m1 broken.
    Returns m1's id."""
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        ids = [producer.send(f"m{i}", key="k", properties={"n": str(i)}) for i in range(3)]
    _, set_clause = CORRUPTIONS[corruption]
    changed = sql(
        dsn,
        f"UPDATE txnq.entries SET {set_clause} WHERE entry_offset = %s"
        " AND topic_id = (SELECT topic_id FROM txnq.topics WHERE name = 'jobs') RETURNING 1",
        (ids[1].offset,),
    )
    assert changed == [(1,)]
    return ids[1]


def subscribe(client: txnq.Client, subscription_type: str, **options: object) -> txnq.Consumer:
    return client.subscribe(
        "jobs",
        "workers",
        subscription_type,
        initial_position="earliest",
        **{**FAST, **options},  # type: ignore[arg-type]
    )


def receive_around(consumer: txnq.Consumer, bad: txnq.MessageId) -> errors.MessageDecodeError:
    """m0, then the error for ``bad``, then m2; acknowledges all three (the
    undecodable one by its id). Returns the error."""
    first = consumer.receive(timeout=5)
    assert first is not None and first.value == b"m0"
    with pytest.raises(errors.MessageDecodeError) as caught:
        consumer.receive(timeout=5)
    third = consumer.receive(timeout=5)
    assert third is not None and third.value == b"m2"
    assert third.properties == {"n": "2"}
    consumer.acknowledge([first, caught.value.message_id, third])
    return caught.value


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
@pytest.mark.parametrize("subscription_type", ["exclusive", "shared"])
def test_an_undecodable_message_is_an_error_and_the_others_keep_flowing(
    client: txnq.Client, dsn: str, subscription_type: str, corruption: str
) -> None:
    bad = three_entries(client, dsn, corruption)
    with subscribe(client, subscription_type) as consumer:
        error = receive_around(consumer, bad)
        assert_nothing_more(consumer, 0.3)
    assert error.message_id == bad
    assert error.field == CORRUPTIONS[corruption][0]
    assert error.value == b"m1" and error.key_bytes == b"k"
    text = str(error)
    assert str(bad) in text and "acknowledge" in text and "dead_letter_policy" in text
    # Acknowledged by its id: it is never delivered again.
    with subscribe(client, subscription_type) as again:
        assert_nothing_more(again, 0.5)


@pytest.mark.parametrize("subscription_type", ["failover", "key_shared"])
@pytest.mark.parametrize("corruption", ["event-time-infinity", "properties-array"])
def test_failover_and_key_shared_deliver_past_an_undecodable_message(
    client: txnq.Client, dsn: str, subscription_type: str, corruption: str
) -> None:
    bad = three_entries(client, dsn, corruption)
    with subscribe(client, subscription_type) as consumer:
        assert receive_around(consumer, bad).message_id == bad
    with subscribe(client, subscription_type) as again:
        assert_nothing_more(again, 0.5)


@pytest.mark.parametrize("subscription_type", TYPES)
def test_an_unacknowledged_undecodable_message_is_delivered_again_as_an_error(
    client: txnq.Client, dsn: str, subscription_type: str
) -> None:
    """Not acknowledged, it comes back to the next consumer (as any message
    does): the application decides, nothing is skipped silently."""
    bad = three_entries(client, dsn, "event-time-infinity")
    with subscribe(client, subscription_type) as consumer:
        receive_around_without_ack(consumer)
    with subscribe(client, subscription_type) as again:
        with pytest.raises(errors.MessageDecodeError) as caught:
            again.receive(timeout=5)
        assert caught.value.message_id == bad
        again.acknowledge(caught.value.message_id)
        assert_nothing_more(again, 0.3)


@pytest.mark.parametrize("subscription_type", TYPES)
def test_one_bad_message_of_a_batch_entry_spoils_only_itself(
    client: txnq.Client, dsn: str, subscription_type: str
) -> None:
    """A producer batch is one entry: its other messages (a NULL or JSON null
    properties element is no properties, {}) are delivered."""
    client.admin.create_topic("jobs")
    with client.producer("jobs", batching_max_delay="1s") as producer:
        pending = [producer.send_async(f"b{i}", properties={"n": str(i)}) for i in range(4)]
        producer.flush()
    ids = [p.result() for p in pending]
    assert len({i.offset for i in ids}) == 1, "the four messages are one entry"
    sql(
        dsn,
        "UPDATE txnq.entries"
        " SET properties = ARRAY[NULL, '[1]', 'null', '{\"k\": \"v\"}']::jsonb[],"
        " event_times = ARRAY[NULL, NULL, 'infinity', NULL]::timestamptz[]"
        " WHERE entry_offset = %s",
        (ids[0].offset,),
    )
    with subscribe(client, subscription_type) as consumer:
        batch = consumer.batch_receive(10, timeout=5)
        assert [m.value for m in batch] == [b"b0"]  # stops before the bad message
        assert batch[0].properties == {}
        failed = []
        for _ in range(2):
            with pytest.raises(errors.MessageDecodeError) as caught:
                consumer.batch_receive(10, timeout=5)
            failed.append((caught.value.message_id, caught.value.field))
        assert failed == [(ids[1], "properties"), (ids[2], "event_time")]
        last = receive_messages(consumer, 1)[0]
        assert last.value == b"b3" and last.properties == {"k": "v"}
        consumer.acknowledge([batch[0], ids[1], ids[2], last])
    with subscribe(client, subscription_type) as again:
        assert_nothing_more(again, 0.5)


@pytest.mark.parametrize("subscription_type", ["shared", "key_shared"])
@pytest.mark.parametrize("corruption", ["event-time-year-10000", "properties-number-value"])
def test_an_undecodable_message_goes_to_the_dead_letter_topic_with_a_policy(
    client: txnq.Client, dsn: str, subscription_type: str, corruption: str
) -> None:
    bad = three_entries(client, dsn, corruption)
    policy = txnq.DeadLetterPolicy(max_redeliver_count=5)
    with subscribe(client, subscription_type, dead_letter_policy=policy) as consumer:
        good = receive_messages(consumer, 2)
        assert [m.value for m in good] == [b"m0", b"m2"]
        consumer.acknowledge(good)
        assert_nothing_more(consumer, 0.3)
    with client.subscribe(
        "jobs-workers-DLQ", "inspect", initial_position="earliest", **FAST
    ) as dead:
        letter = receive_messages(dead, 1)[0]  # decodable: the bad value is kept as text
        assert_nothing_more(dead, 0.3)
    assert letter.value == b"m1" and letter.key == "k"
    assert letter.properties["ORIGIN_MESSAGE_ID"] == str(bad)
    assert "cannot be decoded" in letter.properties["DEAD_LETTER_REASON"]
    if corruption == "event-time-year-10000":
        # The copy has no event time; the reason says what it was.
        assert letter.event_time is None
        assert "event_time 10000-01-01 04:00:00+00" in letter.properties["DEAD_LETTER_REASON"]
        assert letter.properties["n"] == "1"
    else:
        # dead_letter_v2 (revision 0015) keeps the values as strings.
        assert letter.properties["a"] == "1"
        assert '{"a": 1}' in letter.properties["DEAD_LETTER_REASON"]
    with subscribe(client, subscription_type, dead_letter_policy=policy) as again:
        assert_nothing_more(again, 0.5)


def test_a_message_dead_lettered_after_its_redeliveries_is_made_decodable_too(
    client: txnq.Client, dsn: str
) -> None:
    """claim_v2 moves a message past max_redeliver_count itself (in SQL,
    dead_letter_v2): the copy it writes to the dead-letter topic is decodable
    as well."""
    bad = three_entries(client, dsn, "properties-array")
    policy = txnq.DeadLetterPolicy(max_redeliver_count=0)
    sql(
        dsn,
        "UPDATE txnq.entries SET event_times = ARRAY['infinity']::timestamptz[]"
        " WHERE entry_offset = %s",
        (bad.offset,),
    )
    # Delivered once (as an error) to a consumer without the policy, not acknowledged.
    with subscribe(client, "shared") as consumer:
        receive_around_without_ack(consumer)
    with subscribe(client, "shared", dead_letter_policy=policy) as consumer:
        assert_nothing_more(consumer, 0.5)
    with client.subscribe(
        "jobs-workers-DLQ", "inspect", initial_position="earliest", **FAST
    ) as dead:
        letter = receive_messages(dead, 1)[0]
    assert letter.value == b"m1"
    assert letter.properties["ORIGINAL_PROPERTIES"] == "[1, 2]"
    assert letter.event_time is None


def receive_around_without_ack(consumer: txnq.Consumer) -> None:
    """m0 and m2 acknowledged, the undecodable m1 received and left unacknowledged."""
    first = consumer.receive(timeout=5)
    with pytest.raises(errors.MessageDecodeError):
        consumer.receive(timeout=5)
    third = consumer.receive(timeout=5)
    assert first is not None and third is not None
    consumer.acknowledge([first, third])


@pytest.mark.parametrize("subscription_type", ["exclusive", "shared"])
def test_txnq_consume_says_which_message_cannot_be_decoded_and_reads_on(
    client: txnq.Client, dsn: str, subscription_type: str
) -> None:
    bad = three_entries(client, dsn, "properties-array")
    runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})
    args = ["consume", "jobs", "-s", "cli", "-t", subscription_type, "--initial-position"]
    result = runner.invoke(app, [*args, "earliest", "--timeout", "1s", "--json", "--dsn", dsn])
    assert result.exit_code == 0, result.stderr
    assert [json.loads(line)["value"] for line in result.stdout.splitlines()] == ["m0", "m2"]
    assert f"{bad}: cannot be decoded: its properties [1, 2]" in result.stderr
    assert "Received and acknowledged 3 messages" in result.stderr
    again_cli = runner.invoke(app, [*args, "earliest", "--timeout", "500ms", "--dsn", dsn])
    assert again_cli.exit_code == 0 and "Received and acknowledged 0 messages" in again_cli.stderr


# -- the asyncio client ----------------------------------------------------------


@pytest.mark.parametrize("subscription_type", TYPES)
@pytest.mark.parametrize("corruption", ["event-time-infinity", "properties-array"])
def test_the_asyncio_consumer_delivers_past_an_undecodable_message(
    client: txnq.Client, dsn: str, subscription_type: str, corruption: str
) -> None:
    bad = three_entries(client, dsn, corruption)

    async def main() -> None:
        async with AsyncClient(dsn) as aclient:
            consumer = await aclient.subscribe(
                "jobs", "workers", subscription_type, initial_position="earliest", **FAST
            )
            async with consumer:
                first = await consumer.receive(timeout=5)
                assert first is not None and first.value == b"m0"
                with pytest.raises(errors.MessageDecodeError) as caught:
                    await consumer.receive(timeout=5)
                assert caught.value.message_id == bad
                batch = await consumer.batch_receive(10, timeout=5)
                assert [m.value for m in batch] == [b"m2"]
                await consumer.acknowledge([first, caught.value.message_id, *batch])
            consumer = await aclient.subscribe(
                "jobs", "workers", subscription_type, initial_position="earliest", **FAST
            )
            async with consumer:
                assert await consumer.receive(timeout=0.5) is None

    asyncio.run(asyncio.wait_for(main(), 60))


@pytest.mark.parametrize("subscription_type", ["shared", "key_shared"])
def test_the_asyncio_consumer_dead_letters_an_undecodable_message(
    client: txnq.Client, dsn: str, subscription_type: str
) -> None:
    bad = three_entries(client, dsn, "event-time-infinity")

    async def main() -> None:
        async with AsyncClient(dsn) as aclient:
            consumer = await aclient.subscribe(
                "jobs",
                "workers",
                subscription_type,
                initial_position="earliest",
                dead_letter_policy=txnq.DeadLetterPolicy(max_redeliver_count=1),
                **FAST,
            )
            async with consumer:
                got = [await consumer.receive(timeout=5) for _ in range(2)]
                assert [m.value for m in got if m is not None] == [b"m0", b"m2"]

    asyncio.run(asyncio.wait_for(main(), 60))
    with client.subscribe(
        "jobs-workers-DLQ", "inspect", initial_position="earliest", **FAST
    ) as dead:
        letter = receive_messages(dead, 1)[0]
    assert letter.properties["ORIGIN_MESSAGE_ID"] == str(bad)
    assert "event_time infinity" in letter.properties["DEAD_LETTER_REASON"]
    assert letter.event_time is None
