"""Transactions, the same on both faces: a commit makes the sends and the acks
effective together, an abort discards the sends and gives the acks back, an
ended transaction refuses every use, and a transaction past its timeout is
aborted."""

from __future__ import annotations

import time
from typing import Any

import pytest
from faces import FAST

from tests.cluster_pass import needs_cluster_slice
from tests.helpers import assert_nothing_more, receive_messages
from txnq import errors

pytestmark = needs_cluster_slice("transactions")


@pytest.fixture
def pipeline(client: Any, topic: Any) -> tuple[Any, Any, Any, list[Any]]:
    """(input consumer, output producer, output reader, the 3 messages received
    from the input, unacknowledged)."""
    topic("in", partitions=2)
    topic("out", partitions=2)
    producer = client.producer("in")
    for i in range(3):
        producer.send(f"m{i}", key=f"k{i}")
    consumer = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    return consumer, client.producer("out"), reader, receive_messages(consumer, 3)


def test_commit_makes_the_sends_and_the_acks_effective_together(
    client: Any, pipeline: tuple[Any, Any, Any, list[Any]]
) -> None:
    consumer, producer, reader, received = pipeline
    txn = client.new_transaction()
    assert txn.state == "OPEN"
    for message in received:
        producer.send(message.value.upper(), txn=txn)
    pending = producer.send_async(b"queued", txn=txn)
    consumer.acknowledge(received[:2], txn=txn)
    consumer.acknowledge_cumulative(received[2], txn=txn)
    assert_nothing_more(reader, 0.3)  # read_committed: nothing before the commit

    txn.commit()

    assert txn.state == "COMMITTED"
    assert pending.result(5).topic == "out"
    out = receive_messages(reader, 4)
    assert sorted(m.value for m in out) == [b"M0", b"M1", b"M2", b"queued"]
    consumer.close()
    again = client.subscribe("in", "etl", **FAST)
    assert_nothing_more(again, 0.3)  # every ack took effect


def test_abort_discards_the_sends_and_delivers_the_acknowledged_messages_again(
    client: Any, pipeline: tuple[Any, Any, Any, list[Any]]
) -> None:
    consumer, producer, reader, received = pipeline
    txn = client.new_transaction()
    producer.send(b"never", txn=txn)
    pending = producer.send_async(b"never either", txn=txn)
    consumer.acknowledge(received, txn=txn)

    txn.abort()

    assert txn.state == "ABORTED"
    # Written before the abort (then never delivered), or refused after it.
    failure = pending.exception(5)
    assert failure is None or isinstance(failure, errors.TransactionEndedError), failure
    assert_nothing_more(reader, 0.4)
    again = receive_messages(consumer, 3)  # the same consumer, rewound
    assert sorted(m.value for m in again) == sorted(m.value for m in received)


def test_the_with_block_commits_and_an_exception_aborts(
    client: Any, pipeline: tuple[Any, Any, Any, list[Any]]
) -> None:
    consumer, producer, reader, received = pipeline
    with client.new_transaction() as txn:
        producer.send(b"kept", txn=txn)
        consumer.acknowledge(received[0], txn=txn)
    assert txn.state == "COMMITTED"
    with pytest.raises(ZeroDivisionError), client.new_transaction() as doomed:
        producer.send(b"dropped", txn=doomed)
        consumer.acknowledge(received[1], txn=doomed)
        1 / 0  # noqa: B018
    assert doomed.state == "ABORTED"
    assert [m.value for m in receive_messages(reader, 1)] == [b"kept"]
    assert_nothing_more(reader, 0.3)
    assert [m.value for m in receive_messages(consumer, 2)] == [b"m1", b"m2"]


@pytest.mark.parametrize("end", ["commit", "abort"])
def test_an_ended_transaction_refuses_every_use(
    client: Any, pipeline: tuple[Any, Any, Any, list[Any]], end: str
) -> None:
    consumer, producer, reader, received = pipeline
    txn = client.new_transaction()
    producer.send(b"x", txn=txn)
    getattr(txn, end)()

    uses = {
        "send": lambda: producer.send(b"late", txn=txn),
        "send_async": lambda: producer.send_async(b"late", txn=txn),
        "acknowledge": lambda: consumer.acknowledge(received[0], txn=txn),
        "acknowledge_cumulative": lambda: consumer.acknowledge_cumulative(received[0], txn=txn),
        "commit": txn.commit,
        "with": lambda: txn.__enter__(),
    }
    if end == "commit":
        uses["abort"] = txn.abort
    else:
        txn.abort()  # aborting an aborted transaction is a no-op
    for use, call in uses.items():
        with pytest.raises(errors.TransactionEndedError, match="ended") as raised:
            call()
        assert type(raised.value) is errors.TransactionEndedError, use
    # Nothing of the refused calls took effect.
    if end == "abort":
        assert_nothing_more(reader, 0.3)
    consumer.close()
    again = client.subscribe("in", "etl", **FAST)
    assert len(receive_messages(again, 3)) == 3


def test_two_transactions_cannot_acknowledge_the_same_message(
    client: Any, pipeline: tuple[Any, Any, Any, list[Any]]
) -> None:
    consumer, _, _, received = pipeline
    first = client.new_transaction()
    consumer.acknowledge(received[0], txn=first)
    second = client.new_transaction()
    with pytest.raises(errors.TransactionConflictError):
        consumer.acknowledge(received[0], txn=second)
    second.abort()
    first.commit()


def test_commit_after_the_timeout_is_refused_and_aborts(client: Any, topic: Any) -> None:
    topic("out")
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out")  # made first: the timeout is the send's alone
    txn = client.new_transaction(timeout="1s")
    assert txn.timeout == pytest.approx(1.0)
    producer.send(b"late", txn=txn)
    time.sleep(1.2)
    with pytest.raises(errors.TransactionTimedOutError):
        txn.commit()
    assert txn.state == "ABORTED"
    with pytest.raises(errors.TransactionTimedOutError):
        txn.commit()
    txn.abort()  # the system aborted it: a no-op
    assert_nothing_more(reader, 0.3)


def test_commit_without_waiting_returns_at_the_decision(client: Any, topic: Any) -> None:
    topic("out")
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    txn = client.new_transaction()
    client.producer("out").send(b"x", txn=txn)
    txn.commit(wait=False)
    assert txn.state in ("COMMITTING", "COMMITTED")
    with pytest.raises(errors.TransactionEndedError):
        txn.commit()
    # No coordinator worker runs here: the marker phase waits for one (or for
    # the transaction's timeout), so nothing is delivered yet.
    assert_nothing_more(reader, 0.3)


def test_a_transaction_id_is_unique_and_its_timeout_is_the_default(client: Any) -> None:
    first, second = client.new_transaction(), client.new_transaction()
    assert first.txn_id != second.txn_id
    assert first.timeout == pytest.approx(60.0)  # TXN_DEFAULT_TIMEOUT
    assert first.timeout_at.tzinfo is not None
    first.abort()
    second.abort()
