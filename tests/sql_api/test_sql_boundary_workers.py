"""The SQL boundary of the workers' functions (issue 17): the marker phase,
the scheduler's lifecycle (timeouts, TTL, retention, backlog quota), ledger
and entry-log rollover, entry-log usage and compaction. The coordinator and
the scheduler call them, and so may anyone with their role: each bad argument
gets a documented TQ code, changes nothing, and valid calls work as before.
The v1 names are wrappers of the v2 bodies and answer the same."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

import txnq
from tests.fuzz_support import fingerprint


@dataclass
class World:
    conn: psycopg.Connection[Any]
    topic: int
    subscription: int
    open_txn: tuple[int, int]
    committing_txn: tuple[int, int]


def one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0] if len(row) == 1 else tuple(row)


def append(
    conn: psycopg.Connection[Any], topic: int, payload: bytes, txn: Any = (None, None)
) -> int:
    return int(
        one(
            conn,
            "SELECT entry_offset FROM txnq.append_v3(%s, 0, NULL, NULL, NULL, ARRAY[%s]::bytea[],"
            " NULL, NULL, NULL, %s, %s)",
            (topic, payload, *txn),
        )
    )


@pytest.fixture
def world(dsn: str) -> Iterator[World]:
    """A topic with a subscription and messages; an open transaction that
    produced and acknowledged; a decided one whose marker phase has not run."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        topic = int(one(conn, "SELECT txnq.create_topic_v1('w', 1, -1, -1, NULL, 1048576)"))
        subscription = int(
            one(
                conn,
                "SELECT txnq.subscribe_v1(%s, 's', 'exclusive', 'read_committed', 'earliest')",
                (topic,),
            )
        )
        for payload in (b"m0", b"m1"):
            append(conn, topic, payload)
        open_txn = one(conn, "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 600)")
        append(conn, topic, b"o", open_txn)
        committing = one(conn, "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(1, 600)")
        append(conn, topic, b"c", committing)
        conn.execute(
            "SELECT txnq.ack_v2(%s, 0, %s, 0, '{}', '{}', '{}', NULL, NULL, %s, %s)",
            (topic, subscription, *committing),
        )
        conn.execute("SELECT * FROM txnq.end_txn_v1(%s, %s, true)", committing)
        yield World(conn, topic, subscription, open_txn, committing)


def assert_rejected(
    conn: psycopg.Connection[Any], code: str, query: str, params: Any = None
) -> str:
    """The call fails with ``code`` and changes nothing; returns its message."""
    before = fingerprint(conn)
    with pytest.raises(psycopg.Error) as raised:
        conn.execute(query, params)
    assert raised.value.sqlstate == code, (query, params, raised.value)
    assert fingerprint(conn) == before, (query, params)
    diag = raised.value.diag
    return f"{diag.message_primary} (hint: {diag.message_hint})"


# -- marker phase -------------------------------------------------------------------


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_marker_phase_rejects_null_ids_unknown_and_undecided_transactions(
    world: World, version: str
) -> None:
    conn, topic, sub = world.conn, world.topic, world.subscription
    decided, still_open = world.committing_txn, world.open_txn
    calls = {
        f"complete_txn_{version}": ("SELECT txnq.complete_txn_{}(%s, %s)", ()),
        f"finish_txn_{version}": ("SELECT txnq.finish_txn_{}(%s, %s)", ()),
        f"complete_txn_partition_{version}": (
            "SELECT txnq.complete_txn_partition_{}(%s, %s, %s, %s)",
            (topic, 0),
        ),
        f"complete_txn_subscription_{version}": (
            "SELECT txnq.complete_txn_subscription_{}(%s, %s, %s, %s, %s)",
            (topic, 0, sub),
        ),
    }
    for template, rest in calls.values():
        query = template.format(version)
        assert "NULL" in assert_rejected(conn, "TQ005", query, (None, decided[1], *rest))
        assert "NULL" in assert_rejected(conn, "TQ005", query, (decided[0], None, *rest))
        assert "does not exist" in assert_rejected(
            conn, "TQ014", query, (decided[0], 999_999, *rest)
        )
        assert "end_txn_v1" in assert_rejected(conn, "TQ005", query, (*still_open, *rest))
        if rest:
            assert "NULL" in assert_rejected(conn, "TQ005", query, (*decided, *[None] * len(rest)))
    # A partition, or a subscription, the decided transaction never touched.
    other = int(one(conn, "SELECT txnq.create_topic_v1('other', 1, -1, -1, NULL, 1024)"))
    assert_rejected(
        conn,
        "TQ014",
        f"SELECT txnq.complete_txn_partition_{version}(%s, %s, %s, 0)",
        (*decided, other),
    )
    assert_rejected(
        conn,
        "TQ014",
        f"SELECT txnq.complete_txn_subscription_{version}(%s, %s, %s, 0, %s)",
        (*decided, topic, sub + 1000),
    )


