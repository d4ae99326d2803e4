"""Claim ranges (revision 0027, issue 23): a shared subscription's claim of new
messages is one txnq.claim_ranges row per partition, acknowledged in place
and deleted when every message of it is; only exceptions (redelivered,
nacked, in a transaction) get a claim row per message. No row is written and
deleted per message: the dead row versions of a shared consume + ack stay
under 1% of the messages."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import pytest

import txnq
from tests.helpers import sql, sql_value

CLAIM = (
    "SELECT entry_offset, batch_index, redelivery_count FROM txnq.claim_v6(%s, %s, %s, %s, %s) "
    "ORDER BY entry_offset, batch_index"
)
ACK = "SELECT txnq.ack_shared_v5(%s, 0, %s, %s::bigint[], %s::int[])"
RANGES = (
    "SELECT first_offset, last_offset, message_count, acked_count FROM txnq.claim_ranges "
    "ORDER BY first_offset"
)
MARK_DELETE = "SELECT mark_delete_offset FROM txnq.cursors WHERE subscription_id = %s"


def shared_topic(dsn: str, entries: list[int]) -> tuple[int, int]:
    """One partition, an entry per element of ``entries`` holding that many
    messages, and a shared subscription from the earliest."""
    topic_id = int(sql_value(dsn, "SELECT txnq.create_topic_v1('jobs', 1, -1, -1, NULL, 1024)"))
    subscription_id = int(
        sql_value(
            dsn,
            "SELECT txnq.subscribe_v1(%s, 'workers', 'shared', 'read_committed', 'earliest')",
            (topic_id,),
        )
    )
    for n, size in enumerate(entries):
        sql(
            dsn,
            "SELECT * FROM txnq.append_v3(%s, 0, NULL, NULL, NULL, %s)",
            (topic_id, [f"m{n}.{i}".encode() for i in range(size)]),
        )
    return topic_id, subscription_id


def consumer(dsn: str, subscription_id: int, name: str) -> int:
    return int(
        sql_value(dsn, "SELECT txnq.register_consumer_v2(%s, %s, 0, 600)", (subscription_id, name))
    )


def claim(
    dsn: str,
    topic_id: int,
    subscription_id: int,
    consumer_id: int,
    room: int = 100,
    ack_timeout: float | None = None,
) -> list[tuple[int, int, int]]:
    rows = sql(dsn, CLAIM, (topic_id, subscription_id, consumer_id, room, ack_timeout))
    return [(int(o), int(i), int(r)) for o, i, r in rows]


def ack(dsn: str, topic_id: int, subscription_id: int, ids: list[tuple[int, int]]) -> int:
    return int(
        sql_value(dsn, ACK, (topic_id, subscription_id, [o for o, _ in ids], [i for _, i in ids]))
    )


def test_a_claim_of_new_messages_is_one_range_and_writes_no_claim_row(dsn: str) -> None:
    topic_id, subscription_id = shared_topic(dsn, [3, 1, 2])
    c = consumer(dsn, subscription_id, "a")
    got = claim(dsn, topic_id, subscription_id, c)
    assert [(o, i) for o, i, _ in got] == [(0, 0), (0, 1), (0, 2), (1, 0), (2, 0), (2, 1)]
    assert {r for _, _, r in got} == {0}
    assert sql(dsn, RANGES) == [(0, 2, 6, 0)]
    assert sql_value(dsn, "SELECT count(*) FROM txnq.claims") == 0
    in_flight = "SELECT in_flight FROM txnq.cursor_status WHERE subscription_id = %s"
    assert sql_value(dsn, in_flight, (subscription_id,)) == 6


def test_partial_acks_of_a_range_are_kept_in_it_until_every_message_is_acknowledged(
    dsn: str,
) -> None:
    topic_id, subscription_id = shared_topic(dsn, [3, 1, 2])
    c = consumer(dsn, subscription_id, "a")
    claim(dsn, topic_id, subscription_id, c)
    assert ack(dsn, topic_id, subscription_id, [(0, 1), (1, 0)]) == 2
    assert sql(dsn, RANGES) == [(0, 2, 6, 2)]
    # Acknowledging again is no error and counts nothing.
    assert ack(dsn, topic_id, subscription_id, [(0, 1)]) == 0
    # The mark-delete offset waits below a range not acknowledged in full.
    assert sql_value(dsn, MARK_DELETE, (subscription_id,)) == -1
    # A whole entry (-1): its messages the range still covers.
    assert ack(dsn, topic_id, subscription_id, [(0, -1)]) == 2
    assert sql(dsn, RANGES) == [(0, 2, 6, 4)]
    # A message id that names no message is refused, and nothing changes.
    with pytest.raises(psycopg.Error, match="does not exist"):
        ack(dsn, topic_id, subscription_id, [(2, 0), (1, 5)])
    assert sql(dsn, RANGES) == [(0, 2, 6, 4)]
    assert ack(dsn, topic_id, subscription_id, [(2, 0), (2, 1)]) == 2
    assert sql(dsn, RANGES) == []
    assert sql_value(dsn, "SELECT count(*) FROM txnq.claims") == 0
    assert sql_value(dsn, MARK_DELETE, (subscription_id,)) == 2


def test_the_unacknowledged_part_of_a_range_goes_to_another_consumer_when_its_holder_dies(
    dsn: str,
) -> None:
    topic_id, subscription_id = shared_topic(dsn, [1] * 10)
    a = consumer(dsn, subscription_id, "a")
    b = consumer(dsn, subscription_id, "b")
    assert len(claim(dsn, topic_id, subscription_id, a)) == 10
    assert ack(dsn, topic_id, subscription_id, [(o, 0) for o in range(4)]) == 4
    # a's process dies: its lease runs out, and a heartbeat releases what it held.
    sql(
        dsn,
        "UPDATE txnq.consumers SET lease_expires_at = now() - interval '1 second' "
        "WHERE consumer_id = %s",
        (a,),
    )
    assert sql_value(dsn, "SELECT txnq.release_claims_v3(%s, NULL)", (subscription_id,)) == 6
    assert sql(dsn, RANGES) == []
    again = claim(dsn, topic_id, subscription_id, b)
    assert again == [(o, 0, 1) for o in range(4, 10)]
    assert ack(dsn, topic_id, subscription_id, [(o, 0) for o in range(4, 10)]) == 6
    assert sql_value(dsn, "SELECT count(*) FROM txnq.claims") == 0
    assert sql_value(dsn, MARK_DELETE, (subscription_id,)) == 9


def test_a_closing_consumer_gives_back_the_rest_of_its_range(dsn: str) -> None:
    topic_id, subscription_id = shared_topic(dsn, [2, 2])
    a = consumer(dsn, subscription_id, "a")
    b = consumer(dsn, subscription_id, "b")
    claim(dsn, topic_id, subscription_id, a)
    assert ack(dsn, topic_id, subscription_id, [(0, 0), (1, 1)]) == 2
    released = sql_value(dsn, "SELECT txnq.release_claims_v3(%s, %s)", (subscription_id, a))
    assert released == 2
    assert claim(dsn, topic_id, subscription_id, b) == [(0, 1, 1), (1, 0, 1)]


def test_a_nack_redelivers_only_the_nacked_message_of_a_range(dsn: str) -> None:
    topic_id, subscription_id = shared_topic(dsn, [1] * 5)
    a = consumer(dsn, subscription_id, "a")
    claim(dsn, topic_id, subscription_id, a)
    nacked = sql_value(
        dsn,
        "SELECT txnq.nack_shared_v3(%s, 0, %s, %s, '{2}', '{0}', '{0}')",
        (topic_id, subscription_id, a),
    )
    assert nacked == 1
    assert ack(dsn, topic_id, subscription_id, [(0, 0), (1, 0), (3, 0), (4, 0)]) == 4
    assert claim(dsn, topic_id, subscription_id, a) == [(2, 0, 1)]
    assert ack(dsn, topic_id, subscription_id, [(2, 0)]) == 1
    assert sql_value(dsn, MARK_DELETE, (subscription_id,)) == 4
    assert sql(dsn, RANGES) == []


def test_a_range_past_its_ack_timeout_is_redelivered_except_what_was_acknowledged(
    dsn: str,
) -> None:
    topic_id, subscription_id = shared_topic(dsn, [1] * 4)
    a = consumer(dsn, subscription_id, "a")
    b = consumer(dsn, subscription_id, "b")
    assert len(claim(dsn, topic_id, subscription_id, a, ack_timeout=0.3)) == 4
    assert ack(dsn, topic_id, subscription_id, [(1, 0)]) == 1
    next_due = sql_value(dsn, "SELECT txnq.next_visible_claim_v2(%s)", (subscription_id,))
    assert next_due is not None and 0 < next_due <= 0.3
    assert claim(dsn, topic_id, subscription_id, b) == []
    time.sleep(0.4)
    assert claim(dsn, topic_id, subscription_id, b) == [(0, 0, 1), (2, 0, 1), (3, 0, 1)]


def test_a_transactional_ack_of_a_range_message_is_pending_until_the_transaction_ends(
    dsn: str,
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=1)
        with client.producer("orders") as producer:
            for i in range(4):
                producer.send(f"m{i}")
        with client.subscribe(
            "orders", "workers", subscription_type="shared", initial_position="earliest"
        ) as first:
            messages = [first.receive(timeout=5) for _ in range(4)]
            assert all(m is not None for m in messages)
            txn = client.new_transaction()
            first.acknowledge(messages[0], txn=txn)
            first.acknowledge(messages[1])
            txn.abort()
            # The aborted transaction's message is deliverable again; the rest
            # (messages 2 and 3) are still this consumer's.
            again = first.receive(timeout=5)
            assert again is not None and again.message_id == messages[0].message_id
            assert again.redelivery_count == 1
            txn = client.new_transaction()
            first.acknowledge(again, txn=txn)
            first.acknowledge(messages[2:])
            txn.commit()
        marks = sql(dsn, "SELECT mark_delete_offset FROM txnq.cursors")
        assert marks == [(3,)]
        assert sql_value(dsn, "SELECT count(*) FROM txnq.claims") == 0
        assert sql(dsn, RANGES) == []


ROW_VERSIONS = """
SELECT coalesce(sum(n_tup_ins), 0), coalesce(sum(n_tup_upd + n_tup_del), 0),
       coalesce(sum(n_dead_tup), 0)
  FROM pg_stat_user_tables
 WHERE schemaname = 'txnq' AND relname IN ('claims', 'claim_ranges')
