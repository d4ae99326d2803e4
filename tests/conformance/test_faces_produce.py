"""Producing, the same on both faces: send and send_async, keys and
partitions, properties, event times, encodings, delayed delivery, the
idempotent producer and transactional-id fencing, and a failed send that
settles what send_async returned."""

from __future__ import annotations

import time
import zlib
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from faces import FAST

from tests.cluster_pass import needs_cluster_slice
from tests.helpers import assert_nothing_more, receive_messages
from txnq import MessageId, errors


def test_send_returns_the_message_id_and_the_message_arrives_as_sent(
    client: Any, topic: Any
) -> None:
    topic("orders")
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    producer = client.producer("orders", name="p1")
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)

    first = producer.send(b"one", key="k1", properties={"a": "1", "b": ""}, event_time=when)
    second = producer.send("two")

    assert first == MessageId("orders", 0, first.offset, 0)
    assert second.offset > first.offset
    one, two = receive_messages(consumer, 2)
    assert (one.value, one.key, one.key_bytes) == (b"one", "k1", b"k1")
    assert one.properties == {"a": "1", "b": ""}
    assert one.event_time == when
    assert one.message_id == first and two.message_id == second
    assert (two.value, two.key, two.properties, two.event_time) == (b"two", None, {}, None)
    assert one.publish_time.tzinfo is not None and one.publish_time <= two.publish_time
    assert one.redelivery_count == 0


def test_an_event_time_in_seconds_since_the_epoch_is_a_utc_time(client: Any, topic: Any) -> None:
    topic("orders")
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    client.producer("orders").send(b"x", event_time=1_700_000_000.25)
    (message,) = receive_messages(consumer, 1)
    assert message.event_time == datetime(2023, 11, 14, 22, 13, 20, 250000, tzinfo=UTC)


def test_send_async_and_flush_write_every_message_once_in_order(client: Any, topic: Any) -> None:
    topic("orders", partitions=2)
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    producer = client.producer("orders", batching_max_delay="1s", batching_max_messages=1000)
    seen: list[tuple[Any, Any]] = []

    pending = [
        producer.send_async(
            f"m{i}",
            key=f"k{i % 3}",
            callback=lambda exc, message_id: seen.append((exc, message_id)),
        )
        for i in range(30)
    ]
    producer.flush()

    ids = [p.result(10) for p in pending]
    assert all(p.done() for p in pending)
    assert sorted(seen, key=lambda s: s[1]) == [(None, i) for i in sorted(ids)]
    assert len(set(ids)) == 30
    # One batch per partition: the messages share an entry, indexed in order.
    for partition in {i.partition for i in ids}:
        mine = [i for i in ids if i.partition == partition]
        assert [i.batch_index for i in mine] == list(range(len(mine)))
        assert len({i.offset for i in mine}) == 1
    received = receive_messages(consumer, 30)
    assert sorted(m.value for m in received) == sorted(f"m{i}".encode() for i in range(30))
    assert {m.message_id for m in received} == set(ids)
    assert_nothing_more(consumer, 0.2)


def test_close_writes_what_send_async_queued(client: Any, topic: Any) -> None:
    topic("orders")
    producer = client.producer("orders", batching_max_delay="30s")
    pending = producer.send_async(b"queued")
    assert not pending.done()
    producer.close()
    assert pending.result(5).topic == "orders"
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    assert [m.value for m in receive_messages(consumer, 1)] == [b"queued"]


def test_a_key_routes_by_crc32_and_a_partition_is_honoured(client: Any, topic: Any) -> None:
    topic("orders", partitions=4)
    producer = client.producer("orders")
    for key in ("alpha", "beta", "gamma", "delta", b"\x00\xff"):
        raw = key.encode() if isinstance(key, str) else key
        assert producer.send(b"x", key=key).partition == zlib.crc32(raw) % 4
    assert {producer.send(b"x", partition=p).partition for p in range(4)} == {0, 1, 2, 3}
    assert producer.send(b"x", key="alpha", partition=3).partition == 3
    # Without a key, messages go round-robin over every partition.
    assert {producer.send(b"x").partition for _ in range(8)} == {0, 1, 2, 3}


def test_a_str_payload_is_encoded_with_the_producers_encoding(client: Any, topic: Any) -> None:
    topic("orders")
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    client.producer("orders", encoding="latin-1").send("café")
    client.producer("orders").send("café")
    values = [m.value for m in receive_messages(consumer, 2)]
    assert values == ["café".encode("latin-1"), "café".encode()]


@needs_cluster_slice("delayed", "shared")
def test_a_delayed_message_waits_on_a_shared_subscription(client: Any, topic: Any) -> None:
    topic("jobs")
    consumer = client.subscribe("jobs", "w", "shared", initial_position="earliest", **FAST)
    producer = client.producer("jobs")
    sent_at = time.monotonic()
    later = producer.send(b"later", deliver_after="700ms")
    at = producer.send_async(b"at", deliver_at=datetime.now(UTC) + timedelta(milliseconds=700))
    producer.send(b"now")

    assert [m.value for m in receive_messages(consumer, 1)] == [b"now"]
    assert_nothing_more(consumer, 0.2)
    delayed = receive_messages(consumer, 2, timeout=5)
    assert time.monotonic() - sent_at >= 0.7
    assert sorted(m.value for m in delayed) == [b"at", b"later"]
    assert {m.message_id for m in delayed} == {later, at.result(5)}


