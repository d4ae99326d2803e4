"""Acknowledgements outside a transaction commit without waiting for the WAL
flush unless ``durable_acks=True``; acknowledgements in a transaction always
wait (docs/subscriptions.md, "When an acknowledgement is durable")."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql_value
from txnq import errors
from txnq.database.queries import QUERIES

FAST = {"poll_interval": 0.05}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("acks", partitions=2)
        with client.producer("acks") as producer:
            for i in range(6):
                producer.send(f"m{i}".encode(), partition=i % 2)
        yield client


def _ack_params(topic_id: int, subscription_id: int, offset: int) -> dict[str, object]:
    return {
        "topic_id": topic_id,
        "partition": 0,
        "subscription_id": subscription_id,
        "cumulative_offset": offset,
        "offsets": [],
        "batch_indexes": [],
        "batch_sizes": [],
        "cumulative_batch_index": None,
        "cumulative_batch_size": None,
        "txn_tc": None,
        "txn_seq": None,
    }


def test_the_lazy_ack_turns_synchronous_commit_off_for_its_own_transaction_only(
    dsn: str, client: txnq.Client
) -> None:
    with client.subscribe("acks", "s", initial_position="earliest", **FAST) as consumer:
        params = _ack_params(consumer._topic_id, consumer.subscription_id, 1)
    with psycopg.connect(dsn) as conn:  # a transaction block, to look inside it
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
        conn.execute(QUERIES["ack_lazy"], params)
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
        conn.commit()
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
        conn.execute(QUERIES["ack"], params)  # the durable form leaves it alone
        assert conn.execute("SHOW synchronous_commit").fetchone() == ("on",)
    assert sql_value(dsn, "SELECT mark_delete_offset FROM txnq.cursors WHERE partition = 0") == 1


def test_acks_are_lazy_unless_durable_acks_outside_a_transaction(client: txnq.Client) -> None:
    """In a transaction every ack is lazy: the decision's flush makes it
    durable, and a crash before the decision aborts the commit
    (test_transaction_crashes.py)."""
    with (
        client.subscribe("acks", "lazy", initial_position="earliest", **FAST) as lazy,
        client.subscribe(
            "acks", "durable", initial_position="earliest", durable_acks=True
        ) as durable,
        client.subscribe("acks", "shared", "shared", initial_position="earliest") as shared,
    ):
        assert lazy._delivery.ack_query("ack", False) == "ack_lazy"
        assert lazy._delivery.ack_query("ack", True) == "ack_lazy"  # in a transaction
        assert durable._delivery.ack_query("ack", False) == "ack"
        assert durable._delivery.ack_query("ack", True) == "ack_lazy"
        assert shared._delivery.ack_query("ack_shared", False) == "ack_shared_lazy"
        assert shared._delivery.ack_query("ack_shared", True) == "ack_shared_lazy"


@pytest.mark.parametrize("durable_acks", [False, True])
def test_acknowledged_messages_are_not_delivered_again_either_way(
    client: txnq.Client, durable_acks: bool
) -> None:
    name = f"s-{durable_acks}"
    options = {"initial_position": "earliest", "durable_acks": durable_acks, **FAST}
    with client.subscribe("acks", name, **options) as consumer:
        received = receive_messages(consumer, 6)
        latest = {m.partition: m for m in received}
        consumer.acknowledge_cumulative(latest[0])
        consumer.acknowledge(latest[1])
    with client.subscribe("acks", name, **options) as again:
        rest = receive_messages(again, 2)  # partition 1's first two were not acknowledged
        assert sorted(m.value for m in rest) == [b"m1", b"m3"]
        assert_nothing_more(again)
    with client.subscribe("acks", f"shared-{durable_acks}", "shared", **options) as shared:
        messages = receive_messages(shared, 6)
        shared.acknowledge(messages)
    with client.subscribe("acks", f"shared-{durable_acks}", "shared", **options) as shared:
        assert_nothing_more(shared)


def test_durable_acks_must_be_a_bool(client: txnq.Client) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="durable_acks"):
        client.subscribe("acks", "s", durable_acks="yes")
