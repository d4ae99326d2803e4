"""The SQL API: any language that speaks SQL can produce and consume with the
versioned txnq functions alone — no txnq client, one call per operation, inside
its own transaction if it likes — and gets its errors as SQLSTATE class TQ."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

import txnq
from tests.helpers import receive_messages, sql, sql_value
from txnq.database.connections import SQLSTATE_ERRORS, translate


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


def one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def create_topic(conn: psycopg.Connection[Any], name: str, partitions: int = 1) -> int:
    return int(
        one(conn, "SELECT txnq.create_topic_v2(%s, %s, 0, 0, NULL, 1024)", (name, partitions))
    )


def subscribe(conn: psycopg.Connection[Any], topic_id: int, name: str) -> int:
    return int(
        one(
            conn,
            "SELECT txnq.subscribe_v1(%s, %s, 'exclusive', 'read_committed', 'earliest')",
            (topic_id, name),
        )
    )


def fetch_after_cursor(
    conn: psycopg.Connection[Any], topic_id: int, partition: int, subscription_id: int
) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT f.entry_offset, f.payloads, f.keys, f.properties, f.acked_batch_indexes "
        "FROM txnq.cursors c, "
        "LATERAL txnq.fetch_v1(c.topic_id, c.partition, c.subscription_id, c.mark_delete_offset) f "
        "WHERE c.topic_id = %s AND c.partition = %s AND c.subscription_id = %s",
        (topic_id, partition, subscription_id),
    ).fetchall()


def test_plain_sql_creates_a_topic_produces_consumes_and_acknowledges(
    conn: psycopg.Connection[Any],
) -> None:
    topic_id = create_topic(conn, "orders")
    subscription_id = subscribe(conn, topic_id, "billing")

    appended = conn.execute(
        "SELECT entry_offset, duplicate FROM txnq.append_v1(%s, 0, NULL, NULL, NULL, "
        "ARRAY['hello', 'world']::bytea[], ARRAY['k1', NULL]::bytea[], "
        """ARRAY['{"a": "1"}', NULL]::jsonb[])""",
        (topic_id,),
    ).fetchall()
    conn.execute(
        "SELECT * FROM txnq.append_v1(%s, 0, NULL, NULL, NULL, ARRAY['again']::bytea[])",
        (topic_id,),
    )
    assert appended == [(0, False)]

    assert fetch_after_cursor(conn, topic_id, 0, subscription_id) == [
        (0, [b"hello", b"world"], [b"k1", None], [{"a": "1"}, None], None),
        (1, [b"again"], None, None, None),
    ]

    assert one(conn, "SELECT txnq.ack_v1(%s, 0, %s, 0)", (topic_id, subscription_id)) == 0
    assert [row[0] for row in fetch_after_cursor(conn, topic_id, 0, subscription_id)] == [1]
    assert one(conn, "SELECT txnq.ack_v1(%s, 0, %s, 1)", (topic_id, subscription_id)) == 1
    assert fetch_after_cursor(conn, topic_id, 0, subscription_id) == []


def test_plain_sql_acknowledges_one_message_of_a_batch(conn: psycopg.Connection[Any]) -> None:
    topic_id = create_topic(conn, "orders")
    subscription_id = subscribe(conn, topic_id, "billing")
    conn.execute(
        "SELECT * FROM txnq.append_v1(%s, 0, NULL, NULL, NULL, ARRAY['a', 'b', 'c']::bytea[])",
        (topic_id,),
    )

    conn.execute(
        "SELECT txnq.ack_v1(%s, 0, %s, NULL, ARRAY[0], ARRAY[1], ARRAY[3])",
        (topic_id, subscription_id),
    )

    ((offset, _, _, _, acked),) = fetch_after_cursor(conn, topic_id, 0, subscription_id)
    assert (offset, acked) == (0, [1])


def test_a_python_consumer_receives_what_plain_sql_produced(
    conn: psycopg.Connection[Any], dsn: str
) -> None:
    topic_id = create_topic(conn, "orders")
    event_time = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    conn.execute(
        "SELECT * FROM txnq.append_v1(%s, 0, NULL, NULL, NULL, ARRAY['from sql']::bytea[], "
        "ARRAY['k1']::bytea[], ARRAY[%s::jsonb], ARRAY[%s::timestamptz])",
        (topic_id, json.dumps({"lang": "sql"}), event_time),
    )

    with (
        txnq.Client(dsn) as client,
        client.subscribe(
            "orders", "billing", initial_position="earliest", poll_interval="200ms"
        ) as consumer,
    ):
        (message,) = receive_messages(consumer, 1)

    assert (message.value, message.key, message.properties, message.event_time) == (
        b"from sql",
        "k1",
        {"lang": "sql"},
        event_time,
    )
    assert message.producer_id is None


def test_plain_sql_reads_what_the_python_producer_batched(
    conn: psycopg.Connection[Any], dsn: str
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders")
        subscription_id = subscribe(conn, client.admin.get_topic("orders").topic_id, "billing")
        with client.producer("orders", batching_max_delay="1s") as producer:
            for i in range(3):
                producer.send_async(f"m{i}", key=f"k{i}", properties={"i": str(i)})

    assert sql(
        dsn,
        "SELECT batch_index, payload, convert_from(key, 'UTF8'), properties ->> 'i', sequence "
        "FROM txnq.messages ORDER BY entry_offset, batch_index",
    ) == [(0, b"m0", "k0", "0", 0), (1, b"m1", "k1", "1", 1), (2, b"m2", "k2", "2", 2)]
    topic_id = sql_value(dsn, "SELECT topic_id FROM txnq.topics")
    ((offset, payloads, keys, _, _),) = fetch_after_cursor(conn, topic_id, 0, subscription_id)
    assert (offset, payloads, keys) == (0, [b"m0", b"m1", b"m2"], [b"k0", b"k1", b"k2"])


def test_plain_sql_appends_atomically_with_the_callers_own_tables(
    conn: psycopg.Connection[Any], dsn: str
) -> None:
    # The transactional outbox: the business row and the message commit together.
    topic_id = create_topic(conn, "orders")
    conn.execute("CREATE TABLE public.orders (id int PRIMARY KEY)")
    append = "SELECT entry_offset FROM txnq.append_v1(%s, 0, NULL, NULL, NULL, ARRAY[%s]::bytea[])"

    with pytest.raises(RuntimeError), conn.transaction():
        conn.execute("INSERT INTO public.orders VALUES (1)")
        conn.execute(append, (topic_id, b"order 1 created"))
        raise RuntimeError("the caller's transaction fails")

    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries") == 0
    assert sql_value(dsn, "SELECT next_offset FROM txnq.partitions") == 0  # no gap either

    with conn.transaction():
        conn.execute("INSERT INTO public.orders VALUES (2)")
        offset = one(conn, append, (topic_id, b"order 2 created"))

    assert offset == 0
    assert sql(dsn, "SELECT payload FROM txnq.messages") == [(b"order 2 created",)]
    assert sql(dsn, "SELECT id FROM public.orders") == [(2,)]


# -- errors: SQLSTATE class TQ -----------------------------------------------------


@pytest.fixture
def world(conn: psycopg.Connection[Any]) -> dict[str, int]:
    """A topic 'orders' (2 partitions, 1 KiB messages) with one message, a
    subscription 'billing' with a live consumer, a producer 'p1', a producer
    'p-fenced' whose first session a second one fenced, and a transactional
    id 'stale-id' whose session 0 a session 1 fenced."""
    topic_id = create_topic(conn, "orders", partitions=2)
    subscription_id = subscribe(conn, topic_id, "billing")
    consumer_id = one(conn, "SELECT txnq.register_consumer_v1(%s, 'c1', 0, 60)", (subscription_id,))
    ((producer_id, epoch),) = conn.execute(
        "SELECT DISTINCT producer_id, epoch FROM txnq.register_producer_v2(%s, 'p1')", (topic_id,)
    ).fetchall()
    for _ in range(2):
        ((fenced_producer_id,),) = conn.execute(
            "SELECT DISTINCT producer_id FROM txnq.register_producer_v2(%s, 'p-fenced')",
            (topic_id,),
        ).fetchall()
        conn.execute("SELECT * FROM txnq.init_transactional_id_v2('stale-id')")
    conn.execute(
        "SELECT * FROM txnq.append_v1(%s, 0, %s, %s, 0, ARRAY['first']::bytea[])",
        (topic_id, producer_id, epoch),
    )
    # Transactions: one open that holds a pending ack of offset 0, one ended,
    # one past its timeout.
    open_txn = "SELECT tc_id, txn_seq FROM txnq.open_txn_v2(0, %s)"
    ((open_tc, open_seq),) = conn.execute(open_txn, (60,)).fetchall()
    conn.execute(
        "SELECT txnq.ack_v2(%s, 0, %s, NULL, ARRAY[0], ARRAY[-1], ARRAY[1], NULL, NULL, %s, %s)",
        (topic_id, subscription_id, open_tc, open_seq),
    )
    ((ended_tc, ended_seq),) = conn.execute(open_txn, (60,)).fetchall()
    conn.execute("SELECT * FROM txnq.end_txn_v2(%s, %s, false)", (ended_tc, ended_seq))
    ((late_tc, late_seq),) = conn.execute(open_txn, (0.001,)).fetchall()
    # Backlog quota: a topic per producer policy whose subscription holds one
    # 2-byte message, over a 1-byte quota, as the periodic check recorded it.
    over_quota = {}
    for policy in ("producer_error", "producer_hold"):
        quota_topic = create_topic(conn, policy.replace("_", "-"))
        conn.execute(
            "UPDATE txnq.topics SET backlog_quota_bytes = 1, backlog_quota_policy = %s "
            "WHERE topic_id = %s",
            (policy, quota_topic),
        )
        subscribe(conn, quota_topic, "slow")
        conn.execute(
            "SELECT * FROM txnq.append_v4(%s, 0, NULL, NULL, NULL, ARRAY['xy']::bytea[])",
            (quota_topic,),
        )
        conn.execute("SELECT * FROM txnq.check_backlog_quota_v1(%s)", (quota_topic,))
        over_quota[f"{policy}_topic_id"] = quota_topic
    time.sleep(0.01)
    return {
        **over_quota,
        "topic_id": topic_id,
        "subscription_id": subscription_id,
        "consumer_id": consumer_id,
        "producer_id": producer_id,
        "epoch": epoch,
        "fenced_producer_id": fenced_producer_id,
        "open_tc": open_tc,
        "open_seq": open_seq,
        "ended_tc": ended_tc,
        "ended_seq": ended_seq,
        "late_tc": late_tc,
        "late_seq": late_seq,
    }


APPEND = "SELECT * FROM txnq.append_v1(%(topic_id)s, "
SUBSCRIBE = "SELECT txnq.subscribe_v1(%(topic_id)s, "
TXN_APPEND = (
    "SELECT * FROM txnq.append_v4(%(topic_id)s, 1, NULL, NULL, NULL, ARRAY['x']::bytea[], "
    "NULL, NULL, NULL, "
)
# name: (SQLSTATE, statement); %(name)s placeholders come from the `world` fixture.
ERRORS = {
    "topic-exists": ("TQ010", "SELECT txnq.create_topic_v2('orders', 1, 0, 0, NULL, 1024)"),
    "bad-topic-name": ("TQ005", "SELECT txnq.create_topic_v2('no spaces', 1, 0, 0, NULL, 1024)"),
    "zero-partitions": ("TQ005", "SELECT txnq.create_topic_v2('t', 0, 0, 0, NULL, 1024)"),
    "zero-max-message-bytes": ("TQ005", "SELECT txnq.create_topic_v2('t', 1, 0, 0, NULL, 0)"),
    "append-unknown-topic": (
        "TQ001",
        "SELECT * FROM txnq.append_v1(999, 0, NULL, NULL, NULL, ARRAY['x']::bytea[])",
    ),
    "append-unknown-partition": ("TQ001", APPEND + "7, NULL, NULL, NULL, ARRAY['x']::bytea[])"),
    "append-too-large": (
        "TQ004",
        APPEND + "0, NULL, NULL, NULL, ARRAY[convert_to(repeat('x', 1025), 'UTF8')])",
    ),
    "append-empty-batch": ("TQ005", APPEND + "0, NULL, NULL, NULL, '{}')"),
    "append-keys-mismatch": (
        "TQ005",
        APPEND + "0, NULL, NULL, NULL, ARRAY['x']::bytea[], ARRAY['k1', 'k2']::bytea[])",
    ),
    "append-sequence-gap": (
        "TQ003",
        APPEND + "0, %(producer_id)s, %(epoch)s, 5, ARRAY['x']::bytea[])",
    ),
    "append-wrong-epoch": (
        "TQ002",
        APPEND + "0, %(fenced_producer_id)s, 0, 0, ARRAY['x']::bytea[])",
    ),
    "subscribe-unknown-topic": (
        "TQ001",
        "SELECT txnq.subscribe_v1(999, 's', 'exclusive', 'read_committed', 'earliest')",
    ),
    "bad-initial-position": ("TQ005", SUBSCRIBE + "'s', 'exclusive', 'read_committed', 'middle')"),
    "bad-subscription-type": ("TQ005", SUBSCRIBE + "'s', 'fanout', 'read_committed', 'earliest')"),
    "bad-isolation": ("TQ005", SUBSCRIBE + "'s', 'exclusive', 'serializable', 'earliest')"),
    "bad-subscription-name": (
        "TQ005",
        SUBSCRIBE + "'no spaces', 'exclusive', 'read_committed', 'earliest')",
    ),
    "subscription-type-mismatch": (
        "TQ008",
        SUBSCRIBE + "'billing', 'failover', 'read_committed', 'earliest')",
    ),
    "exclusive-busy": (
        "TQ007",
        "SELECT txnq.register_consumer_v1(%(subscription_id)s, 'c2', 0, 60)",
    ),
    "register-unknown-subscription": (
        "TQ006",
        "SELECT txnq.register_consumer_v1(999, 'c2', 0, 60)",
    ),
    "heartbeat-expired": ("TQ009", "SELECT * FROM txnq.heartbeat_consumer_v1(999, 60)"),
    "producer-unknown-topic": ("TQ001", "SELECT * FROM txnq.register_producer_v2(999, 'p2')"),
    "bad-producer-name": (
        "TQ005",
        "SELECT * FROM txnq.register_producer_v2(%(topic_id)s, 'no spaces')",
    ),
    "fetch-unknown-subscription": (
        "TQ006",
        "SELECT * FROM txnq.fetch_v1(%(topic_id)s, 0, 999, -1)",
    ),
    "ack-beyond-high-watermark": (
        "TQ005",
        "SELECT txnq.ack_v1(%(topic_id)s, 0, %(subscription_id)s, 99)",
    ),
    "ack-unknown-subscription": ("TQ006", "SELECT txnq.ack_v1(%(topic_id)s, 0, 999, NULL)"),
    "seek-nowhere": ("TQ005", "SELECT txnq.seek_v1(%(topic_id)s, 0, %(subscription_id)s)"),
    "seek-unknown-subscription": ("TQ006", "SELECT txnq.seek_v1(%(topic_id)s, 0, 999, 0)"),
    "shrink-topic": ("TQ005", "SELECT txnq.add_partitions_v2(%(topic_id)s, 1)"),
    "grow-unknown-topic": ("TQ001", "SELECT txnq.add_partitions_v2(999, 3)"),
    "delete-unknown-topic": ("TQ001", "SELECT txnq.delete_topic_v2(999)"),
    "delete-busy-topic": ("TQ011", "SELECT txnq.delete_topic_v2(%(topic_id)s)"),
    "unsubscribe-busy": ("TQ007", "SELECT txnq.unsubscribe_v1(%(subscription_id)s)"),
    "unsubscribe-unknown": ("TQ006", "SELECT txnq.unsubscribe_v1(999)"),
    "ack-pending-in-a-transaction": (
        "TQ012",
        "SELECT txnq.ack_v2(%(topic_id)s, 0, %(subscription_id)s, NULL, ARRAY[0], ARRAY[-1], "
        "ARRAY[1])",
    ),
    "append-to-ended-transaction": ("TQ013", TXN_APPEND + "%(ended_tc)s, %(ended_seq)s)"),
    "append-to-unknown-transaction": ("TQ014", TXN_APPEND + "9, 999)"),
    "append-to-timed-out-transaction": ("TQ015", TXN_APPEND + "%(late_tc)s, %(late_seq)s)"),
    "bind-to-stale-epoch": (
        "TQ002",
        "SELECT txnq.bind_txn_v2(%(open_tc)s, %(open_seq)s, 'stale-id', 0)",
    ),
    "transaction-timeout-too-long": ("TQ005", "SELECT * FROM txnq.open_txn_v2(0, 1e9)"),
    "unknown-coordinator": ("TQ005", "SELECT * FROM txnq.open_txn_v2(70000, 60)"),
    "end-with-bad-reason": (
        "TQ005",
        "SELECT * FROM txnq.end_txn_v2(%(open_tc)s, %(open_seq)s, true, 'because')",
    ),
    "send-at-commit-unknown-topic": (
        "TQ001",
        "SELECT txnq.send_at_commit_v2('no-such-topic', 'x')",
    ),
    "stage-send-too-large": (
        "TQ004",
        "SELECT txnq.stage_send_v2(%(topic_id)s, 0, ARRAY[convert_to(repeat('x', 1025), 'UTF8')])",
    ),
    "stage-send-over-backlog-quota": (
        "TQ016",
        "SELECT txnq.stage_send_v2(%(producer_hold_topic_id)s, 0, ARRAY['x']::bytea[])",
    ),
    "stage-ack-pending-in-a-transaction": (
        "TQ012",
        "SELECT txnq.stage_ack_v1(%(topic_id)s, 0, %(subscription_id)s, ARRAY[0::bigint])",
    ),
    "stage-ack-unknown-subscription": (
        "TQ006",
        "SELECT txnq.stage_ack_v1(%(topic_id)s, 0, 999, ARRAY[0::bigint])",
    ),
    "append-over-backlog-quota": (
        "TQ016",
        "SELECT * FROM txnq.append_v4(%(producer_error_topic_id)s, 0, NULL, NULL, NULL, "
        "ARRAY['x']::bytea[])",
    ),
    "append-held-by-backlog-quota": (
        "TQ017",
        "SELECT * FROM txnq.append_v4(%(producer_hold_topic_id)s, 0, NULL, NULL, NULL, "
        "ARRAY['x']::bytea[])",
    ),
    # Permissions (docs/security.md): the test logs in as a superuser, which
    # passes every check; SET ROLE makes the rest of the block another role's.
    "no-grant-on-the-topic": (
        "TQ018",
        "DO $$ BEGIN SET LOCAL ROLE txnq_client; PERFORM txnq.topic_by_name_v1('orders'); END $$",
    ),
    "function-of-another-txnq-role": (
        "42501",
        "DO $$ BEGIN SET LOCAL ROLE txnq_reader; PERFORM txnq.open_txn_v1(0, 10); END $$",
    ),
}


def database_state(dsn: str) -> list[tuple[Any, ...]]:
    return sql(
        dsn,
        "SELECT (SELECT count(*) FROM txnq.topics), (SELECT count(*) FROM txnq.entries), "
        "(SELECT count(*) FROM txnq.subscriptions), (SELECT count(*) FROM txnq.consumers), "
        "(SELECT count(*) FROM txnq.producers), (SELECT sum(next_offset) FROM txnq.partitions), "
        "(SELECT sum(mark_delete_offset) FROM txnq.cursors)",
    )


@pytest.mark.parametrize(("sqlstate", "statement"), list(ERRORS.values()), ids=list(ERRORS))
def test_sql_functions_fail_with_a_txnq_sqlstate_and_write_nothing(
    conn: psycopg.Connection[Any], dsn: str, world: dict[str, int], sqlstate: str, statement: str
) -> None:
    before = database_state(dsn)

    with pytest.raises(psycopg.Error) as raised:
        conn.execute(statement, world)

    assert raised.value.sqlstate == sqlstate, raised.value.diag.message_primary
    assert raised.value.diag.message_primary
    assert isinstance(translate(raised.value), SQLSTATE_ERRORS[sqlstate])
    assert database_state(dsn) == before


#: SQLSTATEs proven by a test elsewhere, since no single statement can show them.
PROVEN_ELSEWHERE = {
    # compaction's swap against a reader holding txnq.entries (another session)
    "TQ020": "tests/integration/test_compaction.py::"
    "test_a_swap_that_cannot_lock_the_entries_in_time_fails_with_tq020_and_changes_nothing",
    # raised by a cluster's proxy database (sql/proxy), which needs PL/Proxy and
    # servers of its own: tests/cluster proves both
    "TQ030": "tests/cluster/test_proxy_api.py::"
    "test_what_the_proxy_does_not_route_fails_with_tq030_and_changes_nothing",
    "TQ031": "tests/cluster/test_cluster_setup.py::test_shards_that_disagree_fail_with_tq031",
}


def test_every_txnq_sqlstate_is_proven_by_a_statement() -> None:
    proven = {sqlstate for sqlstate, _ in ERRORS.values()} | set(PROVEN_ELSEWHERE)
    assert proven == set(SQLSTATE_ERRORS)
