"""A background thread or task that dies never leaves a consumer returning
None forever or a producer queueing for good: the next public call raises
BackgroundFailureError naming the cause, and close() still works.

The failure is injected with TXNQ_FAILPOINT (txnq/failpoints.py,
raise_if_armed): ``consumer_fetch`` raises in a consumer's fetch loop,
``producer_flush`` in a producer's flush thread or task -- an unexpected
error, as a bug would raise.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql_value
from txnq import errors
from txnq.aio import Client as AsyncClient
from txnq.failpoints import FailpointError

FAST = {"poll_interval": "200ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("jobs", partitions=2)
        yield client


def entries(dsn: str) -> int:
    return int(sql_value(dsn, "SELECT count(*) FROM txnq.entries WHERE marker IS NULL"))


@pytest.mark.parametrize("subscription_type", ["exclusive", "shared"])
def test_a_consumer_whose_fetch_thread_dies_raises_at_the_next_call(
    client: txnq.Client, monkeypatch: pytest.MonkeyPatch, subscription_type: str
) -> None:
    with client.producer("jobs") as producer:
        for i in range(4):
            producer.send(f"m{i}", partition=i % 2)
    consumer = client.subscribe(
        "jobs", "workers", subscription_type, initial_position="earliest", **FAST
    )
    first = receive_messages(consumer, 1)[0]
    consumer.acknowledge(first)
    monkeypatch.setenv("TXNQ_FAILPOINT", "consumer_fetch")
    started = time.monotonic()
    with pytest.raises(errors.BackgroundFailureError) as caught:
        for _ in range(10):  # what was prefetched comes first, then the failure
            consumer.receive(timeout=5)
    assert time.monotonic() - started < 10
    assert isinstance(caught.value.__cause__, FailpointError)
    assert "FailpointError" in str(caught.value) and "subscribe again" in str(caught.value)
    with pytest.raises(errors.BackgroundFailureError):
        consumer.receive(timeout=0)
    with pytest.raises(errors.BackgroundFailureError):
        consumer.acknowledge(first)
    monkeypatch.delenv("TXNQ_FAILPOINT")
    consumer.close()  # still works, and releases what it held
    with client.subscribe(
        "jobs", "workers", subscription_type, initial_position="earliest", **FAST
    ) as again:
        rest = receive_messages(again, 3)
        expected = sorted({b"m0", b"m1", b"m2", b"m3"} - {first.value})
        assert sorted(m.value for m in rest) == expected
        again.acknowledge(rest)
        assert_nothing_more(again, 0.3)


@pytest.mark.parametrize("subscription_type", ["failover", "key_shared"])
def test_an_asyncio_consumer_whose_fetch_task_dies_raises_at_the_next_call(
    client: txnq.Client, dsn: str, monkeypatch: pytest.MonkeyPatch, subscription_type: str
) -> None:
    with client.producer("jobs") as producer:
        producer.send("m0")

    async def main() -> None:
        async with AsyncClient(dsn) as aclient:
            consumer = await aclient.subscribe(
                "jobs", "workers", subscription_type, initial_position="earliest", **FAST
            )
            assert await consumer.receive(timeout=5) is not None
            monkeypatch.setenv("TXNQ_FAILPOINT", "consumer_fetch")
            with pytest.raises(errors.BackgroundFailureError) as caught:
                await consumer.receive(timeout=5)
            assert isinstance(caught.value.__cause__, FailpointError)
            with pytest.raises(errors.BackgroundFailureError):
                await consumer.batch_receive(10, timeout=0)
            monkeypatch.delenv("TXNQ_FAILPOINT")
            await consumer.close()

    asyncio.run(asyncio.wait_for(main(), 60))


def test_a_producer_whose_flush_thread_dies_fails_its_queued_sends(
    client: txnq.Client, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    producer = client.producer("jobs", batching_max_delay="50ms")
    reported: list[BaseException | None] = []
    monkeypatch.setenv("TXNQ_FAILPOINT", "producer_flush")
    pending = producer.send_async(b"lost", callback=lambda exc, _: reported.append(exc))
    with pytest.raises(errors.BackgroundFailureError) as caught:
        pending.result(timeout=10)  # settled, not left waiting
    assert isinstance(caught.value.__cause__, FailpointError)
    assert "create a new producer" in str(caught.value)
    assert len(reported) == 1 and isinstance(reported[0], errors.BackgroundFailureError)
    monkeypatch.delenv("TXNQ_FAILPOINT")
    with pytest.raises(errors.BackgroundFailureError):
        producer.send_async(b"next")
    with pytest.raises(errors.BackgroundFailureError):
        producer.send(b"next")
    with pytest.raises(errors.BackgroundFailureError):
        producer.flush()
    producer.close()
    assert entries(dsn) == 0
    with client.producer("jobs") as fresh:
        fresh.send(b"works")
    assert entries(dsn) == 1


def test_an_asyncio_producer_whose_flush_task_dies_fails_its_queued_sends(
    client: txnq.Client, dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def main() -> None:
        async with AsyncClient(dsn) as aclient:
            producer = await aclient.producer("jobs", batching_max_delay="50ms")
            monkeypatch.setenv("TXNQ_FAILPOINT", "producer_flush")
            pending = await producer.send_async(b"lost")
            with pytest.raises(errors.BackgroundFailureError) as caught:
                await asyncio.wait_for(pending, 10)
            assert isinstance(caught.value.__cause__, FailpointError)
            monkeypatch.delenv("TXNQ_FAILPOINT")
            with pytest.raises(errors.BackgroundFailureError):
                await producer.send_async(b"next")
            with pytest.raises(errors.BackgroundFailureError):
                await producer.flush()
            await producer.close()

    asyncio.run(asyncio.wait_for(main(), 60))
    assert entries(dsn) == 0
