"""Shared and key_shared subscriptions: every message to exactly one consumer,
consumers that die, key order under consumer churn, negative acks with
backoff, ack timeouts, dead letters, retry letters, delayed delivery and
transactional acks (docs/subscriptions.md)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

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
from txnq.database import plans

FAST = {"poll_interval": "100ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        yield client


@pytest.fixture
def worker(dsn: str) -> Iterator[CoordinatorWorker]:
    """A coordinator worker running in a thread of the test (finishes timed-out transactions)."""
    with running_coordinator(dsn) as coordinator:
        yield coordinator


def shared(client: txnq.Client, name: str = "c", **options: object) -> txnq.Consumer:
    return client.subscribe(
        "jobs",
        "workers",
        options.pop("subscription_type", "shared"),  # type: ignore[arg-type]
        initial_position="earliest",
        consumer_name=name,
        **{**FAST, **options},
    )


#: Messages outstanding on the subscriptions: claim rows (one per message:
#: redelivered, delayed, in a transaction, key_shared) plus the messages of the
#: claim ranges not acknowledged yet (a shared claim of new messages, revision 0027).
OUTSTANDING = (
    "SELECT (SELECT count(*) FROM txnq.claims) "
    "+ (SELECT coalesce(sum(r.message_count - r.acked_count), 0) FROM txnq.claim_ranges r)"
)
HELD = (
    "SELECT (SELECT count(*) FROM txnq.claims WHERE consumer_id IS NOT NULL) "
    "+ (SELECT coalesce(sum(r.message_count - r.acked_count), 0) FROM txnq.claim_ranges r)"
)
HELD_BY = (
    "SELECT (SELECT count(*) FROM txnq.claims WHERE consumer_id = %s AND txn_tc IS NULL) "
    "+ (SELECT coalesce(sum(r.message_count - r.acked_count), 0) FROM txnq.claim_ranges r "
    "WHERE r.consumer_id = %s)"
)


def cursor_and_claims(dsn: str) -> tuple[list[int], int]:
    marks = [
        row[0]
        for row in sql(
            dsn,
            "SELECT c.mark_delete_offset FROM txnq.cursors c "
            "JOIN txnq.subscriptions s USING (subscription_id) WHERE s.name = 'workers' "
            "ORDER BY c.partition",
        )
    ]
    return marks, int(sql_value(dsn, OUTSTANDING))


def high_watermarks(dsn: str) -> list[int]:
    return [
        row[0]
        for row in sql(
            dsn,
            "SELECT h.next_offset - 1 FROM txnq.partitions h JOIN txnq.topics t USING (topic_id) "
            "WHERE t.name = 'jobs' ORDER BY h.partition",
        )
    ]


# -- shared: exactly once among many consumers ---------------------------------------


def test_n_shared_consumers_receive_every_message_exactly_once(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("jobs", partitions=2)
    # Batches of ten: an entry goes to one consumer as a whole (as in Pulsar).
    with client.producer("jobs", batching_max_messages=10) as producer:
        sent = [producer.send(f"single-{i}") for i in range(40)]
        pending = [producer.send_async(f"batched-{i}") for i in range(400)]
        producer.flush()
        sent += [p.result() for p in pending]

    received: dict[int, list[txnq.MessageId]] = {0: [], 1: [], 2: []}
    consumers = [shared(client, f"c{i}", receiver_queue_size=20) for i in range(3)]

    def work(index: int) -> None:
        consumer = consumers[index]
        while True:
            batch = consumer.batch_receive(max_messages=10, timeout="1s")
            if not batch:
                return
            received[index].extend(m.message_id for m in batch)
            consumer.acknowledge(batch)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for consumer in consumers:
        consumer.close()

    everything = received[0] + received[1] + received[2]
    assert len(everything) == len(set(everything)) == len(sent)  # no duplicates, no loss
    assert set(everything) == set(sent)
    # The cursor is the mark-delete position, and no claim outlives its ack.
    assert cursor_and_claims(dsn) == (high_watermarks(dsn), 0)
    assert sql_value(
        dsn, "SELECT backlog_messages FROM txnq.subscription_status WHERE subscription = 'workers'"
    ) in (0, None)


KILLED_CONSUMER = textwrap.dedent(
    """
    import sys, txnq
    client = txnq.Client(sys.argv[1])
    consumer = client.subscribe("jobs", "workers", "shared", initial_position="earliest",
                                consumer_name="doomed", lease="1s", poll_interval="100ms",
                                receiver_queue_size=10)
    for i in range(12):
        message = consumer.receive(timeout=10)
        if i % 2 == 0:
            consumer.acknowledge(message)
            print("acked", message.message_id.offset, flush=True)
    print("holding", flush=True)
    import time; time.sleep(60)
    """
)


def test_a_killed_shared_consumer_loses_its_claims_to_the_others(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        sent = {producer.send(f"m{i}").offset for i in range(60)}
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_CONSUMER, dsn],
        stdout=subprocess.PIPE,
        text=True,
        cwd=os.path.dirname(__file__),
    )
    acked_by_dead: set[int] = set()
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("acked"):
                acked_by_dead.add(int(line.split()[1]))
            if line.startswith("holding"):
                break
        held = int(sql_value(dsn, HELD))
        assert held > 0  # it holds messages it received and never acknowledged
        process.send_signal(signal.SIGKILL)  # no close: only its lease tells
        process.wait(timeout=5)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)

    assert len(acked_by_dead) == 6
    with shared(client, "survivor", lease="1s") as survivor:
        rest = receive_messages(survivor, len(sent) - len(acked_by_dead), timeout=15)
        survivor.acknowledge(rest)
        assert_nothing_more(survivor, 0.5)
    offsets = [m.message_id.offset for m in rest]
    assert len(offsets) == len(set(offsets))
    assert set(offsets) | acked_by_dead == sent and not set(offsets) & acked_by_dead
    # The ones the dead consumer had received are redeliveries now.
    assert sum(1 for m in rest if m.redelivery_count >= 1) >= 6
    assert cursor_and_claims(dsn) == ([max(sent)], 0)


def test_a_slow_shared_consumer_keeps_what_it_holds(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("long job")
    with (
        shared(client, "slow", lease="600ms") as slow,
        shared(client, "idle", lease="600ms") as idle,
    ):
        message = receive_messages(slow, 1)[0]
        time.sleep(2.0)  # three leases: renewed by the client library meanwhile
        assert_nothing_more(idle, 0.3)
        slow.acknowledge(message)


def test_cumulative_ack_is_refused_on_shared_subscriptions(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("x")
    with shared(client) as consumer:
        message = receive_messages(consumer, 1)[0]
        with pytest.raises(errors.InvalidArgumentError, match="individually"):
            consumer.acknowledge_cumulative(message)
        consumer.acknowledge(message)


def test_closing_a_shared_consumer_hands_its_messages_over_at_once(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        for i in range(5):
            producer.send(f"m{i}")
    first = shared(client, "first", lease="30s")
    receive_messages(first, 1)
    first.close()  # four more sit in its receive queue, claimed
    with shared(client, "second", lease="30s") as second:
        again = receive_messages(second, 5, timeout=3)
    assert sorted(m.value for m in again) == [f"m{i}".encode() for i in range(5)]


# -- negative acks, ack timeout, dead letters, retry letters ----------------------------


def test_negative_ack_redelivers_after_the_backoff_delay(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("flaky")
    backoff = txnq.Backoff(min_delay="300ms", max_delay="700ms", multiplier=2)
    with shared(client, negative_ack_backoff=backoff) as consumer:
        message = receive_messages(consumer, 1)[0]
        assert message.redelivery_count == 0
        waited = []
        for expected in (1, 2, 3):
            # Before the call: the delay runs from when the server took the nack,
            # within the call (measured after it, 0.59965 s of a 0.6 s delay once).
            nacked_at = time.monotonic()
            consumer.negative_acknowledge(message)
            message = receive_messages(consumer, 1, timeout=5)[0]
            waited.append(time.monotonic() - nacked_at)
            assert message.redelivery_count == expected
        consumer.acknowledge(message)
        assert_nothing_more(consumer, 0.3)
    # 0.3 s, then 0.6 s, then capped at 0.7 s: never earlier.
    assert waited[0] >= 0.3 and waited[1] >= 0.6 and waited[2] >= 0.7
    assert [backoff.delay(n) for n in (0, 1, 5)] == pytest.approx([0.3, 0.6, 0.7])


def test_a_nacked_message_can_go_to_another_shared_consumer(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("x")
    with shared(client, "a", negative_ack_redelivery_delay=0) as a:
        message = receive_messages(a, 1)[0]
        a.close()
        # a is gone; its nack would have no holder: use a fresh pair instead
    with shared(client, "b", negative_ack_redelivery_delay=0) as b:
        again = receive_messages(b, 1)[0]
        assert again.message_id == message.message_id
        b.negative_acknowledge(again)
        assert receive_messages(b, 1)[0].redelivery_count == again.redelivery_count + 1


def test_an_unacknowledged_message_comes_back_after_the_ack_timeout(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("forgotten")
    with shared(client, ack_timeout="500ms") as consumer:
        first = receive_messages(consumer, 1)[0]
        received_at = time.monotonic()
        again = receive_messages(consumer, 1, timeout=5)[0]
        assert time.monotonic() - received_at >= 0.45
        assert again.message_id == first.message_id and again.redelivery_count == 1
        consumer.acknowledge(again)
        assert_nothing_more(consumer, 0.8)


def test_without_ack_timeout_an_unacknowledged_message_stays_with_its_consumer(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("mine")
    with shared(client, "a") as a, shared(client, "b") as b:
        got = [c for c in (a, b) if c.receive(timeout=2) is not None]
        assert len(got) == 1
        assert_nothing_more(a, 0.5)
        assert_nothing_more(b, 0.1)


def test_a_message_goes_to_the_dead_letter_topic_after_max_redeliveries(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("jobs")
    event_time = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    with client.producer("jobs") as producer:
        poison = producer.send(
            b"\x00poison", key="k9", properties={"a": "1"}, event_time=event_time
        )
        producer.send("fine")
    policy = txnq.DeadLetterPolicy(max_redeliver_count=2)
    with shared(client, dead_letter_policy=policy, negative_ack_redelivery_delay=0) as consumer:
        deliveries = []
        fine = None
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            message = consumer.receive(timeout=1)
            if message is None:
                break
            if message.value == b"fine":
                fine = message
                consumer.acknowledge(message)
                continue
            deliveries.append(message.redelivery_count)
            consumer.negative_acknowledge(message)
        assert fine is not None
    assert deliveries == [0, 1, 2]  # delivered 1 + max_redeliver_count times

    with client.subscribe(
        "jobs-workers-DLQ", "inspect", initial_position="earliest", **FAST
    ) as dead:
        letter = receive_messages(dead, 1)[0]
        assert_nothing_more(dead, 0.3)
    assert letter.value == b"\x00poison" and letter.key == "k9"
    assert letter.event_time == event_time
    assert letter.properties["a"] == "1"
    assert letter.properties["REAL_TOPIC"] == "jobs"
    assert letter.properties["REAL_SUBSCRIPTION"] == "workers"
    assert letter.properties["ORIGIN_MESSAGE_ID"] == str(poison)
    assert letter.properties["REDELIVERY_COUNT"] == "2"
    assert "max_redeliver_count 2" in letter.properties["DEAD_LETTER_REASON"]
    assert "nack" in letter.properties["DEAD_LETTER_REASON"]
    # Acknowledged on the original subscription in the same transaction.
    assert cursor_and_claims(dsn) == ([1], 0)


def test_reconsume_later_goes_through_the_retry_topic_then_dead_letters(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("retry me", key="k", properties={"p": "v"})
    policy = txnq.DeadLetterPolicy(max_redeliver_count=1)
    with shared(client, dead_letter_policy=policy, retry_enable=True) as consumer:
        original = receive_messages(consumer, 1)[0]
        asked_at = time.monotonic()
        consumer.reconsume_later(original, "400ms")
        retried = receive_messages(consumer, 1, timeout=5)[0]
        assert time.monotonic() - asked_at >= 0.4
        assert retried.message_id.topic == "jobs-workers-RETRY"
        assert retried.value == b"retry me" and retried.key == "k"
        assert retried.properties["RECONSUMETIMES"] == "1"
        assert retried.properties["ORIGIN_MESSAGE_ID"] == str(original.message_id)
        assert retried.properties["p"] == "v"
        consumer.reconsume_later(retried, "100ms")  # past max_redeliver_count: dead letter
        assert_nothing_more(consumer, 0.6)
    with client.subscribe(
        "jobs-workers-DLQ", "inspect", initial_position="earliest", **FAST
    ) as dead:
        letter = receive_messages(dead, 1)[0]
    assert letter.properties["RECONSUMETIMES"] == "2" and letter.value == b"retry me"


# -- delayed delivery -------------------------------------------------------------------


def test_delayed_messages_are_not_delivered_early_on_shared_subscriptions(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("jobs")
    with shared(client) as consumer:
        with client.producer("jobs") as producer:
            sent_at = datetime.now(UTC)
            later = producer.send("later", deliver_after="800ms")
            at = datetime.now(UTC) + timedelta(milliseconds=400)
            sooner = producer.send("sooner", deliver_at=at)
            now = producer.send("now")
        first = receive_messages(consumer, 1)[0]
        assert first.message_id == now
        second = receive_messages(consumer, 1, timeout=5)[0]
        assert second.message_id == sooner and datetime.now(UTC) >= at
        third = receive_messages(consumer, 1, timeout=5)[0]
        assert third.message_id == later
        assert datetime.now(UTC) >= sent_at + timedelta(milliseconds=800)
        assert third.redelivery_count == 0
        consumer.acknowledge([first, second, third])
    assert len({later.offset, sooner.offset, now.offset}) == 3  # each delayed send is one entry


def test_exclusive_subscriptions_deliver_delayed_messages_at_once(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("later", deliver_after="1h")
    with client.subscribe("jobs", "audit", initial_position="earliest", **FAST) as consumer:
        assert receive_messages(consumer, 1)[0].value == b"later"


def test_delayed_delivery_input_is_checked(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    producer = client.producer("jobs")
    with pytest.raises(errors.InvalidArgumentError, match="not both"):
        producer.send("x", deliver_after="1s", deliver_at=datetime.now(UTC))
    with pytest.raises(errors.InvalidArgumentError, match="timezone"):
        producer.send("x", deliver_at=datetime.now())
    with pytest.raises(errors.InvalidArgumentError):
        producer.send("x", deliver_after="soon")


# -- key_shared ---------------------------------------------------------------------------


def send_key_sequences(client: txnq.Client, keys: list[str], per_key: int) -> None:
    """``key:seq`` for seq 0..per_key-1 of every key, interleaved, to topic ``jobs``."""
    with client.producer("jobs") as producer:
        for seq in range(per_key):
            for key in keys:
                producer.send_async(f"{key}:{seq}", key=key)
        producer.flush()


def assert_each_key_in_order(
    order: list[tuple[str, int]], keys: list[str], per_key: int, trace: list[str]
) -> None:
    """Each key's first deliveries, in receive order, are 0..per_key-1 (redeliveries
    of an earlier seq may follow); on failure the key's trace is shown."""
    for key in keys:
        first_seen = list(dict.fromkeys(seq for k, seq in order if k == key))
        assert first_seen == list(range(per_key)), (
            f"{key} out of order: {first_seen}\n"
            + "\n".join(t for t in trace if t.startswith(key + ":"))
        )


