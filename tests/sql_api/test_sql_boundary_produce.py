"""The SQL boundary on the producing side (revision 0015): topics, producing,
transactions and application transactions' staging. Each public function,
called from plain SQL, refuses every class of bad argument with a documented
TQ SQLSTATE (mapped to its txnq error) and changes nothing; the versions it
replaces are wrappers that refuse the same; valid calls work as before; and
each function asks the permission hooks before it changes anything."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql

import txnq
from tests.helpers import receive_messages
from txnq.database.connections import SQLSTATE_ERRORS, translate


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


def one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def digest(conn: psycopg.Connection[Any]) -> dict[str, str | None]:
    """Every row of every txnq table (entry logs through their parent): a
    rejected call must leave each one as it was."""
    tables = [
        row[0]
        for row in conn.execute(
            "SELECT c.relname FROM pg_class c WHERE c.relnamespace = 'txnq'::regnamespace "
            "AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY c.relname"
        )
    ]
    return {
        table: one(
            conn,
            pgsql.SQL(
                "SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM txnq.{} t"
            ).format(pgsql.Identifier(table)),
        )
        for table in tables
    }


@pytest.fixture
def world(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Topic 'orders' (2 partitions, 1 KiB messages) with a producer 'p1' and a
    shared subscription 'billing' holding a claim on its message at offset 0;
    topic 'other' (1 partition) with a producer 'p2' and a subscription
    'audit'; a dead-letter topic 'dlq'; an open transaction bound to
    transactional id 'tid' (whose epoch is now 1, session 0 fenced) and an
    ended one."""
    create = "SELECT txnq.create_topic_v2(%s, %s, -1, -1, NULL, 1024)"
    topic_id = one(conn, create, ("orders", 2))
    other_topic_id = one(conn, create, ("other", 1))
    dlq_topic_id = one(conn, create, ("dlq", 1))
    ((producer_id, epoch),) = conn.execute(
        "SELECT DISTINCT producer_id, epoch FROM txnq.register_producer_v2(%s, 'p1')", (topic_id,)
    ).fetchall()
    ((other_producer_id,),) = conn.execute(
        "SELECT DISTINCT producer_id FROM txnq.register_producer_v2(%s, 'p2')", (other_topic_id,)
    ).fetchall()
    conn.execute(
        "SELECT * FROM txnq.append_v5(%s, 0, %s, %s, 0, ARRAY['first']::bytea[])",
        (topic_id, producer_id, epoch),
    )
    subscription_id = one(
        conn,
        "SELECT txnq.subscribe_v1(%s, 'billing', 'shared', 'read_committed', 'earliest')",
        (topic_id,),
    )
    other_subscription_id = one(
        conn,
        "SELECT txnq.subscribe_v1(%s, 'audit', 'exclusive', 'read_committed', 'earliest')",
        (other_topic_id,),
    )
    consumer_id = one(
        conn, "SELECT txnq.register_consumer_v1(%s, 'c1', 0, 600)", (subscription_id,)
    )
    claimed = conn.execute(
        "SELECT partition, entry_offset FROM txnq.claim_v2(%s, %s, %s, 10, 600, NULL, NULL)",
        (topic_id, subscription_id, consumer_id),
    ).fetchall()
    assert claimed == [(0, 0)]
    conn.execute("SELECT * FROM txnq.init_transactional_id_v2('tid')")
    ((open_tc, open_seq),) = conn.execute(
        "SELECT tc_id, txn_seq FROM txnq.open_txn_v2(0, 600)"
    ).fetchall()
    conn.execute("SELECT txnq.bind_txn_v2(%s, %s, 'tid', 0)", (open_tc, open_seq))
    ((ended_tc, ended_seq),) = conn.execute(
        "SELECT tc_id, txn_seq FROM txnq.open_txn_v2(1, 600)"
    ).fetchall()
    conn.execute("SELECT * FROM txnq.end_txn_v2(%s, %s, false)", (ended_tc, ended_seq))
    return {
        "topic_id": topic_id,
        "other_topic_id": other_topic_id,
        "dlq_topic_id": dlq_topic_id,
        "producer_id": producer_id,
        "epoch": epoch,
        "other_producer_id": other_producer_id,
        "subscription_id": subscription_id,
        "other_subscription_id": other_subscription_id,
        "open_tc": open_tc,
        "open_seq": open_seq,
        "ended_tc": ended_tc,
        "ended_seq": ended_seq,
    }


def assert_refused(
    conn: psycopg.Connection[Any], world: dict[str, Any], cases: dict[str, tuple[str, str]]
) -> None:
    """Each statement fails with its SQLSTATE, a message, the mapped txnq
    error, and leaves every txnq table as it was."""
    before = digest(conn)
    for name, (sqlstate, statement) in cases.items():
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(statement, world)
        error = raised.value
        assert error.sqlstate == sqlstate, (name, error.sqlstate, error.diag.message_primary)
        assert error.diag.message_primary, name
        assert isinstance(translate(error), SQLSTATE_ERRORS[sqlstate]), name
        assert digest(conn) == before, f"{name} changed the database"


