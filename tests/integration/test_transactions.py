"""Transactions, modelled on Kafka's and Pulsar's own tests: visibility of
committed and aborted messages, isolation levels, atomicity across partitions,
topics and subscriptions, consume-transform-produce, pending-ack conflicts,
fencing, timeouts, and the known failure modes of the peers."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from txnq.workers.coordinator import CoordinatorWorker

import txnq
from tests.helpers import (
    assert_nothing_more,
    receive_messages,
    running_coordinator,
    sql,
    sql_value,
    wait_until,
)
from txnq import errors
from txnq.transaction import TxnId

FAST = {"poll_interval": "200ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("in", partitions=2)
        client.admin.create_topic("out", partitions=4)
        client.admin.create_topic("audit", partitions=1)
        yield client


@pytest.fixture
def worker(dsn: str) -> Iterator[CoordinatorWorker]:
    """A coordinator worker running in a thread of the test."""
    with running_coordinator(dsn) as coordinator:
        yield coordinator


def values(messages: list[txnq.Message]) -> list[bytes]:
    return sorted(m.value for m in messages)


def txn_state(dsn: str, txn: txnq.Transaction) -> str:
    return str(
        sql_value(
            dsn,
            "SELECT state FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
            tuple(txn.txn_id),
        )
    )


def feed(client: txnq.Client, count: int, topic: str = "in") -> None:
    with client.producer(topic) as producer:
        for i in range(count):
            producer.send(f"m{i}", key=f"k{i}")


# -- visibility ------------------------------------------------------------------


def test_committed_messages_are_visible_only_after_commit(client: txnq.Client) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out")
    txn = client.new_transaction()
    ids = [producer.send(f"t{i}", key=f"k{i}", txn=txn) for i in range(8)]
    assert len({mid.partition for mid in ids}) > 1
    assert_nothing_more(reader, timeout=0.5)
    txn.commit()
    assert txn.state == "COMMITTED"
    assert values(receive_messages(reader, 8)) == sorted(f"t{i}".encode() for i in range(8))
    assert_nothing_more(reader)


def test_aborted_messages_are_never_delivered(dsn: str, client: txnq.Client) -> None:
    producer = client.producer("out")
    txn = client.new_transaction()
    for i in range(6):
        producer.send(f"aborted{i}", key=f"k{i}", txn=txn)
    txn.abort()
    producer.send("after", key="k0")
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    assert values(receive_messages(reader, 1)) == [b"after"]
    assert_nothing_more(reader)
    # Pulsar #19814: not after a restart, a replay (seek) or in read_uncommitted either.
    reader.close()
    again = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    again.seek("earliest")
    assert values(receive_messages(again, 1)) == [b"after"]
    assert_nothing_more(again)
    uncommitted = client.subscribe(
        "out", "dirty", initial_position="earliest", isolation="read_uncommitted", **FAST
    )
    assert values(receive_messages(uncommitted, 1)) == [b"after"]
    assert_nothing_more(uncommitted)
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries WHERE marker = 2") >= 1


def test_markers_and_aborted_entries_do_not_hold_a_cursor_back(
    dsn: str, client: txnq.Client
) -> None:
    producer = client.producer("audit")
    consumer = client.subscribe("audit", "etl", initial_position="earliest", **FAST)
    with client.new_transaction() as txn:
        producer.send("committed", txn=txn)  # offset 0, its marker 1
    doomed = client.new_transaction()
    producer.send("aborted", txn=doomed)  # offset 2, its marker 3
    doomed.abort()
    producer.send("plain")  # offset 4
    messages = receive_messages(consumer, 2)
    assert values(messages) == [b"committed", b"plain"]
    consumer.acknowledge(messages)  # individually: offsets 0 and 4
    assert sql_value(dsn, "SELECT max(mark_delete_offset) FROM txnq.cursors") == 4
    assert sql_value(dsn, "SELECT count(*) FROM txnq.individual_acks") == 0


def test_read_committed_does_not_see_past_an_open_transaction(
    dsn: str, client: txnq.Client
) -> None:
    producer = client.producer("audit")
    committed = client.subscribe("audit", "committed", initial_position="earliest", **FAST)
    dirty = client.subscribe(
        "audit", "dirty", initial_position="earliest", isolation="read_uncommitted", **FAST
    )
    producer.send("before")
    txn = client.new_transaction()
    producer.send("inside", txn=txn)
    producer.send("plain after")  # not in the transaction, but after its first offset
    assert values(receive_messages(committed, 1)) == [b"before"]
    assert_nothing_more(committed)
    assert values(receive_messages(dirty, 3)) == [b"before", b"inside", b"plain after"]
    max_read = sql_value(
        dsn,
        "SELECT max_read_offset FROM txnq.partitions JOIN txnq.topics USING (topic_id) "
        "WHERE name = 'audit'",
    )
    assert max_read == 0  # the first offset of the open transaction, minus one
    txn.commit()
    assert values(receive_messages(committed, 2)) == [b"inside", b"plain after"]


def test_send_async_in_a_transaction_is_flushed_by_commit(client: txnq.Client) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", batching_max_delay="10s")
    with client.new_transaction() as txn:
        pending = [producer.send_async(f"a{i}", txn=txn) for i in range(50)]
    assert all(p.done() for p in pending)
    assert len(receive_messages(reader, 50)) == 50


def test_plain_bytes_sent_async_in_a_transaction_keep_their_partition_and_outcome(
    dsn: str, client: txnq.Client
) -> None:
    """send_async(bytes, partition=, txn=) takes the producer's hot path once
    the producer joined the transaction: the messages still land on their
    partitions, inside the transaction, and an aborted one is never seen."""
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", batching_max_delay="10s")
    for outcome in ("abort", "commit"):
        txn = client.new_transaction()
        pending = [
            producer.send_async(f"{outcome}{i}".encode(), partition=i % 4, txn=txn)
            for i in range(40)
        ]
        # Through the hot path, bad partitions are refused as on the checked one.
        for bad in (4, -1, True, "0"):
            with pytest.raises(errors.InvalidArgumentError, match="partition"):
                producer.send_async(b"bad", partition=bad, txn=txn)  # type: ignore[arg-type]
        if outcome == "abort":
            txn.abort()
        else:
            txn.commit()
    assert all(p.done() for p in pending)
    assert [p.result(5).partition for p in pending] == [i % 4 for i in range(40)]
    got = receive_messages(reader, 40)
    assert sorted((m.partition, m.value) for m in got) == sorted(
        (i % 4, f"commit{i}".encode()) for i in range(40)
    )
    assert_nothing_more(reader)
    # A transaction of another client of the same database is accepted (the
    # checked path), and one that ended is refused before anything is queued.
    with txnq.Client(dsn) as other:
        txn = other.new_transaction()
        producer.send_async(b"other", partition=0, txn=txn)
        producer.send_async(b"other", partition=1, txn=txn)
        txn.commit()
        with pytest.raises(errors.TransactionEndedError):
            producer.send_async(b"late", partition=0, txn=txn)
    assert sorted(m.value for m in receive_messages(reader, 2)) == [b"other", b"other"]
    assert_nothing_more(reader)


# -- atomicity -------------------------------------------------------------------


def test_a_transaction_is_atomic_across_partitions_and_topics(client: txnq.Client) -> None:
    out = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    audit = client.subscribe("audit", "reader", initial_position="earliest", **FAST)
    to_out, to_audit = client.producer("out"), client.producer("audit")
    for outcome in ("abort", "commit"):
        with client.new_transaction() as txn:
            for i in range(4):
                to_out.send(f"{outcome}{i}", partition=i, txn=txn)
            to_audit.send(f"{outcome}-audit", txn=txn)
            if outcome == "abort":
                txn.abort()
    assert values(receive_messages(out, 4)) == [f"commit{i}".encode() for i in range(4)]
    assert values(receive_messages(audit, 1)) == [b"commit-audit"]
    assert_nothing_more(out)


def test_context_manager_aborts_on_an_exception(dsn: str, client: txnq.Client) -> None:
    producer = client.producer("out")
    with pytest.raises(RuntimeError), client.new_transaction() as txn:
        producer.send("doomed", txn=txn)
        raise RuntimeError("the processing failed")
    assert txn_state(dsn, txn) == "ABORTED"


def test_consume_transform_produce_commits_output_and_acks_together(
    dsn: str, client: txnq.Client
) -> None:
    feed(client, 10)
    source = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    sink = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", transactional_id="etl-1")
    batch = receive_messages(source, 10)
    with client.new_transaction() as txn:
        for message in batch:
            producer.send(message.value.upper(), txn=txn)
            source.acknowledge(message, txn=txn)
        # Pending acks move no cursor before the commit.
        assert (
            sql_value(
                dsn,
                "SELECT max(mark_delete_offset) FROM txnq.cursors c "
                "JOIN txnq.subscriptions s USING (subscription_id) WHERE s.name = 'etl'",
            )
            == -1
        )
    assert values(receive_messages(sink, 10)) == sorted(f"M{i}".encode() for i in range(10))
    assert sql_value(dsn, "SELECT count(*) FROM txnq.pending_acks") == 0
    source.close()
    restarted = client.subscribe("in", "etl", **FAST)
    assert_nothing_more(restarted)  # everything consumed exactly once


def test_consume_transform_produce_abort_redelivers_input_and_hides_output(
    dsn: str, client: txnq.Client
) -> None:
    feed(client, 6)
    source = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    sink = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out")
    batch = receive_messages(source, 6)
    txn = client.new_transaction()
    for message in batch:
        producer.send(b"out-" + message.value, txn=txn)
        source.acknowledge(message, txn=txn)
    # Pending messages are not delivered again while their transaction is open.
    assert_nothing_more(source)
    txn.abort()
    assert values(receive_messages(source, 6)) == values(batch)
    assert_nothing_more(sink)
    assert sql_value(dsn, "SELECT count(*) FROM txnq.pending_acks") == 0


def test_cumulative_ack_in_a_transaction_applies_at_commit(dsn: str, client: txnq.Client) -> None:
    feed(client, 5, topic="audit")
    source = client.subscribe("audit", "etl", initial_position="earliest", **FAST)
    batch = receive_messages(source, 5)
    with client.new_transaction() as txn:
        source.acknowledge_cumulative(batch[2], txn=txn)
        source.acknowledge_cumulative(batch[4], txn=txn)
        assert sql_value(dsn, "SELECT max(mark_delete_offset) FROM txnq.cursors") == -1
    assert sql_value(dsn, "SELECT max(mark_delete_offset) FROM txnq.cursors") == 4


def test_transactions_can_each_consume_part_of_one_batch_entry(
    dsn: str, client: txnq.Client
) -> None:
    """Consume-transform-produce in transactions smaller than the producer's
    batches: each cumulative ack ends inside the same entry, after messages an
    earlier transaction acknowledged."""
    with client.producer("audit", batching_max_messages=10) as producer:
        for i in range(10):
            producer.send_async(f"b{i}")
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries") == 1
    source = client.subscribe("audit", "etl", initial_position="earliest", **FAST)
    batch = receive_messages(source, 10)
    for upto in (3, 7, 9):
        with client.new_transaction() as txn:
            source.acknowledge_cumulative(batch[upto], txn=txn)
    assert sql_value(dsn, "SELECT max(mark_delete_offset) FROM txnq.cursors") == 0
    # A message inside the acknowledged part is still a conflict (a redelivery).
    txn = client.new_transaction()
    with pytest.raises(errors.TransactionConflictError, match="already acknowledged"):
        source.acknowledge(batch[5], txn=txn)
    again = client.subscribe("audit", "other", initial_position="earliest", **FAST)
    assert len(receive_messages(again, 10)) == 10  # another subscription is untouched


# -- conflicts -------------------------------------------------------------------


def test_two_transactions_cannot_acknowledge_the_same_message(client: txnq.Client) -> None:
    feed(client, 1, topic="audit")
    consumer = client.subscribe("audit", "etl", initial_position="earliest", **FAST)
    message = receive_messages(consumer, 1)[0]
    first, second = client.new_transaction(), client.new_transaction()
    consumer.acknowledge(message, txn=first)
    with pytest.raises(errors.TransactionConflictError) as raised:
        consumer.acknowledge(message, txn=second)
    assert str(first.txn_id) in str(raised.value) and str(second.txn_id) in str(raised.value)
    with pytest.raises(errors.TransactionConflictError):
        consumer.acknowledge(message)  # nor outside a transaction
    with pytest.raises(errors.TransactionConflictError):
        consumer.acknowledge_cumulative(message, txn=second)
    second.abort()
    first.commit()


def test_acknowledging_an_acknowledged_message_in_a_transaction_conflicts(
    client: txnq.Client,
) -> None:
    feed(client, 1, topic="audit")
    consumer = client.subscribe("audit", "etl", initial_position="earliest", **FAST)
    message = receive_messages(consumer, 1)[0]
    consumer.acknowledge(message)
    txn = client.new_transaction()
    with pytest.raises(errors.TransactionConflictError, match="already"):
        consumer.acknowledge(message, txn=txn)


# -- ended transactions ----------------------------------------------------------


def test_every_use_of_an_ended_transaction_raises(client: txnq.Client) -> None:
    feed(client, 1, topic="audit")
    consumer = client.subscribe("audit", "etl", initial_position="earliest", **FAST)
    message = receive_messages(consumer, 1)[0]
    producer = client.producer("out")
    for end in ("commit", "abort"):
        txn = client.new_transaction()
        getattr(txn, end)()
        for use in (
            lambda t=txn: producer.send("x", txn=t),
            lambda t=txn: producer.send_async("x", txn=t),
            lambda t=txn: consumer.acknowledge(message, txn=t),
            lambda t=txn: consumer.acknowledge_cumulative(message, txn=t),
            txn.commit,
        ):
            with pytest.raises(errors.TransactionEndedError):
                use()


def test_a_late_write_of_an_ended_transaction_never_lands_in_a_later_one(
    dsn: str, client: txnq.Client
) -> None:
    """Jepsen's Kafka finding: a delayed produce must not join the next transaction."""
    producer = client.producer("audit")
    first = client.new_transaction()
    producer.send("on time", txn=first)
    first.commit()
    second = client.new_transaction()
    topic_id = client.admin.get_topic("audit").topic_id
    # The delayed request names its own transaction, which has ended.
    with pytest.raises(psycopg.Error, match="has ended"):
        sql(
            dsn,
            "SELECT * FROM txnq.append_v2(%s, 0, NULL, NULL, NULL, ARRAY['late']::bytea[], "
            "NULL, NULL, NULL, %s, %s)",
            (topic_id, *first.txn_id),
        )
    second.commit()
    payloads = sql(dsn, "SELECT payloads FROM txnq.entries WHERE marker IS NULL")
    assert [bytes(p[0][0]) for p in payloads] == [b"on time"]


