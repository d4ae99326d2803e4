"""The inspection views show exactly what the queue holds, and the txnq_reader
role reads them and nothing else."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
import pytest
from psycopg import errors as pg_errors
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo
from psycopg.rows import dict_row

import txnq
from tests.helpers import drop_role, receive_messages, sql, sql_value
from txnq import Message, lifecycle
from txnq.database.migrate import upgrade
from txnq.settings import load_settings

FAST = {"poll_interval": "200ms"}

VIEWS = [
    "topic_status",
    "partition_status",
    "subscription_status",
    "transaction_status",
    "ledger_status",
    "entry_log_status",
    "gc_history",
]


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    # Ledgers of two entries, rolled at once: a few messages make several ledgers.
    upgrade(dsn, settings=load_settings(ledger_max_entries=2, ledger_min_rollover_seconds=0))
    with txnq.Client(dsn) as client:
        yield client


def rows(dsn: str, query: str, params: Any = None) -> list[dict[str, Any]]:
    with psycopg.connect(dsn, autocommit=True, row_factory=dict_row) as conn:
        return conn.execute(query, params).fetchall()


def pick(
    view: list[dict[str, Any]], columns: tuple[str, ...], key: str = "subscription"
) -> dict[Any, tuple[Any, ...]]:
    return {row[key]: tuple(row[c] for c in columns) for row in view}


def message(messages: list[Message], partition: int, offset: int, batch_index: int = 0) -> Message:
    [found] = [
        m
        for m in messages
        if (m.message_id.partition, m.message_id.offset, m.message_id.batch_index)
        == (partition, offset, batch_index)
    ]
    return found


def publish_time(dsn: str, partition: int, offset: int) -> datetime:
    value = sql_value(
        dsn,
        "SELECT publish_time FROM txnq.entries WHERE partition = %s AND entry_offset = %s",
        (partition, offset),
    )
    assert isinstance(value, datetime)
    return value


BACKLOG = ("backlog_entries", "backlog_messages", "backlog_bytes", "pending_acks", "partitions")


def test_views_show_the_exact_state_of_a_known_workload(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic("orders", partitions=2)  # retention 0/0: deleted once consumed
    client.admin.create_topic("audit", retention="7d", ttl="1h")
    fast = client.subscribe("orders", "fast", initial_position="earliest", **FAST)
    slow = client.subscribe("orders", "slow", initial_position="earliest", **FAST)
    peek = client.subscribe(
        "orders", "peek", initial_position="earliest", isolation="read_uncommitted", **FAST
    )
    producer = client.producer("orders")
    for _ in range(4):  # partition 0, offsets 0-3: ledgers 0 and 1, entry log 1
        producer.send(b"a" * 10, partition=0)
    assert sql_value(dsn, "SELECT txnq.roll_entry_log_v1(true)") == 2
    producer.send(b"a" * 10, partition=0)  # offset 4, entry log 2 from here on
    for size in (1, 2, 3):  # partition 1, offset 0: a batch of 3 messages, 6 bytes
        producer.send_async(b"x" * size, partition=1)
    producer.flush()
    for size in (10, 20, 30, 40):  # partition 1, offset 1: a batch of 4 messages, 100 bytes
        producer.send_async(b"y" * size, partition=1)
    producer.flush()
    txn = client.new_transaction(timeout="1m")
    producer.send(b"t" * 5, partition=0, txn=txn)  # offset 5: holds the max read offset at 4
    producer.send(b"a" * 10, partition=0)  # offset 6: written, not readable (read_committed)

    fast_got = receive_messages(fast, 5 + 7)
    slow_got = receive_messages(slow, 5 + 7)
    peek_got = receive_messages(peek, 7 + 7)
    fast.acknowledge_cumulative(message(fast_got, 0, 4))
    for index in (0, 1, 2):  # the whole first batch, message by message: folded in
        fast.acknowledge(message(fast_got, 1, 0, index))
    for index in (0, 2):  # half of the second batch: 10 + 30 bytes acked, 20 + 40 left
        fast.acknowledge(message(fast_got, 1, 1, index))
    slow.acknowledge_cumulative(message(slow_got, 0, 1))
    slow.acknowledge(message(slow_got, 0, 3))  # above a gap: an individual ack
    slow.acknowledge(message(slow_got, 0, 2), txn=txn)  # pending: still backlog

    # -- subscriptions: backlog in messages and bytes, summed over partitions --
    subs = rows(dsn, "SELECT * FROM txnq.subscription_status WHERE topic = 'orders'")
    assert pick(subs, BACKLOG) == {
        "fast": (1, 2, 60, 0, 2),  # partition 1 offset 1: messages 1 and 3
        "slow": (4, 9, 126, 1, 2),  # p0 offsets 2 (pending) and 4; p1 both batches
        "peek": (9, 14, 171, 0, 2),  # read_uncommitted: up to the high watermark
    }
    oldest = pick(subs, ("oldest_unacked_publish_time",))
    assert oldest["fast"] == (publish_time(dsn, 1, 1),)
    assert oldest["slow"] == (publish_time(dsn, 0, 2),)
    assert oldest["peek"] == (publish_time(dsn, 0, 0),)
    assert all(0 <= s["oldest_unacked_age_seconds"] < 60 for s in subs)
    assert pick(subs, ("consumers", "isolation", "subscription_type"))["peek"] == (
        1,
        "read_uncommitted",
        "exclusive",
    )

    # -- partitions: watermarks and the oldest ongoing transaction --
    parts = rows(dsn, "SELECT * FROM txnq.partition_status WHERE topic = 'orders'")
    columns = (
        "next_offset",
        "high_watermark",
        "max_read_offset",
        "ongoing_txns",
        "oldest_ongoing_txn",
        "oldest_ongoing_txn_state",
        "oldest_ongoing_txn_first_offset",
        "live_ledgers",
        "live_entries",
        "live_messages",
        "live_bytes",
    )
    assert pick(parts, columns, key="partition") == {
        # ledgers 0 (0-1), 1 (2-3), 2 (4-5) closed, 3 open at offset 6
        0: (7, 6, 4, 1, str(txn.txn_id), "OPEN", 5, 4, 7, 7, 65),
        # ledger 0 (0-1) closed, 1 open and empty
        1: (2, 1, 1, 0, None, None, None, 2, 2, 7, 106),
    }
    [p0] = [p for p in parts if p["partition"] == 0]
    assert 0 <= p0["oldest_ongoing_txn_age_seconds"] < 60

    # -- topics: partitions, sizes and policies --
    topics = rows(dsn, "SELECT * FROM txnq.topic_status")
    columns = (
        "partitions",
        "subscriptions",
        "entries_written",
        "live_ledgers",
        "live_entries",
        "live_messages",
        "live_bytes",
        "ongoing_txns",
        "retention_seconds",
        "retention_bytes",
        "ttl_seconds",
    )
    assert pick(topics, columns, key="topic") == {
        "orders": (2, 3, 9, 6, 9, 14, 171, 1, 0, 0, None),
        "audit": (1, 0, 0, 1, 0, 0, 0, 0, 7 * 86400, 0, 3600),
    }

    # -- transactions: state, age, time to timeout --
    [open_txn] = rows(dsn, "SELECT * FROM txnq.transaction_status")
    assert (open_txn["id"], open_txn["state"], open_txn["overdue_seconds"]) == (
        str(txn.txn_id),
        "OPEN",
        None,
    )
    assert 0 < open_txn["time_to_timeout_seconds"] <= 60
    assert 0 <= open_txn["age_seconds"] < 60
    assert open_txn["time_to_timeout_seconds"] + open_txn["age_seconds"] == pytest.approx(60)

    # -- entry logs, before anything was deleted --
    logs = rows(dsn, "SELECT * FROM txnq.entry_log_status")
    columns = ("state", "entries", "bytes", "live_entries", "live_bytes", "live_share")
    assert pick(logs, columns, key="entry_log_id") == {
        1: ("SEALED", 4, 40, 4, 40, 1.0),
        2: ("ACTIVE", 5, 131, 5, 131, 1.0),  # p0 offsets 4-6, p1 both batches
    }

    # Commit: the marker (offset 7) makes offsets 5 and 6 readable, the pending ack applies.
    txn.commit()
    peek.acknowledge_cumulative(message(peek_got, 0, 6))
    peek.acknowledge_cumulative(message(peek_got, 1, 1, 3))
    subs = rows(dsn, "SELECT * FROM txnq.subscription_status WHERE topic = 'orders'")
    assert pick(subs, BACKLOG) == {
        "fast": (3, 4, 75, 0, 2),  # + offsets 5 (5 bytes) and 6 (10 bytes)
        "slow": (5, 10, 131, 0, 2),  # offsets 0-3 acked: 4, 5, 6 and both batches
        "peek": (0, 0, 0, 0, 2),  # the marker is never backlog
    }
    assert pick(subs, ("oldest_unacked_age_seconds",))["peek"] == (None,)
    [done] = rows(dsn, "SELECT * FROM txnq.transaction_status")
    assert (done["state"], done["time_to_timeout_seconds"], done["overdue_seconds"]) == (
        "COMMITTED",
        None,
        None,
    )

    # Retention deletes p0's ledgers 0 and 1 (slow is at 3); GC drops entry log 1.
    assert [i.ledger_id for i in lifecycle.apply_retention(client).items] == [0, 1]
    logs = rows(dsn, "SELECT * FROM txnq.entry_log_status ORDER BY entry_log_id")
    assert [tuple(log[c] for c in columns) for log in logs] == [
        ("SEALED", 4, 40, 0, 0, 0.0),
        ("ACTIVE", 6, 131, 6, 131, 1.0),  # the marker: an entry of 0 bytes
    ]
    log1_disk_bytes = logs[0]["total_bytes"]
    assert log1_disk_bytes > 0
    gc = lifecycle.collect_entry_logs(client, grace_seconds=0)
    assert [(i.entry_log_id, i.action) for i in gc.items] == [(1, "dropped")]

    logs = rows(dsn, "SELECT * FROM txnq.entry_log_status ORDER BY entry_log_id")
    dropped = logs[0]
    assert (
        dropped["state"],
        dropped["total_bytes"],
        dropped["entries"],
        dropped["live_share"],
    ) == (
        "DROPPED",
        0,
        None,
        None,
    )

    history = rows(dsn, "SELECT * FROM txnq.gc_history ORDER BY run_id")
    assert [(h["job"], h["dry_run"], h["items"], h["bytes"]) for h in history] == [
        ("retention", False, 2, 40),
        ("gc", False, 1, log1_disk_bytes),
    ]
    assert all(h["duration_seconds"] >= 0 for h in history)

    # -- ledgers: state, offsets, size, owner --
    ledgers = rows(
        dsn,
        "SELECT * FROM txnq.ledger_status WHERE topic = 'orders' AND partition = 0 "
        "ORDER BY ledger_id",
    )
    columns = ("ledger_id", "state", "first_offset", "last_offset", "entries", "size_bytes")
    assert [tuple(ledger[c] for c in columns) for ledger in ledgers] == [
        (0, "DELETED", 0, 1, 2, 20),
        (1, "DELETED", 2, 3, 2, 20),
        (2, "CLOSED", 4, 5, 2, 15),
        (3, "OPEN", 6, 7, 2, 10),  # offset 6 and the marker
    ]
    assert {(ledger["owner_topic"], ledger["owner_partition"]) for ledger in ledgers} == {
        ("orders", 0)
    }
    assert not any(ledger["orphan"] for ledger in ledgers)

    [orders] = rows(dsn, "SELECT * FROM txnq.topic_status WHERE topic = 'orders'")
    assert (orders["entries_written"], orders["live_ledgers"]) == (10, 4)
    assert (orders["live_entries"], orders["live_messages"], orders["live_bytes"]) == (6, 10, 131)


def test_ledger_status_shows_an_orphan_ledger_and_an_overdue_transaction(
    dsn: str, client: txnq.Client
) -> None:
    # A ledger whose owner partition is gone (what the orphan sweep looks for).
    sql(
        dsn,
        "INSERT INTO txnq.ledgers (topic_id, partition, ledger_id, first_offset, last_offset, "
        "size_bytes, state, metadata) VALUES (999, 0, 3, 10, 19, 123, 'CLOSED', "
        """'{"topic": "gone", "topic_id": 999, "partition": 0}')""",
    )
    [orphan] = rows(dsn, "SELECT * FROM txnq.ledger_status WHERE topic_id = 999")
    assert (orphan["topic"], orphan["owner_topic"], orphan["entries"], orphan["orphan"]) == (
        None,
        "gone",
        10,
        True,
    )
    txn = client.new_transaction(timeout="1m")
    sql(dsn, "UPDATE txnq.transactions SET timeout_at = now() - interval '10 seconds'")
    [late] = rows(dsn, "SELECT * FROM txnq.transaction_status")
    assert late["id"] == str(txn.txn_id)
    assert late["time_to_timeout_seconds"] == pytest.approx(-10, abs=1)
    assert late["overdue_seconds"] == pytest.approx(10, abs=1)
    assert client.admin.get_transaction(txn.txn_id).time_to_timeout_seconds == pytest.approx(
        -10, abs=1
    )


# -- the txnq_reader role --------------------------------------------------------


def dsn_as_user(dsn: str, user: str) -> str:
    parts = urlsplit(dsn)
    if parts.scheme in ("postgresql", "postgres"):
        host = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit(parts._replace(netloc=f"{quote(user, safe='')}@{host}"))
    return make_conninfo(dsn, user=user, password="")


@pytest.fixture
def reader_dsn(dsn: str) -> Iterator[str]:
    """A DSN of a temporary LOGIN role that is a member of txnq_reader only.

    Roles are cluster-wide and tests run in parallel: the name is unique per
    test, and the role is dropped afterwards (it owns nothing, so DROP ROLE
    needs no REASSIGN).
    """
    name = f"txnq_test_reader_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(pgsql.SQL("CREATE ROLE {} LOGIN").format(pgsql.Identifier(name)))
        conn.execute(pgsql.SQL("GRANT txnq_reader TO {}").format(pgsql.Identifier(name)))
    try:
        yield dsn_as_user(dsn, name)
    finally:
        drop_role(dsn, name)


def test_txnq_reader_reads_the_views_and_nothing_else(
    dsn: str, client: txnq.Client, reader_dsn: str
) -> None:
    client.admin.create_topic("orders")
    consumer = client.subscribe("orders", "billing", initial_position="earliest", **FAST)
    with client.producer("orders") as producer:
        for i in range(3):
            producer.send(f"m{i}")
    assert sql_value(dsn, "SELECT txnq.roll_entry_log_v1(true)") == 2
    consumer.acknowledge(receive_messages(consumer, 1)[0])

    with psycopg.connect(reader_dsn, autocommit=True) as conn:
        [(user, is_superuser)] = conn.execute(
            "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user"
        ).fetchall()
        assert user.startswith("txnq_test_reader_") and not is_superuser
        counts = {
            view: conn.execute(
                pgsql.SQL("SELECT count(*) FROM txnq.{}").format(pgsql.Identifier(view))
            ).fetchone()
            for view in VIEWS
        }
        assert counts["topic_status"] == (1,)
        backlog = conn.execute("SELECT backlog_messages FROM txnq.subscription_status").fetchone()
        assert backlog == (2,)
        # Through the definer function: the counts of entry logs it cannot read itself.
        assert conn.execute(
            "SELECT entry_log_id, entries, live_entries FROM txnq.entry_log_status "
            "ORDER BY entry_log_id"
        ).fetchall() == [(1, 3, 3), (2, 0, 0)]

        denied = [
            "SELECT * FROM txnq.entries",
            "SELECT * FROM txnq.entries_000001",
            "SELECT * FROM txnq.cursors",
            "SELECT * FROM txnq.individual_acks",
            "SELECT * FROM txnq.topics",
            "SELECT * FROM txnq.partitions",
            "SELECT * FROM txnq.transactions",
            "SELECT * FROM txnq.gc_runs",
            "SELECT * FROM txnq.messages",  # payloads: not an inspection view
            "SELECT * FROM txnq.entry_log_usage_v1(1)",  # an invoker's function
            "DELETE FROM txnq.gc_history",  # a simple view is updatable: not by it
            "UPDATE txnq.transaction_status SET state = 'ABORTED'",
        ]
        for statement in denied:
            with pytest.raises(pg_errors.InsufficientPrivilege):
                conn.execute(statement)
