"""Consuming: cursors that survive restarts, individual / cumulative / batch
index acks, initial positions, seeks, failover and exclusive subscriptions,
negative acks and the NOTIFY wake-up.

Also run through a two-shard cluster's proxy (the cluster pass,
tests/cluster_pass.py): a partition's cursor, acks and entries are read on the
database that holds the partition (tests.helpers.partition_database: through
a proxy, the shard that owns it), what every shard holds alike on each, and a
consumer through a proxy is woken by its poll, not by NOTIFY."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

import txnq
from tests.helpers import (
    assert_nothing_more,
    databases,
    partition_database,
    receive_messages,
    sql,
    sql_total,
    sql_value,
    through_proxy,
    wait_until,
)
from txnq import errors

FAST = {"poll_interval": "200ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        yield client


def produce(client: txnq.Client, topic: str, count: int) -> list[txnq.MessageId]:
    """Send m0..m<count-1>, one entry each."""
    with client.producer(topic) as producer:
        return [producer.send(f"m{i}") for i in range(count)]


def cursor(dsn: str, subscription: str = "billing", partition: int = 0) -> int:
    return int(
        sql_value(
            partition_database(dsn, "orders", partition),
            "SELECT c.mark_delete_offset FROM txnq.cursors c "
            "JOIN txnq.subscriptions s USING (subscription_id) "
            "WHERE s.name = %s AND c.partition = %s",
            (subscription, partition),
        )
    )


def individual_acks(dsn: str) -> list[tuple[int, list[int] | None]]:
    return [
        (row[0], row[1])
        for row in sql(
            partition_database(dsn, "orders"),
            "SELECT entry_offset, acked_batch_indexes FROM txnq.individual_acks "
            "ORDER BY entry_offset",
        )
    ]


def values(messages: list[txnq.Message]) -> list[bytes]:
    return [m.value for m in messages]


# -- what arrives ----------------------------------------------------------------


def test_a_message_arrives_with_its_key_properties_and_event_time(client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    event_time = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    with client.producer("orders") as producer:
        sent = producer.send("héllo", key="k1", properties={"a": "1"}, event_time=event_time)
        producer.send(b"\x00raw")

    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        first, second = receive_messages(consumer, 2)

    assert first.value == "héllo".encode()
    assert first.key == "k1" and first.key_bytes == b"k1"
    assert first.properties == {"a": "1"}
    assert first.event_time == event_time
    assert first.message_id == sent
    assert first.redelivery_count == 0
    assert first.publish_time <= second.publish_time
    assert (second.value, second.key, second.properties, second.event_time) == (
        b"\x00raw",
        None,
        {},
        None,
    )


# -- cursors across restarts -------------------------------------------------


def test_unacknowledged_messages_are_redelivered_to_the_next_consumer(client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 10)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        received = receive_messages(consumer, 10)
        consumer.acknowledge([m for m in received if m.offset % 3 == 0])

    with client.subscribe("orders", "billing", **FAST) as consumer:
        again = receive_messages(consumer, 6)
        assert_nothing_more(consumer)
    assert [m.offset for m in again] == [1, 2, 4, 5, 7, 8]


def test_individual_acks_above_the_mark_delete_offset_fold_into_it_when_contiguous(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 6)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        m = receive_messages(consumer, 6)

        consumer.acknowledge([m[1], m[2]])
        assert cursor(dsn) == -1
        assert individual_acks(dsn) == [(1, None), (2, None)]

        consumer.acknowledge(m[0])
        assert cursor(dsn) == 2
        assert individual_acks(dsn) == []

        consumer.acknowledge(m[4])
        assert cursor(dsn) == 2
        assert individual_acks(dsn) == [(4, None)]

        consumer.acknowledge(m[3])
        assert cursor(dsn) == 4
        assert individual_acks(dsn) == []


def test_a_cumulative_ack_acknowledges_every_earlier_message_of_the_partition(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 8)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        m = receive_messages(consumer, 8)
        consumer.acknowledge(m[6])  # above the cumulative ack: stays individual
        consumer.acknowledge_cumulative(m[3])
        assert cursor(dsn) == 3
        assert individual_acks(dsn) == [(6, None)]

        consumer.acknowledge_cumulative(m[5])  # meets the individual ack of 6: folded in
        assert cursor(dsn) == 6
        assert individual_acks(dsn) == []

    with client.subscribe("orders", "billing", **FAST) as consumer:
        assert [m.offset for m in receive_messages(consumer, 1)] == [7]
        assert_nothing_more(consumer)


def test_acking_messages_of_a_batch_individually_redelivers_only_the_others(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders", batching_max_delay="1s") as producer:
        for i in range(5):
            producer.send_async(f"m{i}")
    assert sql(
        partition_database(dsn, "orders"), "SELECT entry_offset, message_count FROM txnq.entries"
    ) == [(0, 5)]

    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        m = receive_messages(consumer, 5)
        assert {x.batch_size for x in m} == {5}
        consumer.acknowledge([m[1], m[3]])
    assert cursor(dsn) == -1
    assert individual_acks(dsn) == [(0, [1, 3])]

    with client.subscribe("orders", "billing", **FAST) as consumer:
        again = receive_messages(consumer, 3)
        assert_nothing_more(consumer)
        assert [x.message_id.batch_index for x in again] == [0, 2, 4]
        assert values(again) == [b"m0", b"m2", b"m4"]
        consumer.acknowledge(again)  # the whole batch is acknowledged now: folded in
    assert cursor(dsn) == 0
    assert individual_acks(dsn) == []


def test_a_cumulative_ack_inside_a_batch_redelivers_only_the_rest_of_the_batch(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders", batching_max_delay="1s") as producer:
        for i in range(5):
            producer.send_async(f"m{i}")

    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        m = receive_messages(consumer, 5)
        consumer.acknowledge_cumulative(m[2])

    with client.subscribe("orders", "billing", **FAST) as consumer:
        assert values(receive_messages(consumer, 2)) == [b"m3", b"m4"]
        assert_nothing_more(consumer)


def test_a_long_run_of_individually_acked_entries_does_not_stall_delivery(
    client: txnq.Client,
) -> None:
    # One message left unacknowledged (a slow or poison message) while the
    # following ones are acknowledged: the acks cannot fold into the cursor.
    client.admin.create_topic("orders")
    produce(client, "orders", 8)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        consumer.acknowledge(receive_messages(consumer, 8)[1:6])

    # A small receive queue makes each fetch smaller than the run of acked entries.
    with client.subscribe("orders", "billing", receiver_queue_size=2, **FAST) as consumer:
        again = receive_messages(consumer, 3, timeout=3)
    assert [m.offset for m in again] == [0, 6, 7]


def test_acknowledging_a_batch_message_by_its_id_acks_only_that_message(
    client: txnq.Client,
) -> None:
    # A consumer may acknowledge a MessageId it kept rather than a Message it
    # holds (here: the failover consumer that does not own the partition, so it
    # never fetched the entry). Only that message of the batch is acknowledged.
    client.admin.create_topic("orders", partitions=2)
    with client.producer("orders", batching_max_delay="1s") as producer:
        pending = [producer.send_async(f"m{i}", partition=0) for i in range(5)]
        producer.flush()
        ids = [p.result(timeout=5) for p in pending]
    assert {m.offset for m in ids} == {0}

    a = failover_consumer(client, "a")
    b = failover_consumer(client, "b")
    try:
        wait_for_split([a, b], 2)
        b.acknowledge(ids[2])
        b.acknowledge_cumulative(ids[1])
    finally:
        a.close()
        b.close()

    with client.subscribe("orders", "billing", "failover", **FAST) as consumer:
        assert values(receive_messages(consumer, 2, timeout=2)) == [b"m3", b"m4"]
        assert_nothing_more(consumer)


# -- where a subscription starts ----------------------------------------------


def test_initial_position_earliest_delivers_the_existing_backlog(client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 3)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        assert values(receive_messages(consumer, 3)) == [b"m0", b"m1", b"m2"]


def test_initial_position_latest_delivers_only_what_comes_after_subscribing(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 3)
    with client.subscribe("orders", "billing", initial_position="latest", **FAST) as consumer:
        assert_nothing_more(consumer, 0.3)
        with client.producer("orders") as producer:
            producer.send(b"new")
        assert values(receive_messages(consumer, 1)) == [b"new"]


def test_the_initial_position_applies_only_when_the_subscription_is_created(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("orders")
    client.subscribe("orders", "billing", initial_position="earliest", **FAST).close()
    produce(client, "orders", 2)
    with client.subscribe("orders", "billing", initial_position="latest", **FAST) as consumer:
        assert values(receive_messages(consumer, 2)) == [b"m0", b"m1"]


# -- seeking ------------------------------------------------------------------


def test_seek_to_a_message_id_delivers_from_that_message_again(client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    ids = produce(client, "orders", 6)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        consumer.acknowledge(receive_messages(consumer, 6))

        consumer.seek(ids[4])

        assert [m.offset for m in receive_messages(consumer, 2)] == [4, 5]
        assert_nothing_more(consumer, 0.3)


def test_seek_to_a_publish_time_delivers_from_the_first_message_at_or_after_it(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 5)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        received = receive_messages(consumer, 5)
        consumer.acknowledge(received)

        consumer.seek(received[3].publish_time)

        assert [m.offset for m in receive_messages(consumer, 2)] == [3, 4]


def test_seek_to_earliest_and_latest(client: txnq.Client) -> None:
    client.admin.create_topic("orders", partitions=2)
    produce(client, "orders", 4)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        consumer.acknowledge(receive_messages(consumer, 4))

        consumer.seek("earliest")
        rewound = receive_messages(consumer, 4)
        assert sorted(values(rewound)) == [b"m0", b"m1", b"m2", b"m3"]

        consumer.seek("latest")
        assert_nothing_more(consumer, 0.3)
        with client.producer("orders") as producer:
            producer.send(b"new")
        assert values(receive_messages(consumer, 1)) == [b"new"]


def test_a_seek_by_offset_on_one_partition_leaves_the_others_alone(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders", partitions=2)
    with client.producer("orders") as producer:
        for p in (0, 1):
            for i in range(3):
                producer.send(f"p{p}-m{i}", partition=p)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        for message in receive_messages(consumer, 6):
            consumer.acknowledge_cumulative(message)

        consumer.seek(1, partition=1)

        assert values(receive_messages(consumer, 2)) == [b"p1-m1", b"p1-m2"]
    assert cursor(dsn, partition=0) == 2


def test_resetting_a_subscription_rewinds_a_live_consumer(client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 3)
    with client.subscribe(
        "orders", "billing", initial_position="earliest", lease="1s", **FAST
    ) as consumer:
        consumer.acknowledge(receive_messages(consumer, 3))
        assert_nothing_more(consumer, 0.2)

        cursors = client.admin.reset_subscription("orders", "billing", "earliest")

        assert [c.mark_delete_offset for c in cursors] == [-1]
        assert values(receive_messages(consumer, 3, timeout=3)) == [b"m0", b"m1", b"m2"]


# -- exclusive and failover subscriptions -------------------------------------


def test_an_exclusive_subscription_refuses_a_second_consumer(client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    first = client.subscribe("orders", "billing", "exclusive", **FAST)

    with pytest.raises(errors.ConsumerBusyError, match="failover or shared subscription"):
        client.subscribe("orders", "billing", "exclusive", **FAST)

    first.close()
    client.subscribe("orders", "billing", "exclusive", **FAST).close()


def test_an_exclusive_subscription_is_free_again_once_a_dead_consumers_lease_runs_out(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    client.subscribe("orders", "billing", "exclusive", **FAST).close()
    (subscription,) = client.admin.list_subscriptions("orders")
    # A consumer that registered and then died: nobody renews its lease.
    sql(
        dsn,
        "SELECT txnq.register_consumer_v2(%s, 'dead', 0, 0.5)",
        (subscription.subscription_id,),
    )
    with pytest.raises(errors.ConsumerBusyError, match="dead"):
        client.subscribe("orders", "billing", "exclusive", **FAST)

    consumer = wait_until(
        lambda: try_subscribe(client), timeout=3, what="the exclusive subscription free again"
    )
    consumer.close()


def try_subscribe(client: txnq.Client) -> txnq.Consumer | None:
    try:
        return client.subscribe("orders", "billing", "exclusive", **FAST)
    except errors.ConsumerBusyError:
        return None


def failover_consumer(client: txnq.Client, name: str) -> txnq.Consumer:
    return client.subscribe(
        "orders",
        "billing",
        "failover",
        initial_position="earliest",
        consumer_name=name,
        lease="1s",
        **FAST,
    )


def wait_for_split(consumers: list[txnq.Consumer], partitions: int) -> list[list[int]]:
    """Wait until the consumers own disjoint, equal shares that cover every partition."""

    def split() -> list[list[int]] | None:
        shares = [c.assigned_partitions for c in consumers]
        owned = sorted(p for share in shares for p in share)
        even = {len(share) for share in shares} == {partitions // len(consumers)}
        return shares if owned == list(range(partitions)) and even else None

    return wait_until(split, timeout=4, what="an even failover split")


def test_failover_consumers_split_the_partitions_between_them(client: txnq.Client) -> None:
    client.admin.create_topic("orders", partitions=4)
    with failover_consumer(client, "a") as a, failover_consumer(client, "b") as b:
        shares = wait_for_split([a, b], 4)
        assert shares == [[0, 2], [1, 3]]  # partition p to consumer p mod n, by name


def test_closing_a_failover_consumer_hands_its_partitions_and_unacked_messages_over(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("orders", partitions=4)
    a = failover_consumer(client, "a")
    b = failover_consumer(client, "b")
    try:
        wait_for_split([a, b], 4)
        with client.producer("orders") as producer:
            for p in range(4):
                for i in range(2):
                    producer.send(f"p{p}-m{i}", partition=p)
        from_a = receive_messages(a, 4)
        assert {m.partition for m in from_a} == {0, 2}
        a.acknowledge(from_a[0])
        from_b = receive_messages(b, 4)
        assert {m.partition for m in from_b} == {1, 3}

        a.close()

        wait_until(lambda: b.assigned_partitions == [0, 1, 2, 3], timeout=3, what="takeover")
        handed_over = receive_messages(b, 3, timeout=3)
        assert sorted(m.message_id for m in handed_over) == sorted(m.message_id for m in from_a[1:])
        assert_nothing_more(b, 0.3)
    finally:
        a.close()
        b.close()


CONSUMER_PROCESS = textwrap.dedent(
    """
    import sys, time, txnq
    client = txnq.Client(sys.argv[1])
    consumer = client.subscribe("orders", "billing", "failover", initial_position="earliest",
                                consumer_name="a", lease="1s", poll_interval="200ms")
    print("subscribed", flush=True)
    time.sleep(30)
    """
)


def test_a_failover_consumer_that_dies_loses_its_partitions_when_its_lease_runs_out(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders", partitions=4)
    process = subprocess.Popen(
        [sys.executable, "-c", CONSUMER_PROCESS, dsn],
        stdout=subprocess.PIPE,
        cwd=os.path.dirname(__file__),
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline() == b"subscribed\n"
        with failover_consumer(client, "b") as b:
            wait_until(lambda: b.assigned_partitions == [1, 3], timeout=3, what="split")
            ids = produce(client, "orders", 8)

            process.send_signal(signal.SIGKILL)  # no close, no goodbye: only the lease tells
            process.wait(timeout=5)
            killed_at = time.monotonic()

            wait_until(lambda: b.assigned_partitions == [0, 1, 2, 3], timeout=4, what="takeover")
            assert time.monotonic() - killed_at < 3
            received = receive_messages(b, 8, timeout=3)
            assert sorted(m.message_id for m in received) == sorted(ids)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=5)


def test_a_consumer_whose_session_expired_starts_a_new_one_and_goes_on(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    with client.subscribe(
        "orders", "billing", initial_position="earliest", lease="1s", **FAST
    ) as consumer:
        old_session = consumer.consumer_id
        for database in databases(dsn):  # a cluster's every shard holds the session
            sql(
                database,
                "UPDATE txnq.consumers SET lease_expires_at = now() - interval '1s' "
                "WHERE consumer_id = %s",
                (old_session,),
            )

        wait_until(lambda: consumer.consumer_id != old_session, timeout=3, what="a new session")
        produce(client, "orders", 1)
        assert values(receive_messages(consumer, 1)) == [b"m0"]
    assert sql_total(dsn, "SELECT count(*) FROM txnq.consumers") == 0


def test_a_consumer_whose_connections_are_cut_reconnects_and_goes_on(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 1)
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        consumer.acknowledge(receive_messages(consumer, 1))
        sql(  # through a cluster's proxy: the client's sessions on the proxy
            dsn,
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND application_name IN ('txnq', %s)",
            (f"txnq-consumer-{consumer.name}",),
        )

        produce(client, "orders", 2)

        again = receive_messages(consumer, 2, timeout=4)
        consumer.acknowledge(again)
    assert values(again) == [b"m0", b"m1"]
    assert [m.offset for m in again] == [1, 2]


# -- negative acks and wake-ups ------------------------------------------------


def test_a_negatively_acknowledged_message_comes_back_with_redelivery_count_one(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("orders")
    produce(client, "orders", 1)
    with client.subscribe(
        "orders",
        "billing",
        initial_position="earliest",
        negative_ack_redelivery_delay="100ms",
        **FAST,
    ) as consumer:
        (message,) = receive_messages(consumer, 1)
        nacked_at = time.monotonic()

        consumer.negative_acknowledge(message)

        (again,) = receive_messages(consumer, 1, timeout=2)
        assert time.monotonic() - nacked_at >= 0.1
        assert again.message_id == message.message_id
        assert again.value == message.value
        assert again.redelivery_count == 1
        consumer.acknowledge(again)
        assert_nothing_more(consumer, 0.3)


def test_a_waiting_consumer_is_woken_by_notify_long_before_its_poll_interval(
    client: txnq.Client, dsn: str
) -> None:
    # Through a cluster's proxy a shard's NOTIFY does not reach the consumer's
    # LISTEN on the proxy (docs/cluster.md): it is woken by its poll, so this
    # checks that the poll bounds the wait there, with a shorter interval.
    proxy = through_proxy(dsn)
    poll = 1.0 if proxy else 5.0
    client.admin.create_topic("orders")
    with (
        client.producer("orders") as producer,
        client.subscribe("orders", "billing", poll_interval=poll, lease="30s") as consumer,
    ):
        wait_until(
            lambda: sql_total(dsn, "SELECT count(*) FROM txnq.consumer_waiters"),
            timeout=3,
            what="the consumer waiting",
        )
        sent_at = time.monotonic()

        producer.send(b"wake up")

        message = consumer.receive(timeout=poll + 3)
        assert message is not None and message.value == b"wake up"
        assert time.monotonic() - sent_at < (poll + 1.0 if proxy else 1.0)


def test_live_producers_and_consumers_follow_added_partitions(client: txnq.Client) -> None:
    client.admin.create_topic("growing", partitions=1)
    consumer = client.subscribe(
        "growing", "billing", initial_position="earliest", lease="600ms", **FAST
    )
    producer = client.producer("growing")
    producer.send("before")
    client.admin.update_topic("growing", partitions=3)
    # An explicit partition beyond what the producer knew makes it look again.
    producer.send("on the new partition", partition=2)
    received = receive_messages(consumer, 2, timeout=10)
    assert {m.message_id.partition for m in received} == {0, 2}
    consumer.acknowledge(received)
    assert_nothing_more(consumer)


# -- a read position behind the cursor ------------------------------------------------


def test_a_fetch_never_returns_what_the_cursor_has_moved_past(
    client: txnq.Client, dsn: str
) -> None:
    """fetch_v3: a read position older than the mark-delete offset (another
    transaction acknowledged cumulatively after this consumer fetched) starts
    at the mark-delete offset; fetch_v2 returned the acknowledged entries."""
    client.admin.create_topic("orders")
    produce(client, "orders", 6)
    consumer = client.subscribe("orders", "billing", initial_position="earliest", **FAST)
    received = receive_messages(consumer, 6)
    consumer.acknowledge_cumulative(received[3])
    assert cursor(dsn) == 3
    params = {
        "topic_id": client.admin.get_topic("orders").topic_id,
        "partition": 0,
        "subscription_id": consumer.subscription_id,
        "after_offset": -1,  # a read position from before the ack
        "max_entries": 100,
        "max_bytes": 1 << 20,
    }
    assert [row["entry_offset"] for row in client.query("fetch", params)] == [4, 5]
    old = sql(  # on the database that holds the partition: fetch_v2 is a shard's
        partition_database(dsn, "orders"),
        "SELECT entry_offset FROM txnq.fetch_v2(%(topic_id)s, %(partition)s, "
        "%(subscription_id)s, %(after_offset)s, %(max_entries)s, %(max_bytes)s)",
        params,
    )
    assert [row[0] for row in old] == [0, 1, 2, 3, 4, 5]  # what fetch_v3 fixes
    consumer.close()


def test_connections_raise_server_unavailable_while_postgresql_is_away(
    client: txnq.Client,
) -> None:
    from txnq.database.connections import create_engine_for

    # The client's pool pointed at a port nobody listens on: a server that is away.
    reachable, client._engine = (
        client._engine,
        create_engine_for("postgresql://postgres@127.0.0.1:1/postgres"),
    )
    try:
        with pytest.raises(errors.ServerUnavailableError, match="retry it"), client.connection():
            pass
        with pytest.raises(errors.ServerUnavailableError):
            client.checkout()
        with pytest.raises(errors.ServerUnavailableError):
            client.admin.list_topics()
    finally:
        client._engine.dispose()
        client._engine = reachable