A1 = "ARRAY['x']::bytea[]"
APPEND = "SELECT * FROM txnq.append_v5(%(topic_id)s, "
PRODUCER = "%(producer_id)s, %(epoch)s"

APPEND_CASES = {
    "null topic": ("TQ001", f"SELECT * FROM txnq.append_v5(NULL, 0, NULL, NULL, NULL, {A1})"),
    "unknown topic": ("TQ001", f"SELECT * FROM txnq.append_v5(999, 0, NULL, NULL, NULL, {A1})"),
    "null partition": ("TQ001", APPEND + f"NULL, NULL, NULL, NULL, {A1})"),
    "negative partition": ("TQ001", APPEND + f"-1, NULL, NULL, NULL, {A1})"),
    "partition past the last": ("TQ001", APPEND + f"2, NULL, NULL, NULL, {A1})"),
    "partition past the last, producer skipping ahead": (
        "TQ001",
        APPEND + f"7, {PRODUCER}, 3, {A1})",
    ),
    "partition past the last, producer": ("TQ001", APPEND + f"7, {PRODUCER}, 0, {A1})"),
    "payloads null": ("TQ005", APPEND + "0, NULL, NULL, NULL, NULL)"),
    "payloads empty": ("TQ005", APPEND + "0, NULL, NULL, NULL, '{}')"),
    "payload null": ("TQ005", APPEND + "0, NULL, NULL, NULL, ARRAY[NULL]::bytea[])"),
    "payload null in a batch": (
        "TQ005",
        APPEND + "0, NULL, NULL, NULL, ARRAY['a', NULL]::bytea[])",
    ),
    "payloads two-dimensional": (
        "TQ005",
        APPEND + "0, NULL, NULL, NULL, ARRAY[['a', 'b'], ['c', 'd']]::bytea[])",
    ),
    "payload two-dimensional": ("TQ005", APPEND + "0, NULL, NULL, NULL, ARRAY[['a']]::bytea[])"),
    "payloads from index 0": ("TQ005", APPEND + "0, NULL, NULL, NULL, '[0:1]={a,b}'::bytea[])"),
    "payload at index 0": ("TQ005", APPEND + "0, NULL, NULL, NULL, '[0:0]={a}'::bytea[])"),
    "payload too large": (
        "TQ004",
        APPEND + "0, NULL, NULL, NULL, ARRAY[convert_to(repeat('x', 1025), 'UTF8')])",
    ),
    "more keys than payloads": ("TQ005", APPEND + f"0, NULL, NULL, NULL, {A1}, '{{k,l}}')"),
    "keys empty": ("TQ005", APPEND + f"0, NULL, NULL, NULL, {A1}, '{{}}')"),
    "keys two-dimensional": (
        "TQ005",
        APPEND + "0, NULL, NULL, NULL, '{a,b,c,d}', ARRAY[['a', 'b'], ['c', 'd']]::bytea[])",
    ),
    "properties a JSON array": (
        "TQ005",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, ARRAY['[1, 2]']::jsonb[])",
    ),
    "properties with a number": (
        "TQ005",
        APPEND + f"""0, NULL, NULL, NULL, {A1}, NULL, ARRAY['{{"a": 1}}']::jsonb[])""",
    ),
    "properties with a null": (
        "TQ005",
        APPEND + f"""0, NULL, NULL, NULL, {A1}, NULL, ARRAY['{{"a": null}}']::jsonb[])""",
    ),
    "properties a string": (
        "TQ005",
        APPEND + f"""0, NULL, NULL, NULL, {A1}, NULL, ARRAY['"a"']::jsonb[])""",
    ),
    "fewer properties than payloads": (
        "TQ005",
        APPEND + "0, NULL, NULL, NULL, '{a,b}', NULL, ARRAY['{}']::jsonb[])",
    ),
    "event time infinity": (
        "TQ005",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, ARRAY['infinity']::timestamptz[])",
    ),
    "event time -infinity": (
        "TQ005",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, ARRAY['-infinity']::timestamptz[])",
    ),
    "event time in year 10000": (
        "TQ005",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, ARRAY['10000-01-01']::timestamptz[])",
    ),
    "event time before year 1": (
        "TQ005",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, ARRAY['0044-03-15 BC']::timestamptz[])",
    ),
    "more event times than payloads": (
        "TQ005",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, ARRAY[now(), now()])",
    ),
    "producer id without sequence": ("TQ005", APPEND + f"0, {PRODUCER}, NULL, {A1})"),
    "sequence without producer id": ("TQ005", APPEND + f"0, NULL, NULL, 0, {A1})"),
    "epoch without producer id": ("TQ005", APPEND + f"0, NULL, 0, NULL, {A1})"),
    "producer without epoch": ("TQ005", APPEND + f"0, %(producer_id)s, NULL, 1, {A1})"),
    "negative sequence": ("TQ005", APPEND + f"0, {PRODUCER}, -5, {A1})"),
    "negative sequence on an unwritten partition": ("TQ005", APPEND + f"1, {PRODUCER}, -1, {A1})"),
    "negative epoch": ("TQ005", APPEND + f"0, %(producer_id)s, -1, 1, {A1})"),
    "epoch never issued": ("TQ005", APPEND + f"0, %(producer_id)s, %(epoch)s + 1, 1, {A1})"),
    "unknown producer": ("TQ005", APPEND + f"0, 999, 0, 0, {A1})"),
    "unknown producer skipping ahead": ("TQ005", APPEND + f"0, 999, 0, 4, {A1})"),
    "producer of another topic": ("TQ005", APPEND + f"0, %(other_producer_id)s, 0, 0, {A1})"),
    "producer of another topic skipping ahead": (
        "TQ005",
        APPEND + f"0, %(other_producer_id)s, 0, 3, {A1})",
    ),
    "sequence gap": ("TQ003", APPEND + f"0, {PRODUCER}, 5, {A1})"),
    "txn_tc without txn_seq": (
        "TQ005",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, NULL, %(open_tc)s, NULL)",
    ),
    "txn_seq without txn_tc": (
        "TQ005",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, NULL, NULL, %(open_seq)s)",
    ),
    "unknown transaction": (
        "TQ014",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, NULL, 3, 999)",
    ),
    "ended transaction": (
        "TQ013",
        APPEND + f"0, NULL, NULL, NULL, {A1}, NULL, NULL, NULL, %(ended_tc)s, %(ended_seq)s)",
    ),
}