def test_back_to_back_transactions_do_not_stall(client: txnq.Client) -> None:
    """Kafka's CONCURRENT_TRANSACTIONS: the next transaction may write at once."""
    reader = client.subscribe("audit", "reader", initial_position="earliest", **FAST)
    producer = client.producer("audit")
    started = time.monotonic()
    for i in range(40):
        with client.new_transaction() as txn:
            producer.send(f"t{i}", txn=txn)
    assert time.monotonic() - started < 20
    assert len(receive_messages(reader, 40)) == 40


# -- fencing ---------------------------------------------------------------------


def test_a_new_transactional_producer_fences_the_old_one(
    dsn: str, client_pair: tuple[txnq.Client, txnq.Client]
) -> None:
    old_client, new_client = client_pair
    feed(old_client, 2, topic="in")
    old_consumer = old_client.subscribe("in", "etl", initial_position="earliest", **FAST)
    messages = receive_messages(old_consumer, 2)
    old = old_client.producer("out", transactional_id="etl-1")
    txn = old_client.new_transaction()
    old.send("from the old session", txn=txn)
    new = new_client.producer("out", transactional_id="etl-1")
    assert new.transactional is not None and old.transactional is not None
    assert new.transactional[1] == old.transactional[1] + 1
    # The old session's open transaction was aborted (reason fenced) ...
    assert txn_state(dsn, txn) == "ABORTED"
    assert (
        sql_value(
            dsn,
            "SELECT reason FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
            tuple(txn.txn_id),
        )
        == "fenced"
    )
    # ... and every further use of the old session raises ProducerFencedError.
    with pytest.raises(errors.ProducerFencedError):
        old.send("late", txn=txn)
    with pytest.raises(errors.ProducerFencedError):
        old_consumer.acknowledge(messages[0], txn=txn)
    with pytest.raises(errors.ProducerFencedError):
        txn.commit()
    with pytest.raises(errors.ProducerFencedError):
        old.send("outside", txn=None)
    later = old_client.new_transaction()
    with pytest.raises(errors.ProducerFencedError):
        old.send("new txn", txn=later)
    # The new session works.
    with new_client.new_transaction() as fresh:
        new.send("from the new session", txn=fresh)


