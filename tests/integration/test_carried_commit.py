"""A commit that carries the producer's last batches (txnq.producer.decided,
revision 0032's append_v6 with decided => true): decision, marker phase and
those entries in one PostgreSQL transaction, on both faces, and every case
where the commit cannot carry them or does not go through, which must end
exactly as the usual commit does."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import txnq
import txnq.aio
from tests.helpers import assert_nothing_more, expire_transaction, receive_messages, sql, sql_value
from txnq import errors
from txnq.lifecycle.backlog_quota import check_backlog_quotas

FAST = {"poll_interval": "100ms"}
#: A producer whose batches only go at a flush or a commit.
HELD = {"batching_max_messages": 1000, "batching_max_delay": "10s"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("out", partitions=3)
        yield client


def entry_rows(dsn: str, txn: Any) -> list[tuple[Any, ...]]:
    """(partition, offset, message count, marker, xmin) of the transaction's
    entries, and the transaction row's xmin last."""
    return sql(
        dsn,
        "SELECT e.partition, e.entry_offset, e.message_count, e.marker, e.xmin::text "
        "FROM txnq.entries e WHERE e.txn_tc = %s AND e.txn_seq = %s ORDER BY 1, 2",
        tuple(txn.txn_id),
    )


def txn_xmin(dsn: str, txn: Any) -> str:
    return str(
        sql_value(
            dsn,
            "SELECT xmin::text FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
            tuple(txn.txn_id),
        )
    )


def test_a_commit_writes_its_queued_batches_with_the_decision_in_one_transaction(
    client: txnq.Client, dsn: str
) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    seen: list[tuple[object, object]] = []
    producer = client.producer("out", **HELD)
    txn = client.new_transaction()
    pending = [producer.send_async(f"m{i}".encode(), partition=i % 3, txn=txn) for i in range(7)]
    producer.send_async(b"called", partition=2, txn=txn, callback=lambda e, m: seen.append((e, m)))
    assert_nothing_more(reader, 0.2)

    txn.commit()

    assert txn.state == "COMMITTED"
    rows = entry_rows(dsn, txn)
    # One entry per partition, its COMMIT marker right after it, all written
    # by the PostgreSQL transaction that committed the transaction.
    assert [(p, n, marker) for p, _, n, marker, _ in rows] == [
        (0, 3, None), (0, 0, 1), (1, 2, None), (1, 0, 1), (2, 3, None), (2, 0, 1),
    ]  # fmt: skip
    assert {xmin for *_, xmin in rows} == {txn_xmin(dsn, txn)}
    offsets = {p: offset for p, offset, _, marker, _ in rows if marker is None}
    assert [(m.partition, m.offset) for m in (p.result(5) for p in pending)] == [
        (i % 3, offsets[i % 3]) for i in range(7)
    ]
    assert seen == [(None, txnq.MessageId("out", 2, offsets[2], 2))]
    described = client.admin.describe_transaction(txn.txn_id)
    assert [(p.partition, p.first_offset, p.marker_offset) for p in described.partitions] == [
        (p, offsets[p], offsets[p] + 1) for p in range(3)
    ]
    assert sorted(m.value for m in receive_messages(reader, 8)) == sorted(
        [f"m{i}".encode() for i in range(7)] + [b"called"]
    )
    assert sql(dsn, "SELECT count(*) FROM txnq.txn_buffer_ongoing") == [(0,)]
    assert sql(dsn, "SELECT sum(ongoing_txns) FROM txnq.partitions") == [(0,)]
    # The producer's sequences moved on: its next batch is no duplicate.
    producer.send(b"after", partition=0)
    assert sorted(m.value for m in receive_messages(reader, 1)) == [b"after"]


@pytest.mark.parametrize("earlier", ["send", "ack"])
def test_a_transaction_with_a_write_or_an_ack_on_the_server_commits_the_usual_way(
    client: txnq.Client, dsn: str, earlier: str
) -> None:
    """Only a transaction with nothing on the server but its open carries its
    batches: a marker phase or acks applied before the carried appends would
    take head rows or cursors ahead of them, out of the protocol's lock order."""
    client.admin.create_topic("in")
    with client.producer("in") as source:
        for i in range(3):
            source.send(f"in{i}".encode())
    consumer = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", **HELD)
    received = receive_messages(consumer, 3)
    txn = client.new_transaction()
    if earlier == "send":
        producer.send(b"sent first", partition=0, txn=txn)  # written at once
    else:
        consumer.acknowledge_cumulative(received[-1], txn=txn)
    producer.send_async(b"queued 0", partition=0, txn=txn)
    producer.send_async(b"queued 1", partition=1, txn=txn)

    txn.commit()

    rows = entry_rows(dsn, txn)
    entries = {xmin for _, _, _, marker, xmin in rows if marker is None}
    assert txn_xmin(dsn, txn) not in entries  # written before the decision
    assert [(p, marker) for p, _, _, marker, _ in rows if marker] == [(0, 1), (1, 1)]
    expected = [b"queued 0", b"queued 1"] + ([b"sent first"] if earlier == "send" else [])
    assert sorted(m.value for m in receive_messages(reader, len(expected))) == sorted(expected)
    assert_nothing_more(reader, 0.2)
    if earlier == "ack":
        consumer.close()
        again = client.subscribe("in", "etl", **FAST)
        assert_nothing_more(again, 0.3)  # the ack took effect with the commit