def test_key_shared_keeps_each_key_in_order_while_consumers_come_and_go(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("jobs", partitions=2)
    keys = [f"key-{k}" for k in range(8)]
    per_key = 40
    send_key_sequences(client, keys, per_key)

    lock = threading.Lock()
    seen: list[tuple[str, int, str]] = []  # (key, seq, consumer) in receive order
    trace: list[str] = []
    stop = threading.Event()
    rng = random.Random(7)

    def work(consumer: txnq.Consumer) -> None:
        while not stop.is_set():
            try:
                message = consumer.receive(timeout=0.2)
            except errors.ClosedError:
                return
            if message is None:
                continue
            key, seq = message.value.decode().split(":")
            with lock:
                seen.append((key, int(seq), consumer.name))
                trace.append(
                    f"{key}:{seq}@{consumer.name}/{consumer.consumer_id}"
                    f" r{message.redelivery_count}"
                )
            time.sleep(rng.random() * 0.002)
            try:
                consumer.acknowledge(message)
            except errors.ClosedError:
                return

    def start(name: str) -> tuple[txnq.Consumer, threading.Thread]:
        consumer = shared(
            client, name, subscription_type="key_shared", receiver_queue_size=5, lease="1s"
        )
        thread = threading.Thread(target=work, args=(consumer,))
        thread.start()
        return consumer, thread

    def progress() -> int:
        with lock:
            return len({(k, s) for k, s, _ in seen})

    total = len(keys) * per_key
    a, thread_a = start("a")
    b, thread_b = start("b")
    wait_until(lambda: progress() >= total // 4, timeout=30, what="a quarter consumed")
    c, thread_c = start("c")  # joins: takes over some keys
    wait_until(lambda: progress() >= total // 2, timeout=30, what="half consumed")
    a.close()  # leaves with messages in its receive queue
    thread_a.join(timeout=10)
    wait_until(lambda: progress() >= total, timeout=60, what="everything consumed")
    stop.set()
    for consumer, thread in ((b, thread_b), (c, thread_c)):
        thread.join(timeout=10)
        consumer.close()

    with lock:
        order = list(seen)
    assert_each_key_in_order([(k, seq) for k, seq, _ in order], keys, per_key, trace)
    owners = {name for _, _, name in order}
    assert owners == {"a", "b", "c"}


def test_key_shared_keeps_each_key_in_order_while_consumers_are_replaced_again_and_again(
    client: txnq.Client,
) -> None:
    """Consumers closed (with messages in their receive queues) and replaced
    twelve times while the others claim: before claim_v1 read its clock after
    the cursor lock, a message released by a close was often delivered after
    later messages of its key. Bounded: 360 messages, at most two minutes."""
    client.admin.create_topic("jobs")
    keys = [f"key-{k}" for k in range(6)]
    per_key = 60
    send_key_sequences(client, keys, per_key)
    lock = threading.Lock()
    seen: list[tuple[str, int]] = []
    trace: list[str] = []
    rng = random.Random(11)

    def work(consumer: txnq.Consumer, stop: threading.Event) -> None:
        while not stop.is_set():
            try:
                message = consumer.receive(timeout=0.1)
            except errors.ClosedError:
                return
            if message is None:
                continue
            key, seq = message.value.decode().split(":")
            with lock:
                seen.append((key, int(seq)))
                trace.append(f"{key}:{seq}@{consumer.name} r{message.redelivery_count}")
            time.sleep(rng.random() * 0.003)
            try:
                consumer.acknowledge(message)
            except errors.ClosedError:
                return

    live: list[tuple[txnq.Consumer, threading.Thread, threading.Event]] = []

    def start(index: int) -> None:
        consumer = shared(
            client,
            f"c{index}",
            subscription_type="key_shared",
            receiver_queue_size=5,
            lease="1s",
            poll_interval="50ms",
        )
        stop = threading.Event()
        thread = threading.Thread(target=work, args=(consumer, stop))
        thread.start()
        live.append((consumer, thread, stop))

    def progress() -> int:
        with lock:
            return len(set(seen))

    total = len(keys) * per_key
    for index in range(4):
        start(index)
    started = 4
    try:
        for step in range(1, 13):
            wait_until(
                lambda step=step: progress() >= step * total // 13,
                timeout=120,
                what=f"{step}/13 consumed",
            )
            consumer, thread, stop = live.pop(rng.randrange(len(live)))
            consumer.close()  # with messages in its receive queue
            stop.set()
            thread.join(timeout=10)
            start(started)
            started += 1
        wait_until(lambda: progress() >= total, timeout=120, what="everything consumed")
    finally:
        for consumer, thread, stop in live:
            stop.set()
            thread.join(timeout=10)
            consumer.close()
    with lock:
        order = list(seen)
    assert_each_key_in_order(order, keys, per_key, trace)


def test_key_shared_sends_one_key_to_one_consumer(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        for i in range(60):
            producer.send(f"{i}", key=f"k{i % 6}")
    a = shared(client, "a", subscription_type="key_shared")
    b = shared(client, "b", subscription_type="key_shared")
    try:
        owner: dict[str, str] = {}
        deadline = time.monotonic() + 15
        count = 0
        while count < 60 and time.monotonic() < deadline:
            for consumer in (a, b):
                message = consumer.receive(timeout=0.05)
                if message is None:
                    continue
                count += 1
                assert owner.setdefault(str(message.key), consumer.name) == consumer.name
                consumer.acknowledge(message)
        assert count == 60
    finally:
        a.close()
        b.close()


# -- transactions -------------------------------------------------------------------------


def test_a_transactional_ack_holds_the_message_until_the_transaction_ends(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("job")
    with shared(client, "a", ack_timeout="300ms") as a, shared(client, "b") as b:
        message = receive_messages(a, 1)[0]
        txn = client.new_transaction()
        a.acknowledge(message, txn=txn)
        # Held: no redelivery, although the ack timeout passes.
        assert_nothing_more(b, 0.8)
        other = client.new_transaction()
        with pytest.raises(errors.TransactionConflictError):
            b.acknowledge(message, txn=other)
        with pytest.raises(errors.TransactionConflictError):
            b.acknowledge(message)
        other.abort()
        txn.abort()  # deliverable again, to either consumer

        def redelivered() -> tuple[txnq.Consumer, txnq.Message] | None:
            for consumer in (a, b):
                got = consumer.receive(timeout=0.05)
                if got is not None:
                    return consumer, got
            return None

        holder, again = wait_until(redelivered, timeout=5, what="redelivery after the abort")
        assert again.message_id == message.message_id and again.redelivery_count == 1
        with client.new_transaction() as committed:
            holder.acknowledge(again, txn=committed)
        assert_nothing_more(a, 0.5)
        assert_nothing_more(b, 0.1)
    assert cursor_and_claims(dsn) == ([0], 0)


def test_a_timed_out_transaction_releases_its_shared_acks(
    client: txnq.Client, dsn: str, worker: CoordinatorWorker
) -> None:
    client.admin.create_topic("jobs")
    client.producer("jobs").send("job")
    with shared(client) as consumer:
        message = receive_messages(consumer, 1)[0]
        txn = client.new_transaction(timeout="500ms")
        consumer.acknowledge(message, txn=txn)
        time.sleep(0.6)
        client.query("abort_timed_out", {"max_count": 100})
        again = receive_messages(consumer, 1, timeout=10)[0]
        assert again.message_id == message.message_id
        consumer.acknowledge(again)
    assert cursor_and_claims(dsn) == ([0], 0)


def test_seek_on_a_shared_subscription_delivers_again(client: txnq.Client) -> None:
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        for i in range(3):
            producer.send(f"m{i}")
    with shared(client) as consumer:
        consumer.acknowledge(receive_messages(consumer, 3))
        consumer.seek("earliest")
        again = receive_messages(consumer, 3, timeout=5)
        assert sorted(m.value for m in again) == [b"m0", b"m1", b"m2"]


# -- key_shared: a claim racing a release (SQL level, deterministic) -----------------------

RING_OWNER = """
WITH ring AS (
    SELECT k.consumer_id AS id, txnq.key_hash_v1(convert_to(k.name || '#' || g.n, 'UTF8')) AS pt
      FROM txnq.consumers k CROSS JOIN generate_series(0, 15) AS g(n)
     WHERE k.subscription_id = %(subscription_id)s)
SELECT k.name FROM txnq.consumers k
 WHERE k.consumer_id = txnq.key_owner_v1(
           txnq.key_hash_v1(convert_to(%(key)s, 'UTF8')),
           (SELECT array_agg(r.pt ORDER BY r.pt, r.id) FROM ring r),
           (SELECT array_agg(r.id ORDER BY r.pt, r.id) FROM ring r))
"""


def claim_offsets(conn: psycopg.Connection[Any], params: dict[str, Any], count: int) -> list[int]:
    rows = conn.execute(
        "SELECT entry_offset FROM txnq.claim_v1(%(topic_id)s, %(subscription_id)s, "
        "%(consumer_id)s, %(count)s)",
        {**params, "count": count},
    ).fetchall()
    return [row[0] for row in rows]


def wait_for_lock_wait(dsn: str, pid: int) -> None:
    wait_until(
        lambda: sql_value(
            dsn,
            "SELECT count(*) FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
            (pid,),
        ),
        timeout=10,
        what=f"backend {pid} waiting for a lock",
    )


def test_key_shared_claim_waiting_while_a_consumer_closes_keeps_the_key_in_order(
    client: txnq.Client, dsn: str
) -> None:
    """A claim that waits for the cursor rows (another consumer is claiming)
    while the key's consumer closes must start the key at its first released
    message, not at the later ones that were already waiting (the released ones
    became deliverable at the time of the release, after the claim started)."""
    client.admin.create_topic("jobs")
    topic_id = client.admin.get_topic("jobs").topic_id
    subscription_id = sql_value(
        dsn,
        "SELECT txnq.subscribe_v1(%s, 'workers', 'key_shared', 'read_committed', 'earliest')",
        (topic_id,),
    )
    a, c = (
        sql_value(dsn, "SELECT txnq.register_consumer_v1(%s, %s, 0, 60)", (subscription_id, name))
        for name in ("a", "c")
    )
    key = next(
        k
        for k in (f"key-{i}" for i in range(100))
        if sql_value(dsn, RING_OWNER, {"subscription_id": subscription_id, "key": k}) == "a"
    )
    with client.producer("jobs") as producer:
        for i in range(8):
            producer.send(f"{key}:{i}", key=key)  # offsets 0..7, one entry each
    params = {"topic_id": topic_id, "subscription_id": subscription_id}
    with (
        psycopg.connect(dsn, autocommit=True) as conn_a,
        psycopg.connect(dsn, autocommit=True) as conn_c,
        psycopg.connect(dsn) as other_claim,
    ):
        # (A claim may only write what it dispatches as waiting: take them next time.)
        held = claim_offsets(conn_a, {**params, "consumer_id": a}, 3)
        held = held or claim_offsets(conn_a, {**params, "consumer_id": a}, 3)
        assert held == [0, 1, 2]
        # c's claim writes 3..7 as waiting; the key is a's and a holds 0..2.
        assert claim_offsets(conn_c, {**params, "consumer_id": c}, 5) == []
        assert sql_value(dsn, "SELECT count(*) FROM txnq.claims WHERE consumer_id IS NULL") == 5

        # Another consumer's claim holds the subscription's cursor rows ...
        other_claim.execute(
            "SELECT 1 FROM txnq.cursors WHERE subscription_id = %s FOR UPDATE", (subscription_id,)
        )
        result: list[list[int]] = []
        claimer = threading.Thread(
            target=lambda: result.append(claim_offsets(conn_c, {**params, "consumer_id": c}, 5))
        )
        claimer.start()
        try:
            wait_for_lock_wait(dsn, conn_c.info.backend_pid)  # ... c's claim waits for them
            # a closes meanwhile: its claims go back, its key moves to c.
            sql(dsn, "SELECT txnq.release_claims_v1(%s, %s)", (subscription_id, a))
            sql(dsn, "DELETE FROM txnq.consumers WHERE consumer_id = %s", (a,))
        finally:
            other_claim.commit()
            claimer.join(timeout=10)
    assert result == [[0, 1, 2, 3, 4]]


def test_key_shared_nack_redelivers_after_later_messages_a_release_before(
    client: txnq.Client, dsn: str
) -> None:
    """The order after a redelivery, as documented: a nacked message waits for its
    delay while later messages of its key go out (as in Pulsar); once due, or
    when its consumer leaves, it goes out before the key's undelivered ones."""
    client.admin.create_topic("jobs")
    topic_id = client.admin.get_topic("jobs").topic_id
    subscription_id = sql_value(
        dsn,
        "SELECT txnq.subscribe_v1(%s, 'workers', 'key_shared', 'read_committed', 'earliest')",
        (topic_id,),
    )
    a = sql_value(dsn, "SELECT txnq.register_consumer_v1(%s, 'a', 0, 60)", (subscription_id,))
    with client.producer("jobs") as producer:
        for i in range(9):
            producer.send(f"k:{i}", key="k")
    params = {"topic_id": topic_id, "subscription_id": subscription_id, "consumer_id": a}
    nack = (
        "SELECT txnq.nack_shared_v1(%(topic_id)s, 0, %(subscription_id)s, %(consumer_id)s, "
        "ARRAY[%(offset)s]::bigint[], ARRAY[0], ARRAY[%(delay)s]::float8[])"
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        held = claim_offsets(conn, params, 2) or claim_offsets(conn, params, 2)
        assert held == [0, 1]
        conn.execute(nack, {**params, "offset": 0, "delay": 3600})
        assert claim_offsets(conn, params, 2) == [2, 3]  # 0 waits for its delay
        conn.execute(nack, {**params, "offset": 1, "delay": 0})
        assert claim_offsets(conn, params, 2) == [1, 4]  # due: before 5, after 2 and 3
        b = sql_value(dsn, "SELECT txnq.register_consumer_v1(%s, 'b', 0, 60)", (subscription_id,))
        sql(dsn, "SELECT txnq.release_claims_v1(%s, %s)", (subscription_id, a))
        sql(dsn, "DELETE FROM txnq.consumers WHERE consumer_id = %s", (a,))
        # a left: b gets what a held (1..4) before 5, and 0 still waits.
        assert claim_offsets(conn, {**params, "consumer_id": b}, 5) == [1, 2, 3, 4, 5]


def test_a_consumer_whose_lease_ran_out_hands_out_nothing_from_its_queue(
    client: txnq.Client, dsn: str
) -> None:
    """Its queued messages may have been released to the others meanwhile: it
    waits for its heartbeat (which drops the queue), then gets them again."""
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        for i in range(12):
            producer.send(f"k:{i}", key="k")
    consumer = shared(
        client, "a", subscription_type="key_shared", receiver_queue_size=4, lease="1s"
    )
    try:
        first = receive_messages(consumer, 1)[0]
        consumer.acknowledge(first)
        # Another claim holds the cursor rows: the consumer's fetch thread waits
        # in its next claim and cannot renew the lease meanwhile.
        with psycopg.connect(dsn) as other_claim:
            other_claim.execute("SELECT 1 FROM txnq.cursors FOR UPDATE")
            wait_until(
                lambda: sql_value(
                    dsn,
                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND application_name = 'txnq-consumer-a'",
                ),
                timeout=10,
                what="the consumer's claim waiting for the cursor rows",
            )
            wait_until(
                lambda: sql_value(
                    dsn,
                    "SELECT count(*) FROM txnq.consumers"
                    " WHERE lease_expires_at < clock_timestamp()",
                ),
                timeout=10,
                what="the lease running out",
            )
            # Another consumer's heartbeat releases what it holds ...
            released = sql_value(
                dsn,
                "SELECT txnq.release_claims_v1(subscription_id, NULL) "
                "FROM txnq.subscriptions WHERE name = 'workers'",
            )
            assert released >= 3
            # ... so its queue, claimed before, is not handed out any more.
            assert_nothing_more(consumer, 0.5)
            other_claim.rollback()
        rest = receive_messages(consumer, 11, timeout=15)
        assert [m.value for m in rest] == [f"k:{i}".encode() for i in range(1, 12)]
        assert all(m.redelivery_count == 1 for m in rest[:3])
        consumer.acknowledge(rest)
    finally:
        consumer.close()


# -- liveness: no claim stays with a live consumer that no longer has it ------------------
# (The chaos copier on a shared subscription stalled at 19,500 of 20,000: a live
# copier held a batch of claims it would never hand out.)


def held_by(dsn: str, consumer: txnq.Consumer) -> int:
    return int(
        sql_value(
            dsn,
            HELD_BY,
            (consumer.consumer_id, consumer.consumer_id),
        )
    )


def test_a_lost_fetch_connection_does_not_strand_the_claims_in_the_receive_queue(
    client: txnq.Client, dsn: str
) -> None:
    """The fetch connection breaks (PostgreSQL restarts; here its backend is
    terminated) while claimed messages wait in the receive queue. The consumer
    reconnects and keeps its session (the lease outlives the outage), so no
    heartbeat of anybody releases its claims; reconnecting drops the queue, so
    it must give those claims back (and any a lost claim_v1 reply made), or
    they are never delivered again while it lives."""
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        for i in range(10):
            producer.send(f"m{i}")
    consumer = shared(client, "a", receiver_queue_size=10, lease="30s")
    try:
        first = receive_messages(consumer, 1)[0]
        consumer.acknowledge(first)
        wait_until(lambda: held_by(dsn, consumer) == 9, what="nine claims queued")
        session = consumer.consumer_id
        fetch_backend = (
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'txnq-consumer-a'"
        )
        killed = sql_value(dsn, fetch_backend)
        assert sql_value(dsn, "SELECT pg_terminate_backend(%s)", (killed,))
        wait_until(
            lambda: [row for row in sql(dsn, fetch_backend) if row[0] != killed],
            what="the fetch connection back",
        )
        time.sleep(0.5)  # its first heartbeat and claim round after reconnecting
        rest = receive_messages(consumer, 9, timeout=10)
        assert consumer.consumer_id == session  # the same session: its lease held
        assert sorted(m.value for m in rest) == [f"m{i}".encode() for i in range(1, 10)]
        consumer.acknowledge(rest)
        assert_nothing_more(consumer, 0.3)
    finally:
        consumer.close()
    assert cursor_and_claims(dsn) == ([9], 0)


@pytest.mark.parametrize("subscription_type", ["shared", "key_shared"])
def test_an_aborted_transaction_gives_back_what_it_failed_to_acknowledge(
    client: txnq.Client, dsn: str, subscription_type: str
) -> None:
    """A copier's transactional ack of its batch is refused (another transaction
    holds one of the messages: a redelivery after a lease ran out), so it aborts.
    The rest of its batch was never marked with the transaction: the abort
    gives it back too (as abort() rewinds an exclusive/failover consumer), or
    it stays with the live consumer for good."""
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        for i in range(4):
            producer.send(f"m{i}", key="k")
    a = shared(client, "a", subscription_type=subscription_type, receiver_queue_size=4)
    b = shared(client, "b", subscription_type=subscription_type, receiver_queue_size=4)
    try:

        def batch() -> tuple[txnq.Consumer, list[txnq.Message]] | None:
            for consumer in (a, b):
                got = consumer.batch_receive(4, timeout="50ms")
                if got:
                    return consumer, got
            return None

        holder, messages = wait_until(batch, what="a batch")
        other = b if holder is a else a
        while len(messages) < 4:
            messages += holder.batch_receive(4 - len(messages), timeout="1s")
        # The other consumer's transaction holds the first message.
        first = client.new_transaction()
        other.acknowledge(messages[0], txn=first)
        txn = client.new_transaction()
        with pytest.raises(errors.TransactionConflictError):
            holder.acknowledge(messages, txn=txn)
        txn.abort()
        # The abort gave the three back (they are not asserted unheld here: the
        # holder's fetch thread, woken by the abort, may claim them again at
        # once, and on key_shared it owns their key). Without the give-back
        # they stay claimed by the live holder, out of its queue, and the wait
        # below times out.
        first.commit()
        again: list[txnq.Message] = []

        def redelivered() -> bool:
            for consumer in (a, b):
                got = consumer.batch_receive(4, timeout="50ms")
                again.extend(got)
            return len(again) >= 3

        wait_until(redelivered, timeout=10, what="the rest of the batch redelivered")
        assert sorted(m.value for m in again) == [b"m1", b"m2", b"m3"]
        assert all(m.redelivery_count == 1 for m in again)
        with client.new_transaction() as committed:
            a.acknowledge([m for m in again], txn=committed)
        assert_nothing_more(a, 0.3)
        assert_nothing_more(b, 0.1)
    finally:
        a.close()
        b.close()
    assert cursor_and_claims(dsn) == ([3], 0)


def test_a_retry_letter_consumer_reconnecting_strands_nothing_of_its_parent(
    client: txnq.Client, dsn: str
) -> None:
    """With retry_enable, a consumer of the retry topic delivers into its
    parent's receive queue. When its fetch connection breaks it must drop only
    its own messages from that queue (partition numbers repeat across topics),
    and keep filling the parent's queue, not a copy of its own."""
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        for i in range(6):
            producer.send(f"m{i}")
    consumer = shared(client, "a", retry_enable=True, receiver_queue_size=6, lease="30s")
    try:
        first = receive_messages(consumer, 1)[0]
        consumer.reconsume_later(first, "300ms")
        wait_until(lambda: held_by(dsn, consumer) == 5, what="five claims queued")
        fetch_backend = (
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'txnq-consumer-a-retry'"
        )
        killed = sql_value(dsn, fetch_backend)
        assert sql_value(dsn, "SELECT pg_terminate_backend(%s)", (killed,))
        wait_until(
            lambda: [row for row in sql(dsn, fetch_backend) if row[0] != killed],
            what="the retry consumer's fetch connection back",
        )
        time.sleep(0.5)
        rest = receive_messages(consumer, 6, timeout=10)
        assert sorted((m.message_id.topic, m.value) for m in rest) == [
            ("jobs", f"m{i}".encode()) for i in range(1, 6)
        ] + [("jobs-workers-RETRY", b"m0")]
        consumer.acknowledge(rest)
        assert_nothing_more(consumer, 0.3)
    finally:
        consumer.close()


def test_a_dead_consumers_transaction_held_claims_come_back_when_it_times_out(
    client: txnq.Client, dsn: str, worker: CoordinatorWorker
) -> None:
    """The other suspects of the copier stall, at the SQL level: a consumer
    session holds claims, acknowledges some in a transaction, and its
    connection dies (as in a PostgreSQL restart) and its lease runs out. The
    heartbeat of a live consumer releases what it held outside the
    transaction; the transaction's claims stay held until its timeout aborts
    it, then come back too; the dead session's row may stay, but holds nothing."""
    client.admin.create_topic("jobs")
    topic_id = client.admin.get_topic("jobs").topic_id
    with psycopg.connect(dsn, autocommit=True) as ghost:
        subscription_id = ghost.execute(
            "SELECT txnq.subscribe_v1(%s, 'workers', 'shared', 'read_committed', 'earliest')",
            (topic_id,),
        ).fetchone()[0]  # type: ignore[index]
        with client.producer("jobs") as producer:
            for i in range(4):
                producer.send(f"m{i}")
        consumer_id = ghost.execute(
            "SELECT txnq.register_consumer_v1(%s, 'ghost', 0, 0.5)", (subscription_id,)
        ).fetchone()[0]  # type: ignore[index]
        params = {"topic_id": topic_id, "subscription_id": subscription_id}
        assert claim_offsets(ghost, {**params, "consumer_id": consumer_id}, 4) == [0, 1, 2, 3]
        txn = client.new_transaction(timeout="1s")
        ghost.execute(
            "SELECT txnq.ack_shared_v2(%s, 0, %s, '{0,1}', '{0,0}', %s, %s)",
            (topic_id, subscription_id, txn.txn_id.tc_id, txn.txn_id.seq),
        )
        sql(dsn, "SELECT pg_terminate_backend(%s)", (ghost.info.backend_pid,))
    time.sleep(0.6)  # the lease runs out
    with shared(client, "live") as live:
        # Its heartbeat releases what the dead session held outside the transaction.
        got = receive_messages(live, 2, timeout=5)
        assert sorted(m.value for m in got) == [b"m2", b"m3"]
        live.acknowledge(got)
        assert_nothing_more(live, 0.3)  # the transaction still holds m0 and m1
        time.sleep(0.5)
        client.query("abort_timed_out", {"max_count": 100})
        again = receive_messages(live, 2, timeout=10)
        assert sorted(m.value for m in again) == [b"m0", b"m1"]
        assert all(m.redelivery_count == 1 for m in again)
        live.acknowledge(again)
    assert cursor_and_claims(dsn) == ([3], 0)


def test_two_transactions_acknowledging_one_message_at_once_conflict(
    client: txnq.Client, dsn: str
) -> None:
    """A message delivered twice (released while its first consumer still
    worked on it: a lease ran out, a lost connection) is acknowledged by two
    transactions at the same moment. The second waits for the first's row
    lock; it must then see the first's mark and conflict, not return as if it
    held the message (it held nothing: its commit would publish output for a
    message the first transaction's abort delivers again)."""
    from txnq.database.queries import QUERIES

    client.admin.create_topic("jobs")
    topic_id = client.admin.get_topic("jobs").topic_id
    client.producer("jobs").send("m0")
    with shared(client, "a") as a:
        message = receive_messages(a, 1)[0]
        first, second = client.new_transaction(), client.new_transaction()

        def params(txn: txnq.Transaction) -> dict[str, Any]:
            return {
                "topic_id": topic_id,
                "partition": 0,
                "subscription_id": a.subscription_id,
                "offsets": [0],
                "batch_indexes": [0],
                "txn_tc": txn.txn_id.tc_id,
                "txn_seq": txn.txn_id.seq,
            }

        outcome: list[object] = []
        with (
            psycopg.connect(dsn) as holding,
            psycopg.connect(dsn, autocommit=True) as racing,
        ):
            holding.execute(QUERIES["ack_shared"], params(first))  # not committed yet

            def race() -> None:
                try:
                    outcome.append(racing.execute(QUERIES["ack_shared"], params(second)).fetchone())
                except psycopg.Error as exc:
                    outcome.append(exc.sqlstate)

            thread = threading.Thread(target=race)
            thread.start()
            wait_for_lock_wait(dsn, racing.info.backend_pid)
            holding.commit()
            thread.join(timeout=10)
        assert outcome == ["TQ012"]
        second.abort()
        first.abort()
        again = receive_messages(a, 1, timeout=5)[0]
        assert again.message_id == message.message_id
        a.acknowledge(again)
    assert cursor_and_claims(dsn) == ([0], 0)


def test_a_seek_that_overtakes_a_claim_in_flight_drops_what_the_claim_took(
    client: txnq.Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving the cluster pass once caught by chance (m0 and m1
    delivered after a seek to m2), made deterministic: the seek runs after a
    claim has taken messages at the old position and before they are queued.
    The consumer must give them back and claim afresh from the new position
    (txnq.consumer.claim_delivery, as Pulsar's client drops what arrives
    during a seek)."""
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        ids = [producer.send(f"m{i}".encode()) for i in range(6)]
    subscribed = threading.Event()
    holder: dict[str, Any] = {}
    original = plans._call
    seeks: list[int] = []

    def claim_then_seek(conn: Any, call: Any) -> Any:
        result = original(conn, call)
        if call.name == "claim" and result and not seeks:
            assert subscribed.wait(10)
            holder["consumer"].seek(ids[3])  # while the claim's messages are in flight
            seeks.append(len(result))
        return result

    monkeypatch.setattr(plans, "_call", claim_then_seek)
    consumer = shared(client)
    holder["consumer"] = consumer
    subscribed.set()
    with consumer:
        received = receive_messages(consumer, 3)
        assert seeks and seeks[0] >= 1  # the claim took messages before the seek
        assert [m.value for m in received] == [b"m3", b"m4", b"m5"]
        consumer.acknowledge(received)
        assert_nothing_more(consumer, 0.3)