@pytest.fixture
def client_pair(dsn: str, client: txnq.Client) -> Iterator[tuple[txnq.Client, txnq.Client]]:
    with txnq.Client(dsn) as other:
        yield client, other


# -- timeouts --------------------------------------------------------------------


def test_a_transaction_past_its_timeout_is_aborted_by_the_system(
    dsn: str, client: txnq.Client, worker: CoordinatorWorker
) -> None:
    feed(client, 2, topic="audit")
    consumer = client.subscribe("audit", "etl", initial_position="earliest", **FAST)
    messages = receive_messages(consumer, 2)
    producer = client.producer("out")
    txn = client.new_transaction(timeout="500ms")
    producer.send("too slow", txn=txn)
    consumer.acknowledge(messages[0], txn=txn)
    time.sleep(0.6)
    aborted = client.query("abort_timed_out", {"max_count": 100})
    assert [(r["tc_id"], r["txn_seq"]) for r in aborted] == [tuple(txn.txn_id)]
    wait_until(lambda: txn_state(dsn, txn) == "ABORTED", what="the worker finishes the abort")
    # Pulsar #10306: no pending ack survives the timed-out transaction ...
    assert sql_value(dsn, "SELECT count(*) FROM txnq.pending_acks") == 0
    # ... the message is delivered again, and the transaction is unusable.
    assert messages[0].value in values(receive_messages(consumer, 1, timeout=10))
    with pytest.raises(errors.TransactionTimedOutError):
        txn.commit()