"""


def row_versions(dsn: str) -> tuple[int, int, int]:
    """(inserted, updated + deleted, dead) row versions of the claim tables,
    once every backend's statistics arrived (they report at exit or after
    a second): read until two reads a second apart agree."""
    last: Any = None
    deadline = time.monotonic() + 15
    while True:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("SELECT pg_stat_clear_snapshot()")
            row = conn.execute(ROW_VERSIONS).fetchone()
        assert row is not None
        now = (int(row[0]), int(row[1]), int(row[2]))
        if now == last or time.monotonic() > deadline:
            return now
        last = now
        time.sleep(1.1)


def test_consuming_through_a_shared_subscription_leaves_under_one_percent_dead_rows(
    dsn: str,
) -> None:
    n = 20_000
    with txnq.Client(dsn) as client:
        client.admin.create_topic("bulk", partitions=2)
        with client.producer("bulk") as producer:
            for i in range(n):
                producer.send_async(b"x" * 100, key=str(i % 7))
            producer.flush()
        before = row_versions(dsn)
        consumer = client.subscribe(
            "bulk",
            "workers",
            subscription_type="shared",
            initial_position="earliest",
            receiver_queue_size=5_000,
        )
        done = 0
        deadline = time.monotonic() + 60
        while done < n and time.monotonic() < deadline:
            batch = consumer.batch_receive(1000, timeout=5)
            if batch:
                consumer.acknowledge(batch)
            done += len(batch)
        consumer.close()
        assert done == n
    after = row_versions(dsn)
    written = after[0] - before[0]
    dead = after[1] - before[1]
    assert written <= n // 100, f"{written} rows written into the claim tables for {n} messages"
    assert dead <= n // 100, f"{dead} dead row versions in the claim tables for {n} messages"
    assert after[2] <= n // 100


def test_a_cursor_moved_past_part_of_a_range_keeps_the_rest_outstanding(dsn: str) -> None:
    """TTL or a backlog eviction moves the mark-delete offset from outside:
    what it passed is acknowledged, the rest of the range stays its holder's."""
    topic_id, subscription_id = shared_topic(dsn, [1] * 10)
    a = consumer(dsn, subscription_id, "a")
    b = consumer(dsn, subscription_id, "b")
    assert len(claim(dsn, topic_id, subscription_id, a)) == 10
    sql(
        dsn,
        "UPDATE txnq.cursors SET mark_delete_offset = 4 WHERE subscription_id = %s",
        (subscription_id,),
    )
    assert claim(dsn, topic_id, subscription_id, b) == []  # brings the cursor up to date
    assert sql(dsn, RANGES) == []
    held = (
        "SELECT array_agg(entry_offset ORDER BY entry_offset) FROM txnq.claims "
        "WHERE consumer_id = %s"
    )
    assert sql_value(dsn, held, (a,)) == [5, 6, 7, 8, 9]
    assert sql_value(dsn, MARK_DELETE, (subscription_id,)) == 4
    # Moved past everything handed out: the ranges go, nothing is redelivered.
    assert ack(dsn, topic_id, subscription_id, [(o, 0) for o in range(5, 10)]) == 5
    sql(dsn, "SELECT * FROM txnq.append_v3(%s, 0, NULL, NULL, NULL, %s)", (topic_id, [b"n"] * 2))
    assert len(claim(dsn, topic_id, subscription_id, a)) == 2
    sql(
        dsn,
        "UPDATE txnq.cursors SET mark_delete_offset = 11 WHERE subscription_id = %s",
        (subscription_id,),
    )
    assert claim(dsn, topic_id, subscription_id, b) == []
    assert sql(dsn, RANGES) == []
    assert sql_value(dsn, "SELECT count(*) FROM txnq.claims") == 0