def test_the_worker_steps_still_complete_a_decided_transaction(world: World) -> None:
    conn, decided = world.conn, world.committing_txn
    marker = one(
        conn,
        "SELECT txnq.complete_txn_partition_v2(%s, %s, %s, 0)",
        (*decided, world.topic),
    )
    assert marker == 4  # m0, m1, the open transaction's o, the decided one's c, then its marker
    # Idempotent: the marker is written once.
    assert (
        one(conn, "SELECT txnq.complete_txn_partition_v2(%s, %s, %s, 0)", (*decided, world.topic))
        == 4
    )
    conn.execute(
        "SELECT txnq.complete_txn_subscription_v2(%s, %s, %s, 0, %s)",
        (*decided, world.topic, world.subscription),
    )
    assert one(conn, "SELECT txnq.finish_txn_v2(%s, %s)", decided) == "COMMITTED"
    assert one(conn, "SELECT txnq.complete_txn_v2(%s, %s)", decided) == "COMMITTED"
    # The transaction's acknowledgement of offset 0 was applied.
    assert (
        one(
            conn,
            "SELECT mark_delete_offset FROM txnq.cursors WHERE subscription_id = %s",
            (world.subscription,),
        )
        == 0
    )


def test_complete_txn_runs_the_whole_marker_phase(world: World) -> None:
    conn = world.conn
    conn.execute("SELECT * FROM txnq.end_txn_v1(%s, %s, false)", world.open_txn)
    assert one(conn, "SELECT txnq.complete_txn_v2(%s, %s)", world.open_txn) == "ABORTED"
    assert one(conn, "SELECT txnq.complete_txn_v1(%s, %s)", world.committing_txn) == "COMMITTED"


# -- timeouts -----------------------------------------------------------------------


@pytest.mark.parametrize("count", [None, 0, -1, -(2**31)])
def test_abort_timed_out_rejects_a_count_below_one(world: World, count: int | None) -> None:
    world.conn.execute(
        "UPDATE txnq.transactions SET timeout_at = now() - interval '1s'"
        " WHERE (tc_id, txn_seq) = (%s, %s)",
        world.open_txn,
    )
    for version in ("v1", "v2"):
        message = assert_rejected(
            world.conn, "TQ005", f"SELECT * FROM txnq.abort_timed_out_{version}(%s)", (count,)
        )
        assert "at least 1" in message


def test_abort_timed_out_aborts_at_most_the_count(world: World) -> None:
    conn = world.conn
    late = one(conn, "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(2, 600)")
    conn.execute(
        "UPDATE txnq.transactions SET timeout_at = now() - interval '1s'"
        " WHERE (tc_id, txn_seq) IN ((%s, %s), (%s, %s))",
        (*world.open_txn, *late),
    )
    assert len(conn.execute("SELECT * FROM txnq.abort_timed_out_v2(1)").fetchall()) == 1
    assert len(conn.execute("SELECT * FROM txnq.abort_timed_out_v1()").fetchall()) == 1
    assert conn.execute("SELECT * FROM txnq.abort_timed_out_v2(2147483647)").fetchall() == []


# -- lifecycle ----------------------------------------------------------------------