def test_the_scheduler_aborts_a_transaction_within_seconds_of_its_timeout(
    dsn: str, client: txnq.Client, worker: CoordinatorWorker
) -> None:
    from txnq.workers.scheduler import Scheduler

    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    txn = client.new_transaction(timeout="1s")
    client.producer("out").send("abandoned", partition=0, txn=txn)
    deadline = time.monotonic() + 1.0
    scheduler = Scheduler(dsn)
    scheduler.start()
    try:
        wait_until(lambda: txn_state(dsn, txn) == "ABORTED", timeout=10, what="timeout abort")
        finished = time.monotonic()
    finally:
        scheduler.shutdown()
    # Invariant 5, within a second or two of the deadline (job every 1 s).
    assert finished - deadline < 3.0
    reason = sql_value(
        dsn,
        "SELECT reason FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
        tuple(txn.txn_id),
    )
    assert reason == "timeout"
    # The partition's max read offset moved past it: later messages flow.
    client.producer("out").send("after", partition=0)
    assert values(receive_messages(reader, 1)) == [b"after"]
    assert_nothing_more(reader)


def test_a_hanging_transaction_is_found_until_it_is_aborted(client: txnq.Client) -> None:
    """Kafka KIP-664: a transaction that freezes a partition's max read offset
    must be findable, and abortable, by an operator."""
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out")
    txn = client.new_transaction(timeout="100ms")
    producer.send("stuck", partition=2, txn=txn)
    producer.send("behind", partition=2)
    time.sleep(0.2)  # no scheduler runs: nothing aborts it
    assert_nothing_more(reader)  # read_committed waits behind it
    hanging = client.admin.find_hanging_transactions(grace=0)
    assert [(h.id, h.topic, h.partition) for h in hanging] == [(str(txn.txn_id), "out", 2)]
    assert client.admin.find_hanging_transactions(grace="1h") == []

    info = client.admin.abort_transaction(txn.txn_id)

    assert (info.state, info.reason) == ("ABORTED", "admin")
    assert client.admin.find_hanging_transactions(grace=0) == []
    assert values(receive_messages(reader, 1)) == [b"behind"]
    listed = client.admin.list_transactions(state="ABORTED")
    assert [t.txn_id for t in listed] == [txn.txn_id]


