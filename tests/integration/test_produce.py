"""Producing: gapless ordered offsets (invariant 1), batch entries, the
idempotent producer and its fencing (invariant 6), key routing, and the
storage the append path writes into (ledgers and entry logs).

Also run through a two-shard cluster's proxy (the cluster pass,
tests/cluster_pass.py): what a test reads or calls of a shard's own (entries,
ledgers, entry logs, append_v1) it reads or calls on the database that holds
the partition (tests.helpers.partition_database) or on each database behind
its DSN (databases, sql_union); producers register through the DSN."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterator

import psycopg
import pytest

import txnq
from tests.helpers import (
    assert_nothing_more,
    databases,
    partition_database,
    receive_messages,
    sql,
    sql_everywhere,
    sql_total,
    sql_union,
    sql_value,
)
from txnq import errors
from txnq.database.connections import translate
from txnq.database.migrate import upgrade
from txnq.producer import partition_for_key
from txnq.settings import load_settings


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        yield client


def entry_count(dsn: str) -> int:
    return sql_total(dsn, "SELECT count(*) FROM txnq.entries")


def register_producer(dsn: str, topic_id: int, name: str) -> tuple[int, int]:
    """(producer_id, epoch) of a new producer session made with plain SQL."""
    rows = sql(
        dsn, "SELECT producer_id, epoch FROM txnq.register_producer_v2(%s, %s)", (topic_id, name)
    )
    return rows[0][0], rows[0][1]


def owner(dsn: str) -> str:
    """The database of partition 0 of "orders": ``dsn``, or its owner shard."""
    return partition_database(dsn, "orders", 0)


APPEND = "SELECT entry_offset, duplicate FROM txnq.append_v1(%s, %s, %s, %s, %s, %s::bytea[])"


# -- ordering and gapless offsets (invariant 1) --------------------------------


def test_offsets_are_gapless_and_each_producer_keeps_its_order_under_concurrent_producers(
    dsn: str,
) -> None:
    producers_per_client, clients, messages_each = 2, 2, 60
    with txnq.Client(dsn) as admin_client:
        admin_client.admin.create_topic("orders", partitions=3)
    failures: list[BaseException] = []

    def produce(client: txnq.Client, name: str) -> None:
        try:
            with client.producer("orders", name=name) as producer:
                for i in range(messages_each):
                    payload = f"{name}:{i}".encode()
                    if i % 3 == 0:
                        producer.send(payload)  # synchronous, round-robin
                    else:
                        producer.send_async(payload, key=f"{name}-{i % 5}")
                    if i % 10 == 9:
                        producer.flush()
        except BaseException as exc:
            failures.append(exc)

    opened = [txnq.Client(dsn) for _ in range(clients)]
    try:
        threads = [
            threading.Thread(target=produce, args=(client, f"p{c}-{n}"))
            for c, client in enumerate(opened)
            for n in range(producers_per_client)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
        assert not any(thread.is_alive() for thread in threads)
    finally:
        for client in opened:
            client.close()
    assert failures == []

    for partition, offsets in sql_union(
        dsn,
        "SELECT partition, array_agg(entry_offset ORDER BY entry_offset) FROM txnq.entries "
        "GROUP BY partition ORDER BY partition",
    ):
        assert offsets == list(range(len(offsets))), f"partition {partition} has a gap"
    for database in databases(dsn):  # a shard's head rows of others' partitions: empty
        assert sql(
            database, "SELECT partition, next_offset FROM txnq.partitions ORDER BY partition"
        ) == sql(
            database,
            "SELECT h.partition, count(e.entry_offset) FROM txnq.partitions h "
            "LEFT JOIN txnq.entries e USING (topic_id, partition) GROUP BY 1 ORDER BY 1",
        )

    seen: dict[tuple[str, int], list[int]] = defaultdict(list)
    for partition, payload in sql_union(
        dsn,
        "SELECT partition, payload FROM txnq.messages "
        "ORDER BY partition, entry_offset, batch_index",
    ):
        name, number = bytes(payload).decode().split(":")
        seen[(name, partition)].append(int(number))
    everything = sorted((name, n) for (name, _), numbers in seen.items() for n in numbers)
    expected = sorted(
        (f"p{c}-{n}", i)
        for c in range(clients)
        for n in range(producers_per_client)
        for i in range(messages_each)
    )
    assert everything == expected  # every message exactly once
    for (name, partition), numbers in seen.items():
        assert numbers == sorted(numbers), f"{name} out of order on partition {partition}"


def test_each_producer_numbers_its_batches_without_gaps_per_partition(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders", partitions=2)
    with client.producer("orders", name="p1") as producer:
        for i in range(20):
            producer.send_async(f"m{i}", partition=i % 2)
            if i % 4 == 3:
                producer.flush()

    rows = sql_union(
        dsn,
        "SELECT partition, array_agg(sequence ORDER BY entry_offset, batch_index) "
        "FROM txnq.messages GROUP BY partition ORDER BY partition",
    )
    assert sorted(partition for partition, _ in rows) == [0, 1]
    for partition, sequences in rows:
        assert sequences == list(range(10)), f"partition {partition}"


# -- batch entries --------------------------------------------------------------


def test_batched_messages_share_an_entry_and_are_each_delivered_once_in_order(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders", batching_max_delay="1s") as producer:
        pending = [producer.send_async(f"m{i}".encode()) for i in range(50)]
        producer.flush()
        ids = [p.result(timeout=5) for p in pending]

    entries = sql(
        owner(dsn), "SELECT entry_offset, message_count FROM txnq.entries ORDER BY entry_offset"
    )
    assert len(entries) < 50
    assert sum(count for _, count in entries) == 50
    assert any(count > 1 for _, count in entries)
    by_offset: dict[int, list[int]] = defaultdict(list)
    for message_id in ids:
        by_offset[message_id.offset].append(message_id.batch_index)
    assert dict(entries) == {offset: len(indexes) for offset, indexes in by_offset.items()}
    for indexes in by_offset.values():
        assert indexes == list(range(len(indexes)))
    assert ids == sorted(ids)

    with client.subscribe(
        "orders", "billing", initial_position="earliest", poll_interval="200ms"
    ) as consumer:
        received = receive_messages(consumer, 50)
        assert_nothing_more(consumer)
    assert [m.value for m in received] == [f"m{i}".encode() for i in range(50)]
    assert [m.message_id for m in received] == ids


# -- idempotence and fencing (invariant 6) --------------------------------------


def test_a_retried_batch_is_written_once_and_returns_its_original_offset(
    client: txnq.Client, dsn: str
) -> None:
    topic = client.admin.create_topic("orders")
    producer_id, epoch = register_producer(dsn, topic.topic_id, "p1")
    batches = [(0, [b"a", b"b"]), (2, [b"c"]), (3, [b"d", b"e", b"f"])]
    offsets = [
        sql(owner(dsn), APPEND, (topic.topic_id, 0, producer_id, epoch, first, payloads))[0]
        for first, payloads in batches
    ]
    assert offsets == [(0, False), (1, False), (2, False)]

    # The latest batch and an older one, as a producer retries after a lost reply.
    assert sql(
        owner(dsn), APPEND, (topic.topic_id, 0, producer_id, epoch, 3, [b"d", b"e", b"f"])
    ) == [(2, True)]
    assert sql(owner(dsn), APPEND, (topic.topic_id, 0, producer_id, epoch, 0, [b"a", b"b"])) == [
        (0, True)
    ]

    assert entry_count(dsn) == 3
    assert sql_value(owner(dsn), "SELECT next_offset FROM txnq.partitions") == 3
    # The sequence goes on after the retries as if they never happened.
    assert sql(owner(dsn), APPEND, (topic.topic_id, 0, producer_id, epoch, 6, [b"g"])) == [
        (3, False)
    ]


def test_a_sequence_gap_is_rejected_as_out_of_order_and_writes_nothing(
    client: txnq.Client, dsn: str
) -> None:
    topic = client.admin.create_topic("orders")
    producer_id, epoch = register_producer(dsn, topic.topic_id, "p1")
    sql(owner(dsn), APPEND, (topic.topic_id, 0, producer_id, epoch, 0, [b"a"]))

    with pytest.raises(psycopg.Error) as raised:
        sql(owner(dsn), APPEND, (topic.topic_id, 0, producer_id, epoch, 5, [b"f"]))

    assert raised.value.sqlstate == "TQ003"
    error = translate(raised.value)
    assert isinstance(error, errors.OutOfOrderSequenceError)
    assert "next expected is 1" in str(error)
    assert "resend them in order" in str(error)
    assert entry_count(dsn) == 1
    assert sql_value(owner(dsn), "SELECT last_sequence FROM txnq.producer_sequences") == 0


def test_a_batch_overlapping_written_sequences_that_is_no_retry_is_rejected(
    client: txnq.Client, dsn: str
) -> None:
    topic = client.admin.create_topic("orders")
    producer_id, epoch = register_producer(dsn, topic.topic_id, "p1")
    sql(owner(dsn), APPEND, (topic.topic_id, 0, producer_id, epoch, 0, [b"a", b"b", b"c"]))

    with pytest.raises(psycopg.Error) as raised:
        sql(owner(dsn), APPEND, (topic.topic_id, 0, producer_id, epoch, 1, [b"b", b"c", b"d"]))

    assert isinstance(translate(raised.value), errors.OutOfOrderSequenceError)
    assert entry_count(dsn) == 1


def test_a_producer_whose_sequence_skips_ahead_gets_out_of_order_sequence_error(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders", name="p1") as producer:
        producer.send(b"first")
        producer._next_sequence[0] += 3  # as if three messages were lost on the way

        with pytest.raises(errors.OutOfOrderSequenceError, match="skips ahead"):
            producer.send(b"after the gap")
        assert entry_count(dsn) == 1


def test_a_named_producer_that_reconnects_continues_its_sequences(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders", name="p1") as first:
        before = [first.send(f"m{i}") for i in range(3)]
        first_epoch = first.epoch
    with client.producer("orders", name="p1") as again:
        after = [again.send(f"m{i}") for i in range(3, 5)]
        assert again.producer_id == first.producer_id
        assert again.epoch > first_epoch

    assert [m.offset for m in before + after] == [0, 1, 2, 3, 4]
    assert sql(owner(dsn), "SELECT first_sequence FROM txnq.entries ORDER BY entry_offset") == [
        (0,),
        (1,),
        (2,),
        (3,),
        (4,),
    ]
    assert sql_everywhere(dsn, "SELECT count(*) FROM txnq.producers") == [[(1,)]] * len(
        databases(dsn)
    )


def test_a_newer_producer_with_the_same_name_fences_the_older_one(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    old = client.producer("orders", name="p1")
    old.send(b"before")
    with txnq.Client(dsn) as other_client:
        new = other_client.producer("orders", name="p1")

        with pytest.raises(errors.ProducerFencedError, match="only the newest producer"):
            old.send(b"from the fenced session")
        with pytest.raises(errors.ProducerFencedError):
            old.send_async(b"still fenced")
        new.send(b"from the new session")
        new.close()
    old.close()

    assert sql(owner(dsn), "SELECT payload FROM txnq.messages ORDER BY entry_offset") == [
        (b"before",),
        (b"from the new session",),
    ]


def test_a_fenced_epoch_cannot_append_through_sql_either(client: txnq.Client, dsn: str) -> None:
    topic = client.admin.create_topic("orders")
    producer_id, old_epoch = register_producer(dsn, topic.topic_id, "p1")
    register_producer(dsn, topic.topic_id, "p1")

    with pytest.raises(psycopg.Error) as raised:
        sql(owner(dsn), APPEND, (topic.topic_id, 0, producer_id, old_epoch, 0, [b"x"]))

    assert raised.value.sqlstate == "TQ002"
    assert isinstance(translate(raised.value), errors.ProducerFencedError)
    assert entry_count(dsn) == 0


def test_a_producer_whose_connection_is_cut_reconnects_and_writes_each_message_once(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders", name="p1") as producer:
        producer.send(b"before")
        backend = producer._proxy.driver_connection.info.backend_pid
        sql(dsn, "SELECT pg_terminate_backend(%s)", (backend,))  # a proxy's session there

        after = producer.send(b"after")

    assert after.offset == 1
    assert sql(owner(dsn), "SELECT payload, sequence FROM txnq.messages ORDER BY entry_offset") == [
        (b"before", 0),
        (b"after", 1),
    ]


# -- routing ------------------------------------------------------------------


def test_messages_with_the_same_key_go_to_the_crc32_partition_of_the_key(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders", partitions=4)
    keys = [f"customer-{i}" for i in range(12)]
    with client.producer("orders") as producer:
        sent = [
            (key, producer.send(f"{key}/{round_}", key=key)) for round_ in range(3) for key in keys
        ]

    for key, message_id in sent:
        assert message_id.partition == partition_for_key(key.encode(), 4)
    assert len({message_id.partition for _, message_id in sent}) > 1  # the keys do spread
    for key, partitions in sql_union(
        dsn,
        "SELECT convert_from(key, 'UTF8'), array_agg(DISTINCT partition) "
        "FROM txnq.messages GROUP BY key",
    ):
        assert partitions == [partition_for_key(key.encode(), 4)]


def test_messages_without_a_key_spread_over_the_partitions(client: txnq.Client) -> None:
    client.admin.create_topic("orders", partitions=3)
    with client.producer("orders") as producer:
        partitions = {producer.send(f"m{i}").partition for i in range(6)}
    assert partitions == {0, 1, 2}


def test_producers_started_together_start_their_round_robin_on_different_partitions(
    client: txnq.Client,
) -> None:
    # Pulsar's round-robin router starts at a random partition, so producers
    # created at the same moment do not all queue on partition 0's head row.
    # 16 producers on 4 partitions all starting on the same one by chance:
    # 4**-15, about one in a billion.
    client.admin.create_topic("orders", partitions=4)
    firsts = set()
    for i in range(16):
        with client.producer("orders", name=f"p{i}") as producer:
            firsts.add(producer.send(b"first").partition)
    assert len(firsts) > 1


# -- storage: ledgers and entry logs -------------------------------------------


def test_ledgers_roll_over_into_contiguous_ranges_with_one_open_per_partition(
    client: txnq.Client, dsn: str
) -> None:
    for database in databases(dsn):  # a cluster's shards are migrated each on its own
        upgrade(
            database, settings=load_settings(ledger_max_entries=10, ledger_min_rollover_seconds=0)
        )
    assert sql_union(
        dsn, "SELECT ledger_max_entries, ledger_min_rollover_seconds FROM txnq.config"
    ) == [(10, 0)] * len(databases(dsn))
    client.admin.create_topic("orders", partitions=2)
    with client.producer("orders") as producer:
        for i in range(25):
            producer.send(f"m{i}", partition=0)
        for i in range(5):
            producer.send(f"m{i}", partition=1)

    ledgers = [
        row
        for partition in (0, 1)  # each from the database that holds the partition
        for row in sql(
            partition_database(dsn, "orders", partition),
            "SELECT partition, ledger_id, first_offset, last_offset, state FROM txnq.ledgers "
            "WHERE partition = %s ORDER BY ledger_id",
            (partition,),
        )
    ]
    assert ledgers == [
        (0, 0, 0, 9, "CLOSED"),
        (0, 1, 10, 19, "CLOSED"),
        (0, 2, 20, None, "OPEN"),
        (1, 0, 0, None, "OPEN"),
    ]
    # Every entry belongs to the ledger whose range holds its offset.
    assert (
        sql_total(
            dsn,
            "SELECT count(*) FROM txnq.entries e "
            "JOIN txnq.ledgers l USING (topic_id, partition, ledger_id) "
            "WHERE e.entry_offset < l.first_offset "
            "OR e.entry_offset > coalesce(l.last_offset, e.entry_offset)",
        )
        == 0
    )
    assert sql_total(dsn, "SELECT count(*) FROM txnq.entries") == 30
    described = client.admin.describe_topic("orders").partitions
    assert [(p.partition, p.open_ledger_id, p.ledgers) for p in described] == [(0, 2, 3), (1, 0, 1)]


def test_a_new_entry_log_is_a_new_postgresql_partition_and_old_entries_stay_readable(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders")
    with client.producer("orders") as producer:
        for i in range(3):
            producer.send(f"m{i}")

        # Each shard rolls its own entry log: the partition's owner here.
        assert sql_value(owner(dsn), "SELECT txnq.roll_entry_log_v1(true)") == 2

        for i in range(3, 6):
            producer.send(f"m{i}")

    assert sql(
        owner(dsn),
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid "
        "WHERE i.inhparent = 'txnq.entries'::regclass ORDER BY c.relname",
    ) == [("entries_000001",), ("entries_000002",)]
    assert sql(
        owner(dsn), "SELECT entry_log_id, state FROM txnq.entry_logs ORDER BY entry_log_id"
    ) == [
        (1, "SEALED"),
        (2, "ACTIVE"),
    ]
    assert sql(
        owner(dsn),
        "SELECT entry_offset, entry_log_id, tableoid::regclass::text "
        "FROM txnq.entries ORDER BY entry_offset",
    ) == [
        (0, 1, "txnq.entries_000001"),
        (1, 1, "txnq.entries_000001"),
        (2, 1, "txnq.entries_000001"),
        (3, 2, "txnq.entries_000002"),
        (4, 2, "txnq.entries_000002"),
        (5, 2, "txnq.entries_000002"),
    ]
    with client.subscribe(
        "orders", "billing", initial_position="earliest", poll_interval="200ms"
    ) as consumer:
        received = receive_messages(consumer, 6)
    assert [m.value for m in received] == [f"m{i}".encode() for i in range(6)]


def test_a_roll_that_an_open_append_would_hold_up_changes_nothing_and_waits_200ms(
    client: txnq.Client, dsn: str
) -> None:
    """roll_entry_log_v4 (revision 0031) holds SHARE on txnq.entries so no
    append routes a row with partitions it knew before the roll; a roll that
    cannot have it (an application transaction holds an append open: here a
    transaction holding ROW EXCLUSIVE, as an append's) gives up within its
    200 ms, changes nothing, and the next roll rolls."""
    client.admin.create_topic("orders", partitions=1)
    database = databases(dsn)[0]
    before = sql_value(database, "SELECT active_entry_log_id FROM txnq.config")
    with psycopg.connect(database) as holder:  # a transaction, as an application's
        holder.execute("LOCK TABLE txnq.entries IN ROW EXCLUSIVE MODE")
        started = time.monotonic()
        assert sql_value(database, "SELECT txnq.roll_entry_log_v4(true)") == before
        assert time.monotonic() - started < 2.0
        logs = sql_value(database, "SELECT count(*) FROM txnq.entry_logs")
        holder.rollback()
    assert sql_value(database, "SELECT count(*) FROM txnq.entry_logs") == logs
    assert sql_value(database, "SELECT txnq.roll_entry_log_v4(true)") == before + 1
    with client.producer("orders") as producer:
        producer.send(b"after the roll", partition=0)
    if databases(dsn) == [database]:  # one server: the append went to the new log
        topic_id = client.admin.get_topic("orders").topic_id
        query = "SELECT entry_log_id FROM txnq.entries WHERE topic_id = %s"
        assert sql_value(database, query, (topic_id,)) == before + 1


def test_rolling_the_entry_log_while_producers_append_loses_nothing(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("orders", partitions=2)
    failures: list[BaseException] = []
    stop = threading.Event()

    def produce(name: str) -> None:
        try:
            with client.producer("orders", name=name) as producer:
                for i in range(100):
                    producer.send(f"{name}:{i}", partition=i % 2)
        except BaseException as exc:
            failures.append(exc)

    def roll() -> None:
        try:
            while not stop.is_set():
                for database in databases(dsn):  # each shard rolls its own
                    sql(database, "SELECT txnq.roll_entry_log_v1(true)")
                time.sleep(0.02)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=produce, args=(f"p{n}",)) for n in range(2)]
    roller = threading.Thread(target=roll)
    roller.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=20)
    stop.set()
    roller.join(timeout=5)
    assert failures == []

    for database in databases(dsn):
        assert sql_value(database, "SELECT count(*) FROM txnq.entry_logs") > 2
    rows = sql_union(
        dsn,
        "SELECT partition, array_agg(entry_offset ORDER BY entry_offset) FROM txnq.entries "
        "GROUP BY partition ORDER BY partition",
    )
    assert sorted(partition for partition, _ in rows) == [0, 1]
    for partition, offsets in rows:
        assert offsets == list(range(100)), f"partition {partition}"


def test_rolling_the_entry_log_is_skipped_when_not_needed(client: txnq.Client, dsn: str) -> None:
    for database in databases(dsn):  # each shard of a cluster rolls its own
        assert sql_value(database, "SELECT txnq.roll_entry_log_v1(false)") == 1
        assert sql_value(database, "SELECT count(*) FROM txnq.entry_logs") == 1


def test_flush_raises_the_first_error_of_a_batch_written_since_the_last_flush(
    client: txnq.Client,
) -> None:
    client.admin.create_topic("doomed")
    producer = client.producer("doomed", batching_max_delay="1s")
    producer.send("before")
    client.admin.delete_topic("doomed", force=True)
    pending = producer.send_async("after")
    with pytest.raises(errors.TopicNotFoundError):
        producer.flush()
    with pytest.raises(errors.TopicNotFoundError):
        pending.result(timeout=5)  # the message's own handle has it too
    producer.flush()  # reported once: nothing new since