LIFECYCLE = ["expire_ttl", "apply_retention", "check_backlog_quota"]


@pytest.mark.parametrize("function", LIFECYCLE)
def test_lifecycle_functions_reject_unknown_topics(world: World, function: str) -> None:
    gone = int(one(world.conn, "SELECT txnq.create_topic_v1('gone', 1, -1, -1, NULL, 1024)"))
    world.conn.execute("SELECT txnq.delete_topic_v1(%s, true)", (gone,))
    for version in ("v1", "v2"):
        for topic in (None, gone, -1, 2**31 - 1):
            message = assert_rejected(
                world.conn, "TQ001", f"SELECT * FROM txnq.{function}_{version}(%s)", (topic,)
            )
            assert "does not exist" in message


@pytest.mark.parametrize("seconds", [1e300, float("inf"), float("nan"), 1e11])
def test_policies_longer_than_the_calendar_expire_evict_and_delete_nothing(
    world: World, seconds: float
) -> None:
    """Topic policies stored before revision 0015 checked them (or written by
    hand) may be NaN or longer than any timestamp reaches: the lifecycle
    functions then find nothing old enough, instead of overflowing."""
    conn, topic = world.conn, world.topic
    # A closed ledger that is consumed, and a backlog after it.
    head = settle(world)
    conn.execute("SELECT txnq.ack_v2(%s, 0, %s, %s)", (topic, world.subscription, head - 1))
    conn.execute("SELECT txnq.roll_ledger_v2(%s, 0, %s)", (topic, head - 1))
    for payload in (b"m6", b"m7"):
        append(conn, topic, payload)
    conn.execute(
        "UPDATE txnq.entries SET publish_time = publish_time - interval '1 hour'"
        " WHERE topic_id = %s",
        (topic,),
    )
    conn.execute(
        "UPDATE txnq.topics SET ttl_seconds = %s, retention_seconds = %s,"
        " backlog_quota_seconds = %s, backlog_quota_policy = 'consumer_backlog_eviction'"
        " WHERE topic_id = %s",
        (seconds, seconds, seconds, topic),
    )
    before = fingerprint(conn)
    for function in LIFECYCLE:
        assert conn.execute(f"SELECT * FROM txnq.{function}_v2(%s)", (topic,)).fetchall() == []
    assert fingerprint(conn) == before


def settle(world: World) -> int:
    """End both transactions of the world; the partition's head after their markers."""
    conn = world.conn
    conn.execute("SELECT * FROM txnq.end_txn_v1(%s, %s, false)", world.open_txn)
    conn.execute("SELECT txnq.complete_txn_v2(%s, %s)", world.open_txn)
    conn.execute("SELECT txnq.complete_txn_v2(%s, %s)", world.committing_txn)
    return int(
        one(conn, "SELECT next_offset FROM txnq.partitions WHERE topic_id = %s", (world.topic,))
    )


def test_lifecycle_functions_still_expire_and_delete(world: World) -> None:
    conn, topic = world.conn, world.topic
    # TTL acknowledges everything (published an hour ago); then the partition's
    # closed ledger is consumed, and retention 0/0 deletes it.
    head = settle(world)
    conn.execute("SELECT txnq.roll_ledger_v2(%s, 0, %s)", (topic, head - 1))
    conn.execute(
        "UPDATE txnq.entries SET publish_time = publish_time - interval '1 hour'"
        " WHERE topic_id = %s",
        (topic,),
    )
    conn.execute(
        "UPDATE txnq.topics SET ttl_seconds = 60, retention_seconds = 0, retention_bytes = 0"
        " WHERE topic_id = %s",
        (topic,),
    )
    expired = conn.execute("SELECT * FROM txnq.expire_ttl_v2(%s)", (topic,)).fetchall()
    assert [(row[1], row[3]) for row in expired] == [(world.subscription, head - 1)]
    deleted = conn.execute("SELECT * FROM txnq.apply_retention_v2(%s)", (topic,)).fetchall()
    assert [(row[2], row[3]) for row in deleted] == [(0, head - 1)]