def test_commit_after_the_timeout_aborts_instead(dsn: str, client: txnq.Client) -> None:
    txn = client.new_transaction(timeout="200ms")
    client.producer("out").send("late", txn=txn)
    time.sleep(0.3)
    with pytest.raises(errors.TransactionTimedOutError):
        txn.commit()
    assert txn_state(dsn, txn) == "ABORTED"


def test_a_timeout_above_the_server_maximum_is_refused(client: txnq.Client) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="maximum"):
        client.new_transaction(timeout="1d")
    with pytest.raises(errors.InvalidArgumentError):
        client.new_transaction(timeout=-1)


# -- ids and bad input -----------------------------------------------------------


def test_transaction_ids_round_trip_through_text_and_int() -> None:
    txn_id = TxnId(7, 123456789)
    assert TxnId.parse(str(txn_id)) == txn_id
    assert TxnId.parse(int(txn_id)) == txn_id
    assert TxnId.parse(str(int(txn_id))) == txn_id
    assert int(txn_id) >> 112 == 7
    for bad in ("", "x:y", "-1:2", "70000:1", 1 << 130, 1.5, None):
        with pytest.raises(errors.InvalidArgumentError):
            TxnId.parse(bad)  # type: ignore[arg-type]


def test_a_txn_argument_must_be_a_transaction(client: txnq.Client) -> None:
    producer = client.producer("out")
    with pytest.raises(errors.InvalidArgumentError, match="Transaction"):
        producer.send("x", txn="1:2")  # type: ignore[arg-type]