def test_append_refuses_every_bad_argument_and_writes_nothing(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    assert_refused(conn, world, APPEND_CASES)


def test_staging_refuses_what_the_append_would_and_stages_nothing(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    stage = "SELECT txnq.stage_send_v2(%(topic_id)s, "
    send = "SELECT txnq.send_at_commit_v2("
    assert_refused(
        conn,
        world,
        {
            "null topic": ("TQ001", f"SELECT txnq.stage_send_v2(NULL, 0, {A1})"),
            "unknown topic": ("TQ001", f"SELECT txnq.stage_send_v2(999, 0, {A1})"),
            "null partition": ("TQ001", stage + f"NULL, {A1})"),
            "partition past the last": ("TQ001", stage + f"2, {A1})"),
            "negative partition": ("TQ001", stage + f"-1, {A1})"),
            "payloads null": ("TQ005", stage + "0, NULL)"),
            "payloads empty": ("TQ005", stage + "0, '{}')"),
            "payload null": ("TQ005", stage + "0, ARRAY[NULL]::bytea[])"),
            "payload null in a batch": ("TQ005", stage + "0, ARRAY['a', NULL]::bytea[])"),
            "payloads two-dimensional": ("TQ005", stage + "0, ARRAY[['a'], ['b']]::bytea[])"),
            "payloads from index 0": ("TQ005", stage + "0, '[0:0]={a}'::bytea[])"),
            "payload too large": (
                "TQ004",
                stage + "0, ARRAY[convert_to(repeat('x', 1025), 'UTF8')])",
            ),
            "keys mismatch": ("TQ005", stage + f"0, {A1}, '{{a,b}}')"),
            "properties a JSON array": ("TQ005", stage + f"0, {A1}, NULL, ARRAY['[]']::jsonb[])"),
            "properties with a number": (
                "TQ005",
                stage + f"""0, {A1}, NULL, ARRAY['{{"n": 1}}']::jsonb[])""",
            ),
            "event time infinity": (
                "TQ005",
                stage + f"0, {A1}, NULL, NULL, ARRAY['infinity']::timestamptz[])",
            ),
            "send: null topic": ("TQ001", send + "NULL, 'x')"),
            "send: unknown topic": ("TQ001", send + "'no-such-topic', 'x')"),
            "send: null payload": ("TQ005", send + "'orders', NULL)"),
            "send: properties a JSON array": ("TQ005", send + "'orders', 'x', NULL, '[1]')"),
            "send: properties with a number": (
                "TQ005",
                send + """'orders', 'x', NULL, '{"n": 1}')""",
            ),
            "send: partition past the last": ("TQ001", send + "'orders', 'x', NULL, NULL, 2)"),
            "send: negative partition": ("TQ001", send + "'orders', 'x', 'k', NULL, -1)"),
        },
    )


def test_a_delayed_append_refuses_a_delivery_time_no_consumer_can_read(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    delayed = (
        "SELECT * FROM txnq.append_delayed_v2(%(topic_id)s, 0, NULL, NULL, NULL, {payloads}, "
        "NULL, NULL, NULL, NULL, NULL, {at})"
    )
    assert_refused(
        conn,
        world,
        {
            "deliver_at null": ("TQ005", delayed.format(payloads=A1, at="NULL")),
            "deliver_at infinity": ("TQ005", delayed.format(payloads=A1, at="'infinity'")),
            "deliver_at in year 10000": ("TQ005", delayed.format(payloads=A1, at="'10000-01-02'")),
            "two payloads": ("TQ005", delayed.format(payloads="'{a,b}'", at="now()")),
            "no payload": ("TQ005", delayed.format(payloads="'{}'", at="now()")),
            "payload null": ("TQ005", delayed.format(payloads="ARRAY[NULL]::bytea[]", at="now()")),
            "unknown topic": (
                "TQ001",
                "SELECT * FROM txnq.append_delayed_v2(999, 0, NULL, NULL, NULL, "
                f"{A1}, NULL, NULL, NULL, NULL, NULL, now())",
            ),
        },
    )


def test_topic_administration_refuses_bad_settings_and_changes_nothing(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    def create(name: str = "'t'", partitions: str = "1", retention: str = "-1") -> str:
        return f"SELECT txnq.create_topic_v2({name}, {partitions}, {retention}, "

    ok = "-1, NULL, 1024)"
    assert_refused(
        conn,
        world,
        {
            "name null": ("TQ005", create(name="NULL") + ok),
            "name empty": ("TQ005", create(name="''") + ok),
            "name with a space": ("TQ005", create(name="'a b'") + ok),
            "name too long": ("TQ005", create(name="repeat('a', 201)") + ok),
            "partitions null": ("TQ005", create(partitions="NULL") + ok),
            "no partitions": ("TQ005", create(partitions="0") + ok),
            "too many partitions": ("TQ005", create(partitions="4097") + ok),
            "retention NaN": ("TQ005", create(retention="'NaN'") + ok),
            "retention Infinity": ("TQ005", create(retention="'Infinity'") + ok),
            "retention -Infinity": ("TQ005", create(retention="'-Infinity'") + ok),
            "retention negative": ("TQ005", create(retention="-5") + ok),
            "retention just below zero": ("TQ005", create(retention="-0.5") + ok),
            "retention null": ("TQ005", create(retention="NULL") + ok),
            "retention past 100 years": ("TQ005", create(retention="1e300") + ok),
            "retention bytes below -1": ("TQ005", create() + "-2, NULL, 1024)"),
            "retention bytes null": ("TQ005", create() + "NULL, NULL, 1024)"),
            "TTL zero": ("TQ005", create() + "-1, 0, 1024)"),
            "TTL negative": ("TQ005", create() + "-1, -3, 1024)"),
            "TTL NaN": ("TQ005", create() + "-1, 'NaN', 1024)"),
            "TTL Infinity": ("TQ005", create() + "-1, 'Infinity', 1024)"),
            "TTL past 100 years": ("TQ005", create() + "-1, 1e12, 1024)"),
            "max message bytes null": ("TQ005", create() + "-1, NULL, NULL)"),
            "max message bytes zero": ("TQ005", create() + "-1, NULL, 0)"),
            "max message bytes past 1 GiB": ("TQ005", create() + "-1, NULL, 2147483647)"),
            "topic exists": ("TQ010", create(name="'orders'") + ok),
            "delete: topic null": ("TQ001", "SELECT txnq.delete_topic_v2(NULL)"),
            "delete: unknown topic": ("TQ001", "SELECT txnq.delete_topic_v2(999)"),
            "delete: force null": ("TQ005", "SELECT txnq.delete_topic_v2(%(topic_id)s, NULL)"),
            "delete: busy": ("TQ011", "SELECT txnq.delete_topic_v2(%(topic_id)s, false)"),
            "grow: topic null": ("TQ001", "SELECT txnq.add_partitions_v2(NULL, 3)"),
            "grow: unknown topic": ("TQ001", "SELECT txnq.add_partitions_v2(999, 3)"),
            "grow: partitions null": ("TQ005", "SELECT txnq.add_partitions_v2(%(topic_id)s, NULL)"),
            "grow: shrink": ("TQ005", "SELECT txnq.add_partitions_v2(%(topic_id)s, 1)"),
            "grow: past 4096": ("TQ005", "SELECT txnq.add_partitions_v2(%(topic_id)s, 4097)"),
            "producer: topic null": ("TQ001", "SELECT * FROM txnq.register_producer_v2(NULL, 'p')"),
            "producer: unknown topic": (
                "TQ001",
                "SELECT * FROM txnq.register_producer_v2(999, 'p')",
            ),
            "producer: name null": (
                "TQ005",
                "SELECT * FROM txnq.register_producer_v2(%(topic_id)s, NULL)",
            ),
            "producer: name with a space": (
                "TQ005",
                "SELECT * FROM txnq.register_producer_v2(%(topic_id)s, 'p 1')",
            ),
            "key routing: partitions null": (
                "TQ005",
                "SELECT txnq.partition_for_key_v2('k', NULL)",
            ),
            "key routing: no partitions": ("TQ005", "SELECT txnq.partition_for_key_v2('k', 0)"),
            "key routing: negative partitions": (
                "TQ005",
                "SELECT txnq.partition_for_key_v2('k', -4)",
            ),
            "key routing: past 4096": ("TQ005", "SELECT txnq.partition_for_key_v2('k', 4097)"),
        },
    )


def test_transactions_refuse_bad_arguments_and_change_nothing(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    open_txn = "SELECT * FROM txnq.open_txn_v2("
    end = "SELECT * FROM txnq.end_txn_v2("
    bind = "SELECT txnq.bind_txn_v2("
    open_id = "%(open_tc)s, %(open_seq)s"
    assert_refused(
        conn,
        world,
        {
            "open: coordinator null": ("TQ005", open_txn + "NULL, 60)"),
            "open: negative coordinator": ("TQ005", open_txn + "-1, 60)"),
            "open: coordinator past the last": ("TQ005", open_txn + "16, 60)"),
            "open: timeout null": ("TQ005", open_txn + "0, NULL)"),
            "open: timeout zero": ("TQ005", open_txn + "0, 0)"),
            "open: timeout negative": ("TQ005", open_txn + "0, -1)"),
            "open: timeout NaN": ("TQ005", open_txn + "0, 'NaN')"),
            "open: timeout Infinity": ("TQ005", open_txn + "0, 'Infinity')"),
            "open: timeout past the maximum": ("TQ005", open_txn + "0, 1e9)"),
            "end: tc null": ("TQ005", end + "NULL, %(open_seq)s, true)"),
            "end: seq null": ("TQ005", end + "%(open_tc)s, NULL, true)"),
            "end: commit null": ("TQ005", end + open_id + ", NULL)"),
            "end: reason null": ("TQ005", end + open_id + ", true, NULL)"),
            "end: reason unknown": ("TQ005", end + open_id + ", true, 'because')"),
            "end: notify null": ("TQ005", end + open_id + ", false, 'client', NULL)"),
            "end: unknown transaction": ("TQ014", end + "3, 999, true)"),
            "bind: ids null": ("TQ005", bind + "NULL, NULL, 'tid', 1)"),
            "bind: transactional id null": ("TQ005", bind + open_id + ", NULL, 1)"),
            "bind: transactional id malformed": ("TQ005", bind + open_id + ", 'a b', 1)"),
            "bind: transactional id never initialised": ("TQ005", bind + open_id + ", 'nope', 0)"),
            "bind: epoch null": ("TQ005", bind + open_id + ", 'tid', NULL)"),
            "bind: epoch negative": ("TQ005", bind + open_id + ", 'tid', -1)"),
            "bind: epoch never issued": ("TQ005", bind + open_id + ", 'tid', 7)"),
            "bind: unknown transaction": ("TQ014", bind + "3, 999, 'tid', 0)"),
            "bind: ended transaction": ("TQ013", bind + "%(ended_tc)s, %(ended_seq)s, 'tid', 0)"),
            "init: transactional id null": (
                "TQ005",
                "SELECT * FROM txnq.init_transactional_id_v2(NULL)",
            ),
            "init: transactional id empty": (
                "TQ005",
                "SELECT * FROM txnq.init_transactional_id_v2('')",
            ),
            "init: transactional id too long": (
                "TQ005",
                "SELECT * FROM txnq.init_transactional_id_v2(repeat('t', 201))",
            ),
        },
    )


def test_a_fenced_transactional_session_binds_nothing(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    conn.execute("SELECT * FROM txnq.init_transactional_id_v2('tid')")  # epoch 1: fences 0
    ((tc, seq),) = conn.execute("SELECT tc_id, txn_seq FROM txnq.open_txn_v2(2, 60)").fetchall()
    assert_refused(
        conn,
        {**world, "tc": tc, "seq": seq},
        {"stale epoch": ("TQ002", "SELECT txnq.bind_txn_v2(%(tc)s, %(seq)s, 'tid', 0)")},
    )


def test_dead_lettering_refuses_ids_that_do_not_belong_together(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    dl = "SELECT txnq.dead_letter_v2("
    held = "%(topic_id)s, 0, %(subscription_id)s, 0, 0"
    assert_refused(
        conn,
        world,
        {
            "topic null": (
                "TQ001",
                dl + "NULL, 0, %(subscription_id)s, 0, 0, %(dlq_topic_id)s, 'r')",
            ),
            "partition null": (
                "TQ001",
                dl + "%(topic_id)s, NULL, %(subscription_id)s, 0, 0, %(dlq_topic_id)s, 'r')",
            ),
            "partition past the last": (
                "TQ001",
                dl + "%(topic_id)s, 5, %(subscription_id)s, 0, 0, %(dlq_topic_id)s, 'r')",
            ),
            "unknown topic": (
                "TQ001",
                dl + "999, 0, %(subscription_id)s, 0, 0, %(dlq_topic_id)s, 'r')",
            ),
            "subscription null": (
                "TQ006",
                dl + "%(topic_id)s, 0, NULL, 0, 0, %(dlq_topic_id)s, 'r')",
            ),
            "unknown subscription": (
                "TQ006",
                dl + "%(topic_id)s, 0, 999, 0, 0, %(dlq_topic_id)s, 'r')",
            ),
            "subscription of another topic": (
                "TQ006",
                dl + "%(topic_id)s, 0, %(other_subscription_id)s, 0, 0, %(dlq_topic_id)s, 'r')",
            ),
            "offset null": (
                "TQ005",
                dl + "%(topic_id)s, 0, %(subscription_id)s, NULL, 0, %(dlq_topic_id)s, 'r')",
            ),
            "offset negative": (
                "TQ005",
                dl + "%(topic_id)s, 0, %(subscription_id)s, -1, 0, %(dlq_topic_id)s, 'r')",
            ),
            "batch index negative": (
                "TQ005",
                dl + "%(topic_id)s, 0, %(subscription_id)s, 0, -1, %(dlq_topic_id)s, 'r')",
            ),
            "reason null": ("TQ005", dl + held + ", %(dlq_topic_id)s, NULL)"),
            "dead-letter topic null": ("TQ001", dl + held + ", NULL, 'r')"),
            "unknown dead-letter topic": ("TQ001", dl + held + ", 999, 'r')"),
        },
    )


def test_the_versions_revision_0015_replaces_refuse_the_same(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    # Clients of older revisions call these: they are wrappers now.
    v1 = "SELECT * FROM txnq.append_v1(%(topic_id)s, 0, NULL, NULL, NULL, "
    assert_refused(
        conn,
        world,
        {
            "append_v1: payloads two-dimensional": ("TQ005", v1 + "ARRAY[['a'], ['b']]::bytea[])"),
            "append_v1: producer of another topic": (
                "TQ005",
                f"SELECT * FROM txnq.append_v1(%(topic_id)s, 0, %(other_producer_id)s, 0, 0, {A1})",
            ),
            "append_v2: properties a JSON array": (
                "TQ005",
                "SELECT * FROM txnq.append_v2(%(topic_id)s, 0, NULL, NULL, NULL, "
                f"{A1}, NULL, ARRAY['[]']::jsonb[])",
            ),
            "append_v3: event time infinity": (
                "TQ005",
                "SELECT * FROM txnq.append_v3(%(topic_id)s, 0, NULL, NULL, NULL, "
                f"{A1}, NULL, NULL, ARRAY['infinity']::timestamptz[])",
            ),
            "append_delayed_v1: deliver_at infinity": (
                "TQ005",
                "SELECT * FROM txnq.append_delayed_v1(%(topic_id)s, 0, NULL, NULL, NULL, "
                f"{A1}, NULL, NULL, NULL, NULL, NULL, 'infinity')",
            ),
            "create_topic_v1: retention NaN": (
                "TQ005",
                "SELECT txnq.create_topic_v1('t', 1, 'NaN', -1, NULL, 1024)",
            ),
            "delete_topic_v1: force null": (
                "TQ005",
                "SELECT txnq.delete_topic_v1(%(topic_id)s, NULL)",
            ),
            "add_partitions_v1: topic null": ("TQ001", "SELECT txnq.add_partitions_v1(NULL, 3)"),
            "register_producer_v1: topic null": (
                "TQ001",
                "SELECT * FROM txnq.register_producer_v1(NULL, 'p')",
            ),
            "init_transactional_id_v1: null": (
                "TQ005",
                "SELECT * FROM txnq.init_transactional_id_v1(NULL)",
            ),
            "partition_for_key_v1: partitions null": (
                "TQ005",
                "SELECT txnq.partition_for_key_v1('k', NULL)",
            ),
            "open_txn_v1: coordinator null": ("TQ005", "SELECT * FROM txnq.open_txn_v1(NULL, 60)"),
            "end_txn_v1: commit null": (
                "TQ005",
                "SELECT * FROM txnq.end_txn_v1(%(open_tc)s, %(open_seq)s, NULL)",
            ),
            "bind_txn_v1: epoch null": (
                "TQ005",
                "SELECT txnq.bind_txn_v1(%(open_tc)s, %(open_seq)s, 'tid', NULL)",
            ),
            "stage_send_v1: payload null": (
                "TQ005",
                "SELECT txnq.stage_send_v1(%(topic_id)s, 0, ARRAY[NULL]::bytea[])",
            ),
            "send_at_commit_v1: properties a JSON array": (
                "TQ005",
                "SELECT txnq.send_at_commit_v1('orders', 'x', NULL, '[]')",
            ),
            "dead_letter_v1: reason null": (
                "TQ005",
                "SELECT txnq.dead_letter_v1(%(topic_id)s, 0, %(subscription_id)s, 0, 0, "
                "%(dlq_topic_id)s, NULL)",
            ),
        },
    )


def test_valid_calls_of_the_checked_versions_work_as_before(
    conn: psycopg.Connection[Any], world: dict[str, Any], dsn: str
) -> None:
    w = world
    # Every optional array given, NULL elements inside, a transaction: appended.
    offset = one(
        conn,
        "SELECT entry_offset FROM txnq.append_v5(%s, 1, %s, %s, 0, ARRAY['a', '']::bytea[], "
        "ARRAY['k', NULL]::bytea[], ARRAY['{\"p\": \"v\"}', NULL]::jsonb[], "
        "ARRAY['0001-01-01 00:00:00+00', '9999-12-31 23:59:59.999999+00']::timestamptz[], %s, %s)",
        (w["topic_id"], w["producer_id"], w["epoch"], w["open_tc"], w["open_seq"]),
    )
    assert offset == 0
    # A retry is recognised, as before.
    assert conn.execute(
        "SELECT entry_offset, duplicate FROM txnq.append_v5(%s, 1, %s, %s, 0, "
        "ARRAY['a', '']::bytea[])",
        (w["topic_id"], w["producer_id"], w["epoch"]),
    ).fetchall() == [(0, True)]
    assert conn.execute(
        "SELECT state FROM txnq.end_txn_v2(%s, %s, true, 'client', true)",
        (w["open_tc"], w["open_seq"]),
    ).fetchall() == [("COMMITTING",)]
    # A topic with every setting at its limits.
    topic_id = one(
        conn, "SELECT txnq.create_topic_v2('limits', 4096, 3155760000, 0, 3155760000, 1073741823)"
    )
    assert one(conn, "SELECT txnq.add_partitions_v2(%s, 4096)", (topic_id,)) == 4096
    conn.execute("SELECT txnq.delete_topic_v2(%s, false)", (topic_id,))
    # The outbox: staged in the caller's transaction, published by its commit.
    with conn.transaction():
        conn.execute("SELECT txnq.send_at_commit_v2('other', 'out', 'k', '{\"a\": \"b\"}')")
        conn.execute(
            "SELECT txnq.stage_send_v2(%s, 0, ARRAY['a', 'b']::bytea[])", (w["other_topic_id"],)
        )
    assert conn.execute(
        "SELECT payloads, keys, properties FROM txnq.entries WHERE topic_id = %s",
        (w["other_topic_id"],),
    ).fetchall() == [([b"out", b"a", b"b"], [b"k", None, None], [{"a": "b"}, None, None])]
    # A delayed message at the last representable instant.
    delayed = one(
        conn,
        "SELECT entry_offset FROM txnq.append_delayed_v2(%s, 0, NULL, NULL, NULL, "
        "ARRAY['later']::bytea[], NULL, NULL, NULL, NULL, NULL, '9999-12-31 23:59:59+00')",
        (w["topic_id"],),
    )
    assert (
        one(
            conn, "SELECT deliver_at FROM txnq.delayed_entries WHERE entry_offset = %s", (delayed,)
        ).year
        == 9999
    )
    # The held message moves to the dead-letter topic.
    assert one(
        conn,
        "SELECT txnq.dead_letter_v2(%s, 0, %s, 0, 0, %s, 'poison')",
        (w["topic_id"], w["subscription_id"], w["dlq_topic_id"]),
    )
    assert (
        one(
            conn,
            "SELECT properties[1] ->> 'DEAD_LETTER_REASON' FROM txnq.entries WHERE topic_id = %s",
            (w["dlq_topic_id"],),
        )
        == "poison"
    )


def test_key_routing_in_sql_matches_the_python_producer_in_both_versions(
    conn: psycopg.Connection[Any],
) -> None:
    keys = [b"", b"k1", b"customer-7", "clé".encode(), bytes(range(256))]
    for partitions in (1, 3, 4096):
        for version in ("v1", "v2"):
            rows = conn.execute(
                f"SELECT txnq.partition_for_key_{version}(k, %s) FROM unnest(%s::bytea[]) AS k",
                (partitions, keys),
            ).fetchall()
            assert [r[0] for r in rows] == [zlib.crc32(k) % partitions for k in keys]
    assert one(conn, "SELECT txnq.partition_for_key_v2(NULL, 3)") is None  # no key


def test_dead_lettering_copies_properties_stored_before_revision_0015_as_strings(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    # A message written before the checks, with properties no consumer can
    # decode as strings and an event time nobody can read.
    conn.execute(
        'UPDATE txnq.entries SET properties = ARRAY[\'{"n": 1, "s": "x"}\'::jsonb], '
        "event_times = ARRAY['infinity'::timestamptz] WHERE topic_id = %s AND entry_offset = 0",
        (world["topic_id"],),
    )
    assert one(
        conn,
        "SELECT txnq.dead_letter_v2(%s, 0, %s, 0, 0, %s, 'poison')",
        (world["topic_id"], world["subscription_id"], world["dlq_topic_id"]),
    )
    properties, event_times = conn.execute(
        "SELECT properties[1], event_times FROM txnq.entries WHERE topic_id = %s",
        (world["dlq_topic_id"],),
    ).fetchone() or (None, None)
    assert properties["n"] == "1" and properties["s"] == "x"
    assert all(isinstance(value, str) for value in properties.values())
    assert event_times is None


# -- permission hooks -------------------------------------------------------------

HOOKS = {
    "authorize_v1": "p_topic_id integer, p_action text",
    "authorize_v2": "p_topic_id integer, p_action text",
    "authorize_topic_name_v1": "p_name text, p_action text",
    "authorize_txn_v1": "p_tc_id integer, p_txn_seq bigint",
}


def install_hooks(conn: psycopg.Connection[Any], deny: str | None) -> None:
    """Permissive stand-ins for the permission hooks (helper B fills in the
    real ones), except ``deny``, which refuses with TQ018 and names its arguments."""
    for name, params in HOOKS.items():
        body = (
            "RAISE EXCEPTION USING ERRCODE = 'TQ018', MESSAGE = "
            f"format('{name} denied %s %s', $1, $2);"
            if name == deny
            else "RETURN;"
        )
        conn.execute(
            f"CREATE OR REPLACE FUNCTION txnq.{name}({params}) RETURNS void "
            f"LANGUAGE plpgsql STABLE AS $$ BEGIN {body} END; $$"
        )
    if deny == "authorize_v2":
        # Trusted callers (the tests' owner) pass append_v5 without asking it.
        conn.execute(
            "CREATE OR REPLACE FUNCTION txnq.caller_is_trusted_v1(p_caller name) RETURNS boolean "
            "LANGUAGE sql STABLE AS $$ SELECT false $$"
        )


# function call -> (the hook that must refuse it, what its message names)
HOOKED_CALLS = {
    # append_v5 (and append_delayed_v2 through it) reads a role's own grant
    # itself and asks authorize_v2 about the rest: the test makes the caller
    # untrusted for that hook.
    f"SELECT * FROM txnq.append_v5(%(topic_id)s, 0, NULL, NULL, NULL, {A1})": (
        "authorize_v2",
        "%(topic_id)s produce",
    ),
    f"SELECT * FROM txnq.append_v5(%(topic_id)s, 0, NULL, NULL, NULL, {A1}, NULL, NULL, NULL, "
    "%(open_tc)s, %(open_seq)s)": ("authorize_txn_v1", "%(open_tc)s %(open_seq)s"),
    "SELECT * FROM txnq.append_delayed_v2(%(topic_id)s, 0, NULL, NULL, NULL, "
    f"{A1}, NULL, NULL, NULL, NULL, NULL, now())": ("authorize_v2", "%(topic_id)s produce"),
    "SELECT txnq.create_topic_v2('new', 1, -1, -1, NULL, 1024)": (
        "authorize_topic_name_v1",
        "new admin",
    ),
    "SELECT txnq.delete_topic_v2(%(topic_id)s, true)": ("authorize_v1", "%(topic_id)s admin"),
    "SELECT txnq.add_partitions_v2(%(topic_id)s, 3)": ("authorize_v1", "%(topic_id)s admin"),
    "SELECT * FROM txnq.register_producer_v2(%(topic_id)s, 'p3')": (
        "authorize_v1",
        "%(topic_id)s produce",
    ),
    "SELECT * FROM txnq.init_transactional_id_v2('tid')": (
        "authorize_txn_v1",
        "%(open_tc)s %(open_seq)s",
    ),
    "SELECT * FROM txnq.end_txn_v2(%(open_tc)s, %(open_seq)s, false)": (
        "authorize_txn_v1",
        "%(open_tc)s %(open_seq)s",
    ),
    "SELECT txnq.bind_txn_v2(%(open_tc)s, %(open_seq)s, 'tid', 0)": (
        "authorize_txn_v1",
        "%(open_tc)s %(open_seq)s",
    ),
    f"SELECT txnq.stage_send_v2(%(topic_id)s, 0, {A1})": ("authorize_v1", "%(topic_id)s produce"),
    "SELECT txnq.send_at_commit_v2('orders', 'x')": ("authorize_v1", "%(topic_id)s produce"),
    "SELECT txnq.dead_letter_v2(%(topic_id)s, 0, %(subscription_id)s, 0, 0, %(dlq_topic_id)s, "
    "'r')": ("authorize_v1", "%(topic_id)s consume"),
}


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_each_producing_function_asks_its_permission_hook_before_changing_anything(
    conn: psycopg.Connection[Any], world: dict[str, Any], hook: str
) -> None:
    install_hooks(conn, deny=hook)
    cases = {
        statement: ("TQ018", statement)
        for statement, (refusing_hook, _) in HOOKED_CALLS.items()
        if refusing_hook == hook
    }
    before = digest(conn)
    for statement in cases:
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(statement, world)
        assert raised.value.sqlstate == "TQ018", (statement, raised.value.diag.message_primary)
        expected = HOOKED_CALLS[statement][1] % world
        assert raised.value.diag.message_primary == f"{hook} denied {expected}", statement
        assert digest(conn) == before, f"{statement} changed the database"


def test_publishing_asks_the_permission_to_produce_again_at_commit(
    conn: psycopg.Connection[Any], world: dict[str, Any]
) -> None:
    with pytest.raises(psycopg.Error) as raised, conn.transaction():
        conn.execute(f"SELECT txnq.stage_send_v2(%s, 0, {A1})", (world["topic_id"],))
        install_hooks(conn, deny="authorize_v2")  # revoked before the commit
        conn.execute("SELECT * FROM txnq.publish_staged_v2()")
    assert raised.value.sqlstate == "TQ018"
    assert one(conn, "SELECT count(*) FROM txnq.staged_sends") == 0


def test_the_python_client_still_produces_through_the_checked_functions(dsn: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2, retention="1h", ttl="1d")
        assert client.admin.get_topic("orders").ttl_seconds == 86400
        with (
            client.subscribe(
                "orders", "billing", initial_position="earliest", poll_interval="100ms"
            ) as consumer,
            client.producer("orders") as producer,
        ):
            producer.send(
                b"a", key="k", properties={"p": "v"}, event_time=datetime.max.replace(tzinfo=UTC)
            )
            producer.send_async(b"b")
            producer.send_async(b"c")
            producer.flush()
            with client.new_transaction() as txn:
                producer.send(b"in txn", txn=txn)
            received = receive_messages(consumer, 4)
    assert sorted(m.value for m in received) == [b"a", b"b", b"c", b"in txn"]
    (keyed,) = [m for m in received if m.value == b"a"]
    assert (keyed.key, keyed.properties) == ("k", {"p": "v"})