# -- ledgers and entry logs ---------------------------------------------------------


def test_roll_ledger_closes_the_open_ledger_at_the_partition_head_only(world: World) -> None:
    conn, topic = world.conn, world.topic
    head = one(conn, "SELECT next_offset FROM txnq.partitions WHERE topic_id = %s", (topic,))
    for version in ("v1", "v2"):
        query = f"SELECT txnq.roll_ledger_{version}(%s, %s, %s)"
        for partition_args in [(None, 0), (topic, None), (topic, 1), (-1, 0)]:
            assert_rejected(conn, "TQ001", query, (*partition_args, head - 1))
        for last in [None, head, head - 2, -1, 2**63 - 1, -(2**63)]:
            message = assert_rejected(conn, "TQ005", query, (topic, 0, last))
            assert f"pass {head - 1}" in message
    assert one(conn, "SELECT txnq.roll_ledger_v2(%s, 0, %s)", (topic, head - 1)) == 1
    # The new ledger is empty: nothing to close until an append fills it.
    message = assert_rejected(
        conn, "TQ005", "SELECT txnq.roll_ledger_v2(%s, 0, %s)", (topic, head - 1)
    )
    assert "empty" in message
    ledgers = conn.execute(
        "SELECT ledger_id, first_offset, last_offset, state FROM txnq.ledgers"
        " WHERE topic_id = %s ORDER BY ledger_id",
        (topic,),
    ).fetchall()
    assert ledgers == [(0, 0, head - 1, "CLOSED"), (1, head, None, "OPEN")]


def test_roll_entry_log_rejects_a_null_force(world: World) -> None:
    for version in ("v1", "v2"):
        assert_rejected(world.conn, "TQ005", f"SELECT txnq.roll_entry_log_{version}(NULL)")
    assert one(world.conn, "SELECT txnq.roll_entry_log_v2(false)") == 1
    assert one(world.conn, "SELECT txnq.roll_entry_log_v2(true)") == 2
    assert one(world.conn, "SELECT txnq.roll_entry_log_v1(true)") == 3


def dropped_log(conn: psycopg.Connection[Any]) -> int:
    """Roll the active (empty) entry log over and drop it as GC does."""
    dropped = int(one(conn, "SELECT active_entry_log_id FROM txnq.config"))
    conn.execute("SELECT txnq.roll_entry_log_v2(true)")
    table = one(conn, "SELECT table_name FROM txnq.entry_logs WHERE entry_log_id = %s", (dropped,))
    conn.execute(f"ALTER TABLE txnq.entries DETACH PARTITION txnq.{table}")
    conn.execute(f"DROP TABLE txnq.{table}")
    conn.execute("UPDATE txnq.entry_logs SET state = 'DROPPED' WHERE entry_log_id = %s", (dropped,))
    return dropped


