"""``txn.commit_async()``: a commit that carries the producer's batches runs
in the background while the caller goes on with the next transaction, on
both faces. What must hold: every transaction ends as ``commit()`` would have
ended it, the future says so, a producer's later messages are written after
the ones the commit carries, and a transaction whose commit is in flight
takes nothing more."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import psycopg
import pytest

import txnq
import txnq.aio
from tests.helpers import assert_nothing_more, expire_transaction, receive_messages, sql
from tests.integration.test_carried_commit import FAST, HELD
from tests.integration.test_carried_commit import client as client  # the fixture: topic "out"
from txnq import errors


def carried(dsn: str, txn: Any) -> bool:
    """Whether the transaction's entries were written by the PostgreSQL
    transaction that committed it (its commit carried them)."""
    rows = sql(
        dsn,
        "SELECT DISTINCT e.xmin::text = t.xmin::text FROM txnq.entries e "
        "JOIN txnq.transactions t ON (t.tc_id, t.txn_seq) = (e.txn_tc, e.txn_seq) "
        "WHERE e.txn_tc = %s AND e.txn_seq = %s",
        tuple(txn.txn_id),
    )
    return rows == [(True,)]


def values_by_partition(reader: Any, count: int) -> dict[int, list[bytes]]:
    found: dict[int, list[bytes]] = {}
    for message in receive_messages(reader, count):
        found.setdefault(message.message_id.partition, []).append(message.value)
    return found


def test_commits_in_flight_commit_every_transaction_in_the_producers_order(
    client: txnq.Client, dsn: str
) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", **HELD)
    txns, futures = [], []
    for t in range(5):
        txn = client.new_transaction()
        for i in range(6):
            producer.send_async(f"t{t}-{i}".encode(), partition=i % 3, txn=txn)
        futures.append(txn.commit_async())
        txns.append(txn)
        with pytest.raises(errors.TransactionEndedError):
            producer.send_async(b"too late", partition=0, txn=txn)

    for future in futures:
        assert future.result(10) is None
    assert [txn.state for txn in txns] == ["COMMITTED"] * 5
    assert all(carried(dsn, txn) for txn in txns)
    expected = {p: [f"t{t}-{i}".encode() for t in range(5) for i in (p, p + 3)] for p in range(3)}
    assert values_by_partition(reader, 30) == expected
    assert_nothing_more(reader, 0.2)


def test_a_later_transaction_waits_for_the_commit_in_flight(client: txnq.Client, dsn: str) -> None:
    """The commit in flight is held on its transaction row; meanwhile the
    next transaction queues on the same partition, and its commit waits: its
    entry comes after, and the first transaction takes no send, commit or
    abort while its commit is in flight."""
    producer = client.producer("out", **HELD)
    first = client.new_transaction()
    producer.send_async(b"first", partition=1, txn=first)
    with psycopg.connect(dsn) as holder:
        holder.execute(
            "SELECT 1 FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s FOR SHARE",
            tuple(first.txn_id),
        )
        in_flight = first.commit_async()
        assert first.state == "COMMITTING"
        for refused in (
            lambda: producer.send(b"no", partition=1, txn=first),
            first.commit,
            first.abort,
        ):
            with pytest.raises(errors.TransactionEndedError):
                refused()
        second = client.new_transaction()
        producer.send_async(b"second", partition=1, txn=second)
        later: list[Any] = []
        waiter = threading.Thread(target=lambda: later.append(second.commit_async()))
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive()  # waits for the producer, busy with the first commit
        assert not in_flight.done()
    waiter.join(10)
    assert in_flight.result(10) is None and later[0].result(10) is None
    assert (first.state, second.state) == ("COMMITTED", "COMMITTED")
    assert carried(dsn, first) and carried(dsn, second)
    rows = sql(
        dsn,
        "SELECT txn_seq FROM txnq.entries WHERE partition = 1 AND marker IS NULL "
        "ORDER BY entry_offset",
    )
    assert rows == [(first.txn_id.seq,), (second.txn_id.seq,)]


def test_the_future_of_a_commit_in_flight_cannot_be_cancelled(client: txnq.Client) -> None:
    """The commit holds the producer until its batches are written: a
    cancelled future must not leave it held."""
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", **HELD)
    txn = client.new_transaction()
    producer.send_async(b"kept", partition=0, txn=txn)

    future = txn.commit_async()

    assert future.cancel() is False
    assert future.result(10) is None
    producer.send(b"after", partition=0)  # the producer is free again
    assert [m.value for m in receive_messages(reader, 2)] == [b"kept", b"after"]


def test_closing_the_producer_waits_for_its_commit_in_flight(dsn: str) -> None:
    """Both faces: close() right after commit_async() returns once the commit ended."""
    with txnq.Client(dsn) as client:
        client.admin.create_topic("out", partitions=2)
        producer = client.producer("out", **HELD)
        txn = client.new_transaction()
        producer.send_async(b"sync", partition=0, txn=txn)
        future = txn.commit_async()
        producer.close()
        assert future.done() and future.result() is None and txn.state == "COMMITTED"

    async def main() -> tuple[bool, str]:
        async with txnq.aio.Client(dsn) as client:
            producer = await client.producer("out", **HELD)
            txn = await client.new_transaction()
            await producer.send_async(b"asyncio", partition=1, txn=txn)
            future = await txn.commit_async()
            await producer.close()
            return future.done() and future.result() is None, txn.state

    assert asyncio.run(main()) == (True, "COMMITTED")


def test_a_commit_that_cannot_carry_is_done_when_commit_async_returns(
    client: txnq.Client,
) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", **HELD)
    txn = client.new_transaction()
    producer.send(b"written at once", partition=0, txn=txn)
    producer.send_async(b"queued", partition=1, txn=txn)

    future = txn.commit_async()

    assert future.done() and future.result() is None
    assert txn.state == "COMMITTED"
    assert sorted(m.value for m in receive_messages(reader, 2)) == [b"queued", b"written at once"]


def test_a_commit_async_past_the_timeout_fails_its_future_and_the_producer_goes_on(
    client: txnq.Client, dsn: str
) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", **HELD)
    txn = client.new_transaction(timeout="1s")
    pending = producer.send_async(b"late", partition=1, txn=txn)
    expire_transaction(dsn, txn.txn_id)

    future = txn.commit_async()
    nxt = client.new_transaction()
    producer.send_async(b"next", partition=1, txn=nxt)

    # As commit(): the queued send fails on the timeout, so the commit aborts.
    raised = future.exception(10)
    assert isinstance(raised, errors.TransactionAbortedError)
    assert isinstance(raised.__cause__, errors.TransactionTimedOutError)
    assert txn.state == "ABORTED"
    assert isinstance(pending.exception(5), errors.TransactionTimedOutError)
    assert nxt.commit_async().result(10) is None
    assert [m.value for m in receive_messages(reader, 1)] == [b"next"]
    assert_nothing_more(reader, 0.3)


def test_an_asyncio_commit_in_flight_goes_on_when_its_future_is_cancelled(dsn: str) -> None:
    async def main() -> tuple[str, list[bytes]]:
        async with txnq.aio.Client(dsn) as client:
            await client.admin.create_topic("out", partitions=1)
            producer = await client.producer("out", **HELD)
            txn = await client.new_transaction()
            await producer.send_async(b"kept", txn=txn)
            future = await txn.commit_async()
            future.cancel()
            await producer.send(b"after")  # waits for the commit, then goes
            async with await client.subscribe("out", "reader", initial_position="earliest") as c:
                got: list[bytes] = []
                for _ in range(20):
                    if len(got) >= 2:
                        break
                    got += [m.value for m in await c.batch_receive(2 - len(got), timeout=0.5)]
            await producer.close()
            return txn.state, got

    state, got = asyncio.run(main())
    assert state == "COMMITTED"
    assert got == [b"kept", b"after"]


def test_the_asyncio_face_commits_in_flight_too(dsn: str) -> None:
    async def main() -> tuple[list[str], list[bool], dict[int, list[bytes]], bool]:
        async with txnq.aio.Client(dsn) as client:
            await client.admin.create_topic("out", partitions=2)
            producer = await client.producer("out", **HELD)
            txns, futures = [], []
            for t in range(4):
                txn = await client.new_transaction()
                for i in range(4):
                    await producer.send_async(f"a{t}-{i}".encode(), partition=i % 2, txn=txn)
                futures.append(await txn.commit_async())
                txns.append(txn)
            refused = False
            try:
                await producer.send_async(b"too late", partition=0, txn=txns[-1])
            except errors.TransactionEndedError:
                refused = True
            for future in futures:
                await future
            found: dict[int, list[bytes]] = {}
            async with await client.subscribe("out", "reader", initial_position="earliest") as c:
                while sum(map(len, found.values())) < 16:
                    for m in await c.batch_receive(16, timeout=2.0):
                        found.setdefault(m.message_id.partition, []).append(m.value)
            await producer.close()
            return [txn.state for txn in txns], [carried(dsn, t) for t in txns], found, refused

    states, were_carried, found, refused = asyncio.run(main())
    assert states == ["COMMITTED"] * 4 and all(were_carried) and refused
    assert found == {
        p: [f"a{t}-{i}".encode() for t in range(4) for i in (p, p + 2)] for p in (0, 1)
    }
