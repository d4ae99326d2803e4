"""The SQL boundary of the functions that the client's direct table reads and
writes moved behind in revision 0015 (group permissions): topic policies,
transaction listings, Spark's ingestions and the two-phase-commit sink. Each
bad argument the SQL fuzzer (tests/sql_api/test_fuzz_sql_api.py) found accepted or
answered with a raw SQLSTATE gets a documented TQ code and changes nothing;
valid calls work as before."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from tests.fuzz_support import fingerprint

#: 100 years (create_topic_v2's bound on every duration).
MAX_SECONDS = 3155760000


@dataclass
class World:
    conn: psycopg.Connection[Any]
    topic: int
    open_txn: tuple[int, int]
    committed_txn: tuple[int, int]


def one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0] if len(row) == 1 else tuple(row)


def append(
    conn: psycopg.Connection[Any], topic: int, partition: int, txn: Any = (None, None)
) -> None:
    conn.execute(
        "SELECT txnq.append_v3(%s, %s, NULL, NULL, NULL, ARRAY['m']::bytea[], NULL, NULL, NULL,"
        " %s, %s)",
        (topic, partition, *txn),
    )


@pytest.fixture
def world(dsn: str) -> Iterator[World]:
    """A topic of two partitions: partition 0 has offsets 0..2 readable,
    partition 1 offset 0 readable and offset 1 in an open transaction; a
    committed transaction."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        topic = int(one(conn, "SELECT txnq.create_topic_v1('w', 2, -1, -1, NULL, 1048576)"))
        for _ in range(3):
            append(conn, topic, 0)
        append(conn, topic, 1)
        open_txn = one(conn, "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 600)")
        append(conn, topic, 1, open_txn)
        committed = one(conn, "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(1, 600)")
        conn.execute("SELECT * FROM txnq.end_txn_v1(%s, %s, true)", committed)
        conn.execute("SELECT txnq.complete_txn_v1(%s, %s)", committed)
        yield World(conn, topic, open_txn, committed)


def assert_rejected(
    conn: psycopg.Connection[Any], code: str, query: str, params: Any = None
) -> str:
    """The call fails with ``code`` and changes nothing; returns its message."""
    before = fingerprint(conn)
    with pytest.raises(psycopg.Error) as raised:
        conn.execute(query, params).fetchall()
    assert raised.value.sqlstate == code, (query, params, raised.value)
    assert fingerprint(conn) == before, (query, params)
    return str(raised.value.diag.message_primary)


def test_an_ingestion_plan_never_records_what_no_reader_could_read(world: World) -> None:
    """A plan is the position a run's commit records as delivered: past the
    max read offset it skips messages not readable yet (or never appended),
    below the committed position it delivers messages twice."""
    conn, topic = world.conn, world.topic
    assert "does not exist" in assert_rejected(
        conn, "TQ001", "SELECT txnq.spark_ingestion_create_v1('i', 999)"
    )
    conn.execute("SELECT txnq.spark_ingestion_create_v1('i', %s)", (topic,))
    plan = "SELECT * FROM txnq.spark_ingestion_plan_v1('i', %s::bigint[])"
    for offsets in [None, [], [None, 0], [[0, 0], [0, 0]], [3, 0], [2, 1], [-2, 0], [0, 0, 0]]:
        assert_rejected(conn, "TQ005", plan, (offsets,))
    assert one(conn, plan, ([1, 0],)) == 1
    assert one(conn, "SELECT * FROM txnq.spark_ingestion_commit_v1('i', 1)") == 1
    # Below the committed position, or covering fewer partitions than it.
    for offsets in [[0, 0], [1, -1], [1]]:
        assert "committed" in assert_rejected(conn, "TQ005", plan, (offsets,))
    assert one(conn, plan, ([2, 0],)) == 2  # the whole readable range
    assert conn.execute(plan, ([2, 0],)).fetchall() == []  # a plan is pending: none


def test_a_sink_records_an_open_transaction_once_and_prepares_it_for_a_checkpoint(
    world: World,
) -> None:
    conn = world.conn
    begin = "SELECT txnq.sink_begin_v1(%s, %s, %s)"
    assert_rejected(conn, "TQ005", begin, ("s", None, world.open_txn[1]))
    assert_rejected(conn, "TQ005", begin, ("s", world.open_txn[0], None))
    assert_rejected(conn, "TQ014", begin, ("s", 0, 999_999))
    assert_rejected(conn, "TQ013", begin, ("s", *world.committed_txn))
    conn.execute(begin, ("s", *world.open_txn))
    assert "recorded for sink 's' already" in assert_rejected(
        conn, "TQ005", begin, ("s", *world.open_txn)
    )
    assert_rejected(conn, "TQ005", begin, ("other", *world.open_txn))
    prepare = "SELECT * FROM txnq.sink_prepare_v1('s', %s, %s, %s)"
    assert "NULL" in assert_rejected(conn, "TQ005", prepare, (*world.open_txn, None))
    assert one(conn, prepare, (*world.open_txn, 7)) == "PREPARED"
    assert conn.execute(
        "SELECT state, checkpoint_id FROM txnq.sink_pending_v1('s')"
    ).fetchall() == [("PREPARED", 7)]


@pytest.mark.parametrize(
    ("call", "arguments"),
    [
        ("set_topic_policy_v1(%s, %s, NULL, NULL, false)", [MAX_SECONDS + 1, 1e300]),
        ("set_topic_policy_v1(%s, NULL, NULL, %s, false)", [MAX_SECONDS + 1, 1e300]),
        (
            "set_backlog_quota_v1(%s, false, NULL, true, %s, false, NULL)",
            [MAX_SECONDS + 1, 1e300, float("inf")],
        ),
    ],
)
def test_topic_policies_are_durations_of_at_most_a_hundred_years(
    world: World, call: str, arguments: list[float]
) -> None:
    """create_topic_v2's bound: longer is "forever", which has its own value."""
    query = f"SELECT txnq.{call}"
    for value in arguments:
        assert_rejected(world.conn, "TQ005", query, (world.topic, value))
    world.conn.execute(query, (world.topic, MAX_SECONDS))


def test_transaction_listings_refuse_ages_and_limits_out_of_range(world: World) -> None:
    """Found by the SQL fuzzer: raw interval, timestamp and LIMIT errors."""
    conn = world.conn
    listing = "SELECT * FROM txnq.txn_list_v1(%s, %s, %s)"
    for state, older_than, limit in [
        ("open", 0, 10),
        ("bogus", 0, 10),
        (None, float("nan"), 10),
        (None, 1e300, 10),
        (None, -1e300, 10),
        (None, None, 10),
        (None, 0, -1),
        (None, 0, 0),
        (None, 0, None),
    ]:
        assert_rejected(conn, "TQ005", listing, (state, older_than, limit))
    assert [row[1:3] for row in conn.execute(listing, ("OPEN", 0, 10)).fetchall()] == [
        world.open_txn
    ]
    hanging = "SELECT * FROM txnq.txn_find_hanging_v1(%s)"
    for grace in [None, float("nan"), float("inf"), 1e300, -1]:
        assert_rejected(conn, "TQ005", hanging, (grace,))
    assert conn.execute(hanging, (0,)).fetchall() == []
