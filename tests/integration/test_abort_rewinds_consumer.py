"""Regression (found by the chaos copier): when a transaction aborts, the
consumer that acknowledged in it delivers those partitions again from the
cursor — also when its ack was refused for a conflict and so left no pending
ack whose release would have rewound it. Before the fix the copier stalled:
the messages its aborted transaction had received were never delivered again
while it lived, and its next cumulative ack would have covered them unprocessed.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import txnq
from tests.helpers import assert_nothing_more, receive_messages
from txnq import errors


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("in", partitions=1)
        with client.producer("in") as producer:
            for i in range(10):
                producer.send(f"m{i}".encode())
        yield client


def test_messages_of_a_transaction_aborted_for_a_conflict_are_delivered_again(
    client: txnq.Client,
) -> None:
    consumer = client.subscribe("in", "s", initial_position="earliest")
    first = receive_messages(consumer, 5)
    holder = client.new_transaction()
    consumer.acknowledge_cumulative(first[-1], txn=holder)  # m0..m4 pending in `holder`

    second = receive_messages(consumer, 5)
    assert [m.value for m in second] == [f"m{i}".encode() for i in range(5, 10)]
    loser = client.new_transaction()
    with pytest.raises(errors.TransactionConflictError):
        consumer.acknowledge_cumulative(second[-1], txn=loser)
    holder.commit()  # a commit bumps no cursor generation: only the abort can rewind
    loser.abort()

    again = receive_messages(consumer, 5, timeout=10)
    assert [m.value for m in again] == [m.value for m in second]
    consumer.acknowledge_cumulative(again[-1])
    assert_nothing_more(consumer)


def test_a_consumer_acknowledging_in_a_committed_transaction_is_not_rewound(
    client: txnq.Client,
) -> None:
    consumer = client.subscribe("in", "s", initial_position="earliest")
    first = receive_messages(consumer, 5)
    with client.new_transaction() as txn:
        consumer.acknowledge_cumulative(first[-1], txn=txn)
    rest = receive_messages(consumer, 5)
    assert [m.value for m in rest] == [f"m{i}".encode() for i in range(5, 10)]
    assert_nothing_more(consumer)


def test_a_transaction_the_system_aborted_rewinds_on_commit(client: txnq.Client) -> None:
    consumer = client.subscribe("in", "s", initial_position="earliest")
    batch = receive_messages(consumer, 10)
    txn = client.new_transaction()
    consumer.acknowledge_cumulative(batch[-1], txn=txn)
    # Aborted behind the client's back (as a timeout or fencing would).
    with txnq.Client(client.dsn) as other:
        other.admin.abort_transaction(txn.txn_id)
    with pytest.raises(errors.TransactionEndedError):
        txn.commit()
    again = receive_messages(consumer, 10, timeout=10)
    assert [m.value for m in again] == [m.value for m in batch]


def test_a_cumulative_ack_over_messages_released_since_delivery_is_refused(
    client: txnq.Client,
) -> None:
    """A failover/exclusive handover: the new consumer fetches past messages the
    old one's transaction holds pending; that transaction aborts; a cumulative
    ack in a transaction would now consume them unprocessed. It is refused,
    and after the abort every message is delivered again (lost before the fix:
    found by the chaos copier as 1,000 inputs that never reached the output)."""
    old = client.subscribe("in", "s", initial_position="earliest")
    first = receive_messages(old, 5)
    holder = client.new_transaction()
    old.acknowledge_cumulative(first[-1], txn=holder)  # m0..m4 pending
    old.close()

    new = client.subscribe("in", "s")
    rest = receive_messages(new, 5)  # fetch skips the pending m0..m4
    assert [m.value for m in rest] == [f"m{i}".encode() for i in range(5, 10)]
    with txnq.Client(client.dsn) as other:  # the old owner's transaction aborts
        other.admin.abort_transaction(holder.txn_id)
    txn = client.new_transaction()
    with pytest.raises(errors.TransactionConflictError, match="rewound"):
        new.acknowledge_cumulative(rest[-1], txn=txn)
    txn.abort()
    again = receive_messages(new, 10, timeout=10)
    assert [m.value for m in again] == [f"m{i}".encode() for i in range(10)]