@needs_cluster_slice("delayed")
def test_a_delayed_message_is_delivered_at_once_on_an_exclusive_subscription(
    client: Any, topic: Any
) -> None:
    topic("jobs")
    consumer = client.subscribe("jobs", "x", initial_position="earliest", **FAST)
    client.producer("jobs").send(b"later", deliver_after="1h")
    assert [m.value for m in receive_messages(consumer, 1, timeout=3)] == [b"later"]


# -- the idempotent producer and fencing ---------------------------------------


def test_a_reopened_named_producer_keeps_its_id_and_continues(client: Any, topic: Any) -> None:
    topic("orders")
    first = client.producer("orders", name="p1")
    first.send(b"a")
    producer_id, epoch = first.producer_id, first.epoch
    first.close()
    again = client.producer("orders", name="p1")
    assert again.producer_id == producer_id and again.epoch > epoch
    again.send(b"b")
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    received = receive_messages(consumer, 2)
    assert [m.value for m in received] == [b"a", b"b"]
    assert [m.sequence for m in received] == [0, 1]  # one sequence, no duplicate, no gap
    assert {m.producer_id for m in received} == {producer_id}


def test_a_newer_producer_of_the_same_name_fences_the_older(client: Any, topic: Any) -> None:
    topic("orders")
    older = client.producer("orders", name="p1")
    older.send(b"a")
    newer = client.producer("orders", name="p1")
    with pytest.raises(errors.ProducerFencedError):
        older.send(b"b")
    newer.send(b"c")
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    assert [m.value for m in receive_messages(consumer, 2)] == [b"a", b"c"]
    assert_nothing_more(consumer, 0.2)


@needs_cluster_slice("transactions", "txn_inspection")
@pytest.mark.parametrize("where", ["same client", "other client"])
@pytest.mark.parametrize("how", ["send", "send_async"])
def test_a_new_session_of_a_transactional_id_fences_the_old_and_aborts_its_transaction(
    face: Any, dsn: str, client: Any, topic: Any, where: str, how: str
) -> None:
    """Kafka's initTransactions: a new producer with the transactional id
    aborts what the older one left open, whether it is created in the same
    client or in another (another process, as far as txnq can tell). With
    ``send_async`` the old session's message is still queued when the new
    session starts: commit() writes nothing of it either."""
    topic("out")
    reader = client.subscribe("out", "r", initial_position="earliest", **FAST)
    old = client.producer("out", transactional_id="etl-1", batching_max_delay="1h")
    txn = client.new_transaction()
    pending = None
    if how == "send":
        old.send(b"from the old session", txn=txn)
    else:
        pending = old.send_async(b"from the old session", txn=txn)

    other = client if where == "same client" else face.client(dsn)
    new = other.producer("out", transactional_id="etl-1")
    assert new.transactional[0] == "etl-1"
    assert new.transactional[1] > old.transactional[1]
    fenced = client.admin.describe_transaction(txn.txn_id).transaction
    assert (fenced.state, fenced.reason) == ("ABORTED", "fenced")

    with pytest.raises(errors.ProducerFencedError):
        txn.commit()
    if pending is not None:  # the queued send failed, and says why
        assert isinstance(pending.exception(5), errors.ProducerFencedError)
    with pytest.raises(errors.ProducerFencedError):
        old.send(b"again", txn=client.new_transaction())
    with other.new_transaction() as fresh:
        new.send(b"from the new session", txn=fresh)
    assert [m.value for m in receive_messages(reader, 1)] == [b"from the new session"]
    assert_nothing_more(reader, 0.2)
    # Nothing of the old session's transaction is readable, from the start either.
    again = client.subscribe("out", "again", initial_position="earliest", **FAST)
    assert [m.value for m in receive_messages(again, 1)] == [b"from the new session"]
    assert_nothing_more(again, 0.2)


# -- a failed send settles what send_async returned ---------------------------


def test_a_failed_send_settles_its_pending_send_and_callback_and_flush_raises(
    client: Any, topic: Any
) -> None:
    topic("orders")
    older = client.producer("orders", name="p1", batching_max_delay="30s")
    seen: list[tuple[Any, Any]] = []
    pending = older.send_async(b"queued", callback=lambda exc, mid: seen.append((exc, mid)))
    client.producer("orders", name="p1")  # fences the older one before it writes

    with pytest.raises(errors.ProducerFencedError) as raised:
        older.flush()

    assert pending.done()
    failure = pending.exception(5)
    assert isinstance(failure, errors.ProducerFencedError)
    assert str(failure) == str(raised.value)
    with pytest.raises(errors.ProducerFencedError):
        pending.result(5)
    assert len(seen) == 1 and seen[0][1] is None
    assert isinstance(seen[0][0], errors.ProducerFencedError)


@needs_cluster_slice("transactions", "txn_inspection")
def test_a_send_queued_in_a_transaction_that_ended_settles_with_the_end(
    client: Any, topic: Any
) -> None:
    topic("orders")
    producer = client.producer("orders", batching_max_delay="30s")
    txn = client.new_transaction()
    seen: list[tuple[Any, Any]] = []
    pending = producer.send_async(
        b"queued", txn=txn, callback=lambda exc, mid: seen.append((exc, mid))
    )
    client.admin.abort_transaction(txn.txn_id)  # an operator aborts it meanwhile

    producer.flush()  # a transaction's failures are reported by its commit

    failure = pending.exception(5)
    assert isinstance(failure, errors.TransactionEndedError)
    assert len(seen) == 1 and seen[0][1] is None and seen[0][0] is failure
    with pytest.raises(errors.TransactionEndedError):
        txn.commit()
    consumer = client.subscribe("orders", "s", initial_position="earliest", **FAST)
    assert_nothing_more(consumer, 0.3)
