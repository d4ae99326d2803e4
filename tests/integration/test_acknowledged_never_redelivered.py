"""Regression (found by the API fuzzer, issue 17): a message acknowledged
outside a transaction is never handed out again by the consumer that
acknowledged it. Shrunk case: two messages of one key are received; the
first is acknowledged in a transaction that aborts, which rewinds the
partition, so the receive queue is filled again from the cursor with both;
the application then acknowledges the second (it had received it before the
rewind) and receive() handed it back. The consumer now remembers its own
acknowledgements above the mark-delete offset, as Pulsar's ack tracker does
for its isDuplicate check, and drops such copies from its queue.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import txnq
import txnq.aio
from tests.helpers import assert_nothing_more, receive_messages, wait_until

FAST = {"poll_interval": "100ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("t", partitions=2)
        yield client


def _send_two_of_one_key(client: txnq.Client) -> None:
    with client.producer("t") as producer:
        producer.send(b"v1", key="a")
        producer.send(b"v2", key="a")


def test_a_message_acknowledged_after_an_abort_rewound_is_not_delivered_again(
    client: txnq.Client,
) -> None:
    _send_two_of_one_key(client)
    consumer = client.subscribe("t", "s", initial_position="earliest", **FAST)
    v1, v2 = receive_messages(consumer, 2)
    txn = client.new_transaction()
    consumer.acknowledge(v1, txn=txn)
    txn.abort()  # rewinds the partition: v1 and v2 are fetched again
    wait_until(lambda: len(consumer._queue) == 2, what="the queue refilled after the rewind")
    client.new_transaction().commit()
    consumer.acknowledge(v2)

    again = receive_messages(consumer, 1)
    assert [m.value for m in again] == [b"v1"]
    assert_nothing_more(consumer)
    consumer.acknowledge(again[0])
    consumer.close()
    with client.subscribe("t", "s") as fresh:
        assert fresh.receive(timeout=0.5) is None


def test_a_cumulative_ack_drops_what_the_queue_holds_below_it(client: txnq.Client) -> None:
    with client.producer("t") as producer:
        for i in range(5):
            producer.send(f"m{i}".encode(), partition=0)
    consumer = client.subscribe("t", "s", initial_position="earliest", **FAST)
    first = receive_messages(consumer, 5)
    txn = client.new_transaction()
    consumer.acknowledge(first[0], txn=txn)
    txn.abort()  # the queue is refilled with m0..m4
    wait_until(lambda: len(consumer._queue) == 5, what="the queue refilled after the rewind")
    consumer.acknowledge_cumulative(first[3])
    again = receive_messages(consumer, 1)
    assert [m.value for m in again] == [b"m4"]
    assert_nothing_more(consumer)


def test_the_asyncio_consumer_does_not_deliver_an_acknowledged_message_again(dsn: str) -> None:
    async def main() -> list[bytes]:
        async with txnq.aio.Client(dsn) as client:
            await client.admin.create_topic("t", partitions=2)
            async with await client.producer("t") as producer:
                await producer.send(b"v1", key="a")
                await producer.send(b"v2", key="a")
            consumer = await client.subscribe("t", "s", initial_position="earliest", **FAST)
            v1 = await consumer.receive(timeout=5)
            v2 = await consumer.receive(timeout=5)
            assert v1 is not None and v2 is not None
            txn = await client.new_transaction()
            await consumer.acknowledge(v1, txn=txn)
            await txn.abort()
            for _ in range(250):  # until the rewind refilled the queue (bounded: 5 s)
                if len(consumer._queue) == 2:
                    break
                await asyncio.sleep(0.02)
            assert len(consumer._queue) == 2, "the queue was not refilled after the rewind"
            await consumer.acknowledge(v2)
            seen = []
            for _ in range(3):
                message = await consumer.receive(timeout=0.5)
                if message is not None:
                    seen.append(message.value)
            await consumer.close()
            return seen

    assert asyncio.run(asyncio.wait_for(main(), 60)) == [b"v1"]