# -- coordinator workers ---------------------------------------------------------


def test_a_worker_finishes_a_transaction_whose_client_died_after_the_decision(
    dsn: str, client: txnq.Client, worker: CoordinatorWorker
) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out")
    txn = client.new_transaction()
    for i in range(4):
        producer.send(f"d{i}", partition=i, txn=txn)
    # The decision only, as a client that dies right after it leaves things.
    sql(dsn, "SELECT * FROM txnq.end_txn_v2(%s, %s, true)", tuple(txn.txn_id))
    wait_until(lambda: txn_state(dsn, txn) == "COMMITTED", what="the worker completes it")
    assert len(receive_messages(reader, 4)) == 4


def test_coordinators_split_between_workers_and_fail_over(dsn: str, client: txnq.Client) -> None:
    workers = [CoordinatorWorker(dsn, poll_interval=0.2) for _ in range(2)]
    stops = [threading.Event() for _ in workers]
    threads = [
        threading.Thread(target=w.run, args=(s,), daemon=True)
        for w, s in zip(workers, stops, strict=True)
    ]
    for thread in threads:
        thread.start()
    try:
        wait_until(
            lambda: sorted(len(w.owned) for w in workers) == [8, 8],
            timeout=10,
            what="two workers hold 8 coordinators each",
        )
        assert workers[0].owned.isdisjoint(workers[1].owned)
        stops[0].set()
        threads[0].join(timeout=10)
        wait_until(lambda: len(workers[1].owned) == 16, timeout=10, what="takeover")
    finally:
        for stop in stops:
            stop.set()
        for thread in threads:
            thread.join(timeout=10)