def test_a_transaction_of_two_producers_commits_the_usual_way(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic("audit")
    first = client.producer("audit", **HELD)
    second = client.producer("out", **HELD)
    txn = client.new_transaction()
    first.send_async(b"audit", txn=txn)
    second.send_async(b"out", partition=2, txn=txn)

    txn.commit()

    rows = sql(
        dsn,
        "SELECT e.xmin::text FROM txnq.entries e WHERE e.txn_tc = %s AND e.txn_seq = %s "
        "AND e.marker IS NULL",
        tuple(txn.txn_id),
    )
    assert len(rows) == 2 and txn_xmin(dsn, txn) not in {x for (x,) in rows}
    assert first.send(b"after").offset >= 0  # the producers go on


def test_a_partition_with_two_batches_commits_the_usual_way(client: txnq.Client, dsn: str) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", batching_max_messages=2, batching_max_delay="10s")
    txn = client.new_transaction()
    for i in range(3):  # a full (sealed) batch and an open one on partition 0
        producer.send_async(f"m{i}".encode(), partition=0, txn=txn)

    txn.commit()

    rows = entry_rows(dsn, txn)
    assert [(p, n, marker) for p, _, n, marker, _ in rows] == [
        (0, 2, None),
        (0, 1, None),
        (0, 0, 1),
    ]
    assert len({xmin for *_, xmin in rows}) == 3  # three PostgreSQL transactions
    assert [m.value for m in receive_messages(reader, 3)] == [b"m0", b"m1", b"m2"]


def test_a_commit_past_the_timeout_writes_nothing_and_raises_as_before(
    client: txnq.Client, dsn: str
) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", **HELD)
    txn = client.new_transaction(timeout="1s")
    pending = producer.send_async(b"late", partition=1, txn=txn)
    expire_transaction(dsn, txn.txn_id)

    # As the usual commit: the queued send fails on the timeout, so the commit aborts.
    with pytest.raises(errors.TransactionAbortedError) as raised:
        txn.commit()

    assert isinstance(raised.value.__cause__, errors.TransactionTimedOutError)
    assert txn.state == "ABORTED"
    assert isinstance(pending.exception(5), errors.TransactionTimedOutError)
    assert sql(dsn, "SELECT count(*) FROM txnq.entries WHERE message_count > 0") == [(0,)]
    assert_nothing_more(reader, 0.3)
    producer.send(b"next", partition=1)  # the producer's sequences are intact
    assert [m.value for m in receive_messages(reader, 1)] == [b"next"]


def test_a_carried_batch_refused_by_the_backlog_quota_aborts_the_transaction(
    client: txnq.Client, dsn: str
) -> None:
    client.admin.create_topic(
        "quota", backlog_quota_size=150, backlog_quota_policy="producer_error"
    )
    client.subscribe("quota", "billing", initial_position="earliest", **FAST)
    with client.producer("quota") as filler:
        for i in range(2):
            filler.send(f"m{i}".ljust(100, ".").encode())
    check_backlog_quotas(client)
    producer = client.producer("quota", **HELD)
    txn = client.new_transaction()
    pending = producer.send_async(b"over quota", txn=txn)

    with pytest.raises(errors.TransactionAbortedError):
        txn.commit()

    assert isinstance(pending.exception(5), errors.BacklogQuotaExceededError)
    assert sql(dsn, "SELECT count(*) FROM txnq.entries WHERE message_count > 0") == [(2,)]
    assert txn.state == "ABORTED"


def test_a_fenced_transactional_producer_commits_nothing(client: txnq.Client, dsn: str) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", transactional_id="etl-1", **HELD)
    txn = client.new_transaction()
    producer.send_async(b"zombie", partition=0, txn=txn)
    client.producer("out", transactional_id="etl-1")  # a newer session fences it

    with pytest.raises(errors.ProducerFencedError):
        txn.commit()

    assert_nothing_more(reader, 0.3)
    assert sql(dsn, "SELECT count(*) FROM txnq.entries WHERE message_count > 0") == [(0,)]


def test_a_commit_whose_connection_was_cut_is_sent_again_and_written_once(
    client: txnq.Client, dsn: str
) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out", **HELD)
    txn = client.new_transaction()
    pending = producer.send_async(b"once", partition=1, txn=txn)
    backend = producer._proxy.driver_connection.info.backend_pid
    sql(dsn, "SELECT pg_terminate_backend(%s)", (backend,))

    txn.commit()

    assert txn.state == "COMMITTED"
    assert {xmin for *_, xmin in entry_rows(dsn, txn)} == {txn_xmin(dsn, txn)}  # carried
    assert pending.result(5).partition == 1
    assert [m.value for m in receive_messages(reader, 1)] == [b"once"]
    assert_nothing_more(reader, 0.3)


def test_sent_again_after_it_committed_the_same_calls_answer_the_same_offsets(
    client: txnq.Client, dsn: str
) -> None:
    """What the client's retry after a lost answer relies on: the decision is
    not taken again, and each batch answers its original offset."""
    topic_id = client.admin.get_topic("out").topic_id
    [(producer_id, epoch)] = sql(
        dsn,
        "SELECT DISTINCT producer_id, epoch FROM txnq.register_producer_v2(%s, 'p1')",
        (topic_id,),
    )
    txn = client.new_transaction()
    append = (
        "SELECT entry_offset, duplicate FROM txnq.append_v6(%s, %s, %s, %s, 0, "
        "ARRAY['x', 'y']::bytea[], NULL, NULL, NULL, %s, %s, true)"
    )
    answers = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for _ in range(2):
            with conn.transaction():
                decision = conn.execute(
                    "SELECT state, final_state FROM txnq.end_and_complete_txn_v1(%s, %s, true)",
                    tuple(txn.txn_id),
                ).fetchone()
                rows = [
                    conn.execute(append, (topic_id, p, producer_id, epoch, *txn.txn_id)).fetchone()
                    for p in (0, 2)
                ]
            answers.append((decision, rows))
    (first, written), (again, repeated) = answers
    assert first == ("COMMITTING", "COMMITTED") and again == ("COMMITTED", "COMMITTED")
    assert [duplicate for _, duplicate in written] == [False, False]
    assert repeated == [(offset, True) for offset, _ in written]
    assert sql(dsn, "SELECT count(*) FROM txnq.entries") == [(4,)]  # two entries, two markers


@pytest.mark.parametrize(
    ("txn_state", "decided", "sqlstate"),
    [
        ("open", True, "TQ005"),  # commit it first, in the same transaction
        ("committed elsewhere", True, "TQ013"),
        (None, True, "TQ005"),  # decided needs a transaction
        ("open", None, "TQ005"),
        ("unknown", True, "TQ014"),
    ],
)
def test_a_decided_append_outside_the_commit_of_its_transaction_writes_nothing(
    client: txnq.Client, dsn: str, txn_state: str | None, decided: bool | None, sqlstate: str
) -> None:
    topic_id = client.admin.get_topic("out").topic_id
    txn_id: tuple[int | None, int | None] = (None, None)
    if txn_state is not None:
        txn = client.new_transaction()
        txn_id = (txn.txn_id.tc_id, txn.txn_id.seq + (1000 if txn_state == "unknown" else 0))
        if txn_state == "committed elsewhere":
            txn.commit()
    with pytest.raises(psycopg.Error) as raised:
        sql(
            dsn,
            "SELECT * FROM txnq.append_v6(%s, 0, NULL, NULL, NULL, ARRAY['x']::bytea[], "
            "NULL, NULL, NULL, %s, %s, %s)",
            (topic_id, *txn_id, decided),
        )
    assert raised.value.sqlstate == sqlstate
    assert raised.value.diag.message_hint
    assert sql(dsn, "SELECT count(*) FROM txnq.entries") == [(0,)]


def test_the_asyncio_face_carries_its_batches_too(dsn: str) -> None:
    async def main() -> tuple[list[tuple[Any, ...]], str, list[int]]:
        async with txnq.aio.Client(dsn) as client:
            await client.admin.create_topic("out", partitions=2)
            producer = await client.producer("out", **HELD)
            txn = await client.new_transaction()
            pending = [
                await producer.send_async(f"a{i}".encode(), partition=i % 2, txn=txn)
                for i in range(4)
            ]
            await txn.commit()
            offsets = [(await p).offset for p in pending]
            await producer.close()
            return entry_rows(dsn, txn), txn_xmin(dsn, txn), offsets

    rows, xmin, offsets = asyncio.run(main())
    assert [(p, n, marker) for p, _, n, marker, _ in rows] == [
        (0, 2, None), (0, 0, 1), (1, 2, None), (1, 0, 1),
    ]  # fmt: skip
    assert {x for *_, x in rows} == {xmin}
    assert offsets == [rows[0][1], rows[2][1], rows[0][1], rows[2][1]]