def test_entry_log_usage_names_unknown_and_dropped_logs(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        dropped = dropped_log(conn)
        for version in ("v1", "v2"):
            query = f"SELECT * FROM txnq.entry_log_usage_{version}(%s)"
            for log in (None, 99, -1):
                assert "does not exist" in assert_rejected(conn, "TQ005", query, (log,))
            assert "was dropped" in assert_rejected(conn, "TQ005", query, (dropped,))
            inspect = f"SELECT * FROM txnq.entry_log_usage_inspect_{version}(%s)"
            for log in (None, 99, -1):
                assert_rejected(conn, "TQ005", inspect, (log,))
            assert conn.execute(inspect, (dropped,)).fetchall() == [(None, None, None, None)]
            assert conn.execute(query, (dropped + 1,)).fetchall() == [(0, 0, 0, 0)]
        # The inspection view goes through the wrapper and still shows every log.
        assert conn.execute(
            "SELECT entry_log_id, entries FROM txnq.entry_log_status ORDER BY 1"
        ).fetchall() == [(dropped, None), (dropped + 1, 0)]


# -- compaction ---------------------------------------------------------------------


@pytest.fixture
def compaction(world: World) -> Iterator[tuple[World, int, int]]:
    """The world's entry log sealed, and a compaction of it begun."""
    conn = world.conn
    source = int(one(conn, "SELECT active_entry_log_id FROM txnq.config"))
    conn.execute("SELECT txnq.roll_entry_log_v2(true)")
    target = int(one(conn, "SELECT txnq.compaction_begin_v2(%s)", (source,)))
    yield world, source, target


def test_compaction_begin_names_what_it_cannot_compact(compaction: tuple[World, int, int]) -> None:
    world, source, target = compaction
    for version in ("v1", "v2"):
        for log in (None, target, source + 1, 99):
            message = assert_rejected(
                world.conn, "TQ005", f"SELECT txnq.compaction_begin_{version}(%s)", (log,)
            )
            assert "only a sealed entry log is compacted" in message
        # The one in progress is resumed.
        assert one(world.conn, f"SELECT txnq.compaction_begin_{version}(%s)", (source,)) == target


@pytest.mark.parametrize(
    "args",
    [
        (None, 0, 0, 10, 100),
        (-1, None, -1, 10, 100),
        (-1, -1, None, 10, 100),
        (-1, -1, -1, None, 100),
        (-1, -1, -1, 0, 100),
        (-1, -1, -1, -1, 100),
        (-1, -1, -1, 10, None),
        (-1, -1, -1, 10, 0),
        (-1, -1, -1, 10, -(2**63)),
    ],
)
def test_compaction_copy_rejects_null_keys_and_empty_budgets(
    compaction: tuple[World, int, int], args: tuple[Any, ...]
) -> None:
    world, _source, target = compaction
    for version in ("v1", "v2"):
        assert_rejected(
            world.conn,
            "TQ005",
            f"SELECT * FROM txnq.compaction_copy_{version}(%s, %s, %s, %s, %s, %s)",
            (target, *args),
        )


def test_compaction_copy_resumes_after_its_last_key_only(
    compaction: tuple[World, int, int],
) -> None:
    world, _source, target = compaction
    conn = world.conn
    copy = (
        "SELECT rows, last_topic, last_partition, last_offset"
        " FROM txnq.compaction_copy_v2(%s, %s, %s, %s, 2, 1048576)"
    )
    assert one(conn, copy, (target, -1, -1, -1)) == (2, world.topic, 0, 1)
    message = assert_rejected(conn, "TQ005", copy, (target, world.topic, 0, 0))
    assert "compaction_last_key_v2" in message
    assert_rejected(conn, "TQ005", copy, (target, -1, -1, -1))
    for not_a_compaction in (None, 99, target - 1):
        assert_rejected(conn, "TQ005", copy, (not_a_compaction, -1, -1, -1))
    assert one(conn, copy, (target, world.topic, 0, 1)) == (2, world.topic, 0, 3)
    assert one(conn, copy, (target, world.topic, 0, 3))[0] == 0


def test_compaction_last_key_names_what_is_not_a_compaction(
    compaction: tuple[World, int, int],
) -> None:
    world, source, target = compaction
    for version in ("v1", "v2"):
        for function in ("compaction_last_key", "compaction_tables", "compaction_catch_up"):
            for log in (None, source, 99):
                message = assert_rejected(
                    world.conn, "TQ005", f"SELECT * FROM txnq.{function}_{version}(%s)", (log,)
                )
                assert "not a compaction in progress" in message
        assert (
            world.conn.execute(
                f"SELECT * FROM txnq.compaction_last_key_{version}(%s)", (target,)
            ).fetchall()
            == []
        )


def test_compaction_swap_takes_only_the_count_its_catch_up_recorded(
    compaction: tuple[World, int, int],
) -> None:
    world, _source, target = compaction
    conn = world.conn
    swap = "SELECT txnq.compaction_swap_v2(%s, %s, %s)"
    # Nothing copied yet: a swap now would drop every live row with the source.
    message = assert_rejected(conn, "TQ005", swap, (target, 4, "2s"))
    assert "compaction_catch_up_v2" in message
    copied, source_rows = one(conn, "SELECT * FROM txnq.compaction_catch_up_v2(%s)", (target,))
    assert (copied, source_rows) == (4, 4)
    for count in (None, 0, 3, 5, -1):
        assert_rejected(conn, "TQ005", swap, (target, count, "2s"))
        assert_rejected(conn, "TQ005", "SELECT txnq.compaction_swap_v1(%s, %s)", (target, count))
    for timeout in (None, "", "abc", "0", "-1s", "61s", "1h", "2147483647", "1e400s", "nan"):
        message = assert_rejected(conn, "TQ005", swap, (target, 4, timeout))
        assert "from 1ms to 60s" in message
    assert one(conn, swap, (target, 4, "100ms")) == 0
    assert conn.execute(
        "SELECT entry_offset FROM txnq.entries WHERE topic_id = %s ORDER BY 1", (world.topic,)
    ).fetchall() == [(0,), (1,), (2,), (3,)]


def test_a_row_that_reaches_the_source_after_the_catch_up_is_copied_by_the_swap(
    compaction: tuple[World, int, int],
) -> None:
    world, source, target = compaction
    conn = world.conn
    _copied, counted = one(conn, "SELECT * FROM txnq.compaction_catch_up_v1(%s)", (target,))
    # An append that read the old active log just before the roll lands late.
    table = one(conn, "SELECT table_name FROM txnq.entry_logs WHERE entry_log_id = %s", (source,))
    conn.execute(
        f"INSERT INTO txnq.{table} SELECT topic_id, partition, 99, entry_log_id, ledger_id,"
        " publish_time, producer_id, first_sequence, message_count, payload_bytes, payloads,"
        f" keys, properties, event_times, txn_tc, txn_seq, marker FROM txnq.{table}"
        " WHERE entry_offset = 0"
    )
    assert one(conn, "SELECT txnq.compaction_swap_v1(%s, %s)", (target, counted)) == 1
    assert one(conn, "SELECT count(*) FROM txnq.entries WHERE topic_id = %s", (world.topic,)) == 5


def test_compaction_abandon_names_unknown_logs_and_leaves_others_alone(
    compaction: tuple[World, int, int],
) -> None:
    world, source, target = compaction
    conn = world.conn
    for version in ("v1", "v2"):
        for log in (None, 99):
            assert_rejected(conn, "TQ005", f"SELECT txnq.compaction_abandon_{version}(%s)", (log,))
    before = fingerprint(conn)
    conn.execute("SELECT txnq.compaction_abandon_v2(%s)", (source,))  # sealed: not a compaction
    assert fingerprint(conn) == before
    conn.execute("SELECT txnq.compaction_abandon_v2(%s)", (target,))
    conn.execute("SELECT txnq.compaction_abandon_v1(%s)", (target,))  # idempotent
    assert (
        one(conn, "SELECT state FROM txnq.entry_logs WHERE entry_log_id = %s", (target,))
        == "DROPPED"
    )


# -- the coordinator's work queue ---------------------------------------------------


def test_the_coordinator_work_queue_refuses_bad_arguments_and_records_each_owner_once(
    world: World,
) -> None:
    """Found by the SQL fuzzer: a negative limit or a grace period beyond
    the calendar failed with raw SQLSTATEs, a NULL limit claimed every
    decided transaction, and a repeated, NULL or unknown coordinator id
    failed raw or recorded a coordinator that does not exist."""
    conn = world.conn
    decided = "SELECT * FROM txnq.coordinator_decided_v1(%s, %s, %s)"
    for tc_ids, grace, limit in [
        (None, 0, 10),
        ([0, 1], float("nan"), 10),
        ([0, 1], float("-inf"), 10),
        ([0, 1], 1e300, 10),
        ([0, 1], -1, 10),
        ([0, 1], 0, -1),
        ([0, 1], 0, None),
    ]:
        assert_rejected(conn, "TQ005", decided, (tc_ids, grace, limit))
    rows = conn.execute(decided, ([0, 1], 0, 10)).fetchall()
    assert [(tc, seq) for tc, seq, _ in rows] == [world.committing_txn]
    record = "SELECT txnq.coordinator_record_owner_v1(%s, %s::int[])"
    for owner, tc_ids in [
        (None, [0]),
        ("", [0]),
        ("w\n1", [0]),
        ("w" * 201, [0]),
        ("w1", None),
        ("w1", []),
        ("w1", [None]),
        ("w1", [-1]),
        ("w1", [16]),
        ("w1", [[0, 1], [2, 3]]),
    ]:
        assert_rejected(conn, "TQ005", record, (owner, tc_ids))
    conn.execute(record, ("w1", [2, 2, 3]))
    assert conn.execute(
        "SELECT tc_id, owner FROM txnq.coordinators WHERE tc_id IN (2, 3) ORDER BY tc_id"
    ).fetchall() == [(2, "w1"), (3, "w1")]


# -- the scheduler's jobs -----------------------------------------------------------


@pytest.mark.parametrize(
    ("job", "listing", "policy"),
    [
        ("ttl", "ttl_topics", "ttl_seconds = 3600"),
        ("retention", "retention_topics", "retention_seconds = 3600"),
        ("backlog_quota", "backlog_quota_topics", "backlog_quota_bytes = 1000"),
    ],
)
def test_lifecycle_jobs_skip_a_topic_deleted_after_they_listed_it(
    dsn: str, job: str, listing: str, policy: str
) -> None:
    """The lifecycle functions now refuse an unknown topic (TQ001); the jobs
    list the topics first, so a topic deleted in between is skipped, and the
    others are still done."""
    from txnq import lifecycle
    from txnq.lifecycle.backlog_quota import check_backlog_quotas

    run = {
        "ttl": lifecycle.expire_ttl,
        "retention": lifecycle.apply_retention,
        "backlog_quota": check_backlog_quotas,
    }[job]
    with txnq.Client(dsn) as client, psycopg.connect(dsn, autocommit=True) as conn:
        for name in ("doomed", "kept"):
            topic = one(conn, "SELECT txnq.create_topic_v1(%s, 1, -1, -1, NULL, 4096)", (name,))
            conn.execute(f"UPDATE txnq.topics SET {policy} WHERE topic_id = %s", (topic,))
            conn.execute(
                "SELECT txnq.subscribe_v1(%s, 's', 'exclusive', 'read_committed', 'earliest')",
                (topic,),
            )
            append(conn, topic, b"x" * 2000)
        listed = client.query

        def query_then_delete(name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
            rows = listed(name, params)
            if name == listing:
                assert [row["name"] for row in rows] == ["doomed", "kept"]
                conn.execute(
                    "SELECT txnq.delete_topic_v1(topic_id, true) FROM txnq.topics"
                    " WHERE name = 'doomed'"
                )
            return rows

        client.query = query_then_delete  # type: ignore[method-assign]
        report = run(client)
    if job == "backlog_quota":  # the kept topic is still checked: over its quota
        assert [breach.topic for breach in report.items] == ["kept"]
    else:
        assert report.items == []


@pytest.mark.parametrize(
    "options",
    [
        {"time_budget_seconds": float("nan")},
        {"time_budget_seconds": float("inf")},
        {"time_budget_seconds": -1},
        {"max_bytes_per_second": float("inf")},
        {"max_bytes_per_second": float("nan")},
        {"grace_seconds": float("nan")},
        {"grace_seconds": 1e300},
        {"grace_seconds": -0.5},
    ],
)
def test_gc_refuses_budgets_that_are_not_finite_numbers(
    dsn: str, options: dict[str, float]
) -> None:
    from txnq import errors, lifecycle

    with txnq.Client(dsn) as client, psycopg.connect(dsn, autocommit=True) as conn:
        before = fingerprint(conn)
        with pytest.raises(errors.InvalidArgumentError):
            lifecycle.collect_entry_logs(client, **options)  # type: ignore[arg-type]
        with pytest.raises(errors.InvalidArgumentError):
            lifecycle.doctor(client, inactive_seconds=options.popitem()[1])
        assert fingerprint(conn) == before
