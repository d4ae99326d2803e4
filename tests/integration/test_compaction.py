"""Entry-log compaction and the dirty-data sweep.

Compaction moves the live rows of a sealed entry log whose live share is under
the threshold into a new entry log and drops the old PostgreSQL partition; the
live rows are identical before and after, and a reader running meanwhile sees
every message exactly once. The sweep finds orphan ledgers, entries without a
ledger and inactive subscriptions, and removes them only when asked.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql, sql_value, wait_until
from txnq import errors, lifecycle
from txnq.cli import app
from txnq.database.migrate import upgrade
from txnq.settings import load_settings

FAST = {"poll_interval": "200ms"}
PAYLOAD = 4096  # bytes per message: a few hundred make a MiB, the copy's chunk

#: The live rows of an entry log's topic, everything but the entry log they are in.
LIVE_ROWS = """
SELECT e.topic_id, e.partition, e.entry_offset, e.ledger_id, e.publish_time, e.producer_id,
       e.first_sequence, e.message_count, e.payload_bytes, e.payloads, e.keys, e.properties,
       e.event_times, e.txn_tc, e.txn_seq, e.marker
  FROM txnq.entries e
 WHERE NOT EXISTS (SELECT 1 FROM txnq.ledgers l
                    WHERE l.topic_id = e.topic_id AND l.partition = e.partition
                      AND l.ledger_id = e.ledger_id AND l.state = 'DELETED')
 ORDER BY e.topic_id, e.partition, e.entry_offset
"""


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    # Ledgers of ten entries, rolled at once: retention works in small steps.
    upgrade(dsn, settings=load_settings(ledger_max_entries=10, ledger_min_rollover_seconds=0))
    with txnq.Client(dsn) as client:
        yield client


def produce(client: txnq.Client, topic: str, count: int, start: int = 0) -> None:
    with client.producer(topic) as producer:
        for i in range(start, start + count):
            producer.send(f"{i:06d}".encode().ljust(PAYLOAD, b"."), partition=0)  # one entry each


def number(message: txnq.Message) -> int:
    return int(message.value[:6])


def log_with_live_share(dsn: str, client: txnq.Client, total: int, consumed: int) -> txnq.Consumer:
    """Entry log 1 holds ``total`` entries of topic ``orders``, of which the
    first ``consumed`` are acknowledged and their ledgers deleted; log 2 is the
    active one. Returns the subscription's consumer, positioned after
    ``consumed``."""
    client.admin.create_topic("orders")
    reader = client.subscribe("orders", "reader", initial_position="earliest", **FAST)
    produce(client, "orders", total)
    assert sql_value(dsn, "SELECT txnq.roll_entry_log_v1(true)") == 2
    received = receive_messages(reader, consumed)
    reader.acknowledge_cumulative(received[-1])
    deleted = lifecycle.apply_retention(client)
    assert sum(i.last_offset - i.first_offset + 1 for i in deleted.items) == consumed
    return reader


def table_exists(dsn: str, name: str) -> bool:
    return bool(sql_value(dsn, "SELECT count(*) FROM pg_class WHERE relname = %s", (name,)))


# -- compaction --------------------------------------------------------------------


def test_minor_keeps_and_major_compacts_a_log_at_20_percent_live(
    dsn: str, client: txnq.Client
) -> None:
    reader = log_with_live_share(dsn, client, total=50, consumed=40)
    live_before = sql(dsn, LIVE_ROWS)
    assert len(live_before) == 10

    minor = lifecycle.collect_entry_logs(client, grace_seconds=0, compaction="minor")
    assert [(i.entry_log_id, i.action) for i in minor.items] == [(1, "kept: 20% live")]
    dry = lifecycle.collect_entry_logs(client, grace_seconds=0, compaction="major", dry_run=True)
    assert [(i.entry_log_id, i.action, i.moved_entries) for i in dry.items] == [
        (1, "would compact", 10)
    ]
    assert table_exists(dsn, "entries_000001")

    major = lifecycle.collect_entry_logs(client, grace_seconds=0, compaction="major")

    [item] = major.items
    assert (item.entry_log_id, item.action, item.compacted_into) == (1, "compacted", 3)
    assert (item.moved_entries, item.moved_bytes) == (10, 10 * PAYLOAD)
    assert major.reclaimed_bytes > 0
    assert not table_exists(dsn, "entries_000001")
    assert sql(
        dsn, "SELECT entry_log_id, state, compacted_from FROM txnq.entry_logs ORDER BY 1"
    ) == [(1, "DROPPED", None), (2, "ACTIVE", None), (3, "SEALED", 1)]
    assert sql(dsn, LIVE_ROWS) == live_before  # the same rows, column for column
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries_000003") == 10
    # Readers go on: the subscription, and a new one from the earliest offset.
    assert [number(m) for m in receive_messages(reader, 10)] == list(range(40, 50))
    assert_nothing_more(reader)
    late = client.subscribe("orders", "late", initial_position="earliest", **FAST)
    assert [number(m) for m in receive_messages(late, 10)] == list(range(40, 50))
    history = client.query("gc_history", {"job": "gc", "limit": 1})[0]
    assert history["details"]["compacted"] == {"1": 3}
    assert history["details"]["compaction"] == "major"


def test_a_reader_during_compaction_sees_every_message_exactly_once(
    dsn: str, client: txnq.Client
) -> None:
    reader = log_with_live_share(dsn, client, total=400, consumed=200)
    live_before = sql(dsn, LIVE_ROWS)
    received: list[int] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def read() -> None:
        # Slowly, acknowledging as it goes, while the copy, the swap and new
        # appends happen: about 3 s for the 250 messages.
        try:
            deadline = time.monotonic() + 30
            while len(received) < 250 and time.monotonic() < deadline:
                message = reader.receive(timeout=1.0)
                if message is not None:
                    received.append(number(message))
                    reader.acknowledge(message)
                    time.sleep(0.012)
        except BaseException as exc:  # reported by the test below
            failure.append(exc)
        finally:
            done.set()

    thread = threading.Thread(target=read)
    thread.start()
    time.sleep(0.2)
    # 200 live entries of 4 KiB at 1 MiB/s: one 1 MiB chunk, then about 0.8 s
    # of throttle before the swap, with the reader mid-way.
    started = time.monotonic()
    report = lifecycle.collect_entry_logs(
        client, grace_seconds=0, compaction="major", max_bytes_per_second=1 << 20
    )
    took = time.monotonic() - started
    produce(client, "orders", 50, start=400)  # into the active log
    thread.join(timeout=40)
    assert done.is_set() and not failure, failure

    assert [(i.action, i.moved_entries) for i in report.items] == [("compacted", 200)]
    assert took >= 0.7, "the copy was not throttled"
    assert received == list(range(200, 450))  # each once, in order
    assert not table_exists(dsn, "entries_000001")
    moved = [row for row in sql(dsn, LIVE_ROWS) if row[2] < 400]
    # What was live before is still there, identical, minus what the reader's
    # acknowledgements let retention delete since (none: no retention run).
    assert moved == live_before


def test_a_compaction_out_of_time_resumes_where_it_stopped(dsn: str, client: txnq.Client) -> None:
    reader = log_with_live_share(dsn, client, total=500, consumed=150)
    live_before = sql(dsn, LIVE_ROWS)  # 350 entries, 70%, 1.4 MiB: two chunks at 1 MiB/s

    first = lifecycle.collect_entry_logs(
        client,
        grace_seconds=0,
        compaction="major",
        max_bytes_per_second=1 << 20,
        time_budget_seconds=0.3,
    )

    [item] = first.items
    assert item.action == "kept: time budget spent, compaction resumes next run"
    assert (item.compacted_into, item.moved_entries) == (3, 256)  # the first MiB
    assert sql(dsn, "SELECT state FROM txnq.entry_logs WHERE entry_log_id = 3") == [("COMPACTING",)]
    # The half-filled target is invisible: readers see each live row once.
    assert sql(dsn, LIVE_ROWS) == live_before
    assert table_exists(dsn, "entries_000001")

    second = lifecycle.collect_entry_logs(
        client, grace_seconds=0, compaction="major", max_bytes_per_second=0
    )

    [item] = second.items
    assert (item.action, item.compacted_into, item.moved_entries) == ("compacted", 3, 94)
    assert sql(dsn, LIVE_ROWS) == live_before
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries_000003") == 350
    assert [number(m) for m in receive_messages(reader, 350)] == list(range(150, 500))


def test_a_compaction_whose_source_was_dropped_is_abandoned(dsn: str, client: txnq.Client) -> None:
    reader = log_with_live_share(dsn, client, total=500, consumed=150)
    lifecycle.collect_entry_logs(
        client,
        grace_seconds=0,
        compaction="major",
        max_bytes_per_second=1 << 20,
        time_budget_seconds=0.3,
    )
    assert table_exists(dsn, "entries_000003")
    # Everything is consumed meanwhile: the source has nothing live and goes
    # whole; the unfinished target has nothing to finish and goes too.
    reader.acknowledge_cumulative(receive_messages(reader, 350)[-1])
    lifecycle.apply_retention(client)

    report = lifecycle.collect_entry_logs(client, grace_seconds=0, compaction="major")

    assert [(i.entry_log_id, i.action) for i in report.items] == [(1, "dropped")]
    assert lifecycle.collect_entry_logs(client, grace_seconds=0, compaction="major").items == []
    assert not table_exists(dsn, "entries_000003")
    assert sql(dsn, "SELECT entry_log_id, state FROM txnq.entry_logs ORDER BY 1") == [
        (1, "DROPPED"),
        (2, "ACTIVE"),
        (3, "DROPPED"),
    ]


def test_compaction_settings_and_arguments_are_validated(client: txnq.Client) -> None:
    with pytest.raises(errors.ConfigurationError, match="0 <= GC_MINOR_THRESHOLD"):
        load_settings(gc_minor_threshold=0.8, gc_major_threshold=0.8)
    with pytest.raises(errors.ConfigurationError, match="0 <= GC_MINOR_THRESHOLD"):
        load_settings(gc_major_threshold=1.5)
    with pytest.raises(errors.ConfigurationError, match="GC_MAX_BYTES_PER_SECOND"):
        load_settings(gc_max_bytes_per_second="-1")
    assert load_settings(gc_max_bytes_per_second="8MiB").gc_max_bytes_per_second == 8 << 20
    assert load_settings(gc_time_budget_seconds="10m").gc_time_budget_seconds == 600
    bad: list[dict[str, Any]] = [
        {"compaction": "full"},
        {"time_budget_seconds": -1},
        {"max_bytes_per_second": "fast"},
        {"grace_seconds": True},
    ]
    for arguments in bad:
        with pytest.raises(errors.InvalidArgumentError):
            lifecycle.collect_entry_logs(client, **arguments)


def test_gc_run_takes_minor_or_major_and_reports_json(dsn: str, client: txnq.Client) -> None:
    log_with_live_share(dsn, client, total=50, consumed=40)
    sql(dsn, "UPDATE txnq.entry_logs SET sealed_at = sealed_at - interval '1 hour'")
    runner = CliRunner()
    both = runner.invoke(app, ["gc", "run", "--minor", "--major", "--dsn", dsn])
    assert both.exit_code != 0 and "choose one of --minor and --major" in both.output

    minor = runner.invoke(app, ["gc", "run", "--dsn", dsn, "--json"])
    assert minor.exit_code == 0, minor.output
    gc = json.loads(minor.stdout)[-1]
    assert [(i["entry_log_id"], i["action"]) for i in gc["items"]] == [(1, "kept: 20% live")]

    major = runner.invoke(app, ["gc", "run", "--major", "--dsn", dsn])
    assert major.exit_code == 0, major.output
    assert "compacted" in major.stdout
    assert not table_exists(dsn, "entries_000001")


# -- the dirty-data sweep ---------------------------------------------------------


def test_doctor_reports_dirty_data_and_removes_it_only_when_asked(
    dsn: str, client: txnq.Client
) -> None:
    for name in ("gone", "clean", "idle"):
        client.admin.create_topic(name)
    produce(client, "gone", 12)  # ledgers 0 (closed) and 1 (open)
    produce(client, "clean", 3)
    client.subscribe("idle", "forgotten", initial_position="earliest", **FAST).close()
    client.subscribe("idle", "busy", initial_position="earliest", **FAST)  # stays connected
    # Dirt a crash or a hand edit leaves: a topic row deleted without its
    # ledgers, a ledger row lost, a subscription nobody used for a month.
    sql(dsn, "DELETE FROM txnq.topics WHERE name = 'gone'")
    clean_id = sql_value(dsn, "SELECT topic_id FROM txnq.topics WHERE name = 'clean'")
    sql(dsn, "DELETE FROM txnq.ledgers WHERE topic_id = %s AND ledger_id = 0", (clean_id,))
    sql(
        dsn,
        "UPDATE txnq.subscriptions SET created_at = now() - interval '30 days' "
        "WHERE name = 'forgotten'; "
        "UPDATE txnq.cursors c SET updated_at = now() - interval '30 days' "
        "FROM txnq.subscriptions s "
        "WHERE s.subscription_id = c.subscription_id AND s.name = 'forgotten'",
    )
    ledgers_before = sql(dsn, "SELECT * FROM txnq.ledgers ORDER BY 1, 2, 3")

    report = lifecycle.doctor(client)

    assert not report.clean
    assert [(i.ledger_id, i.state, i.reason, i.removed) for i in report.orphan_ledgers] == [
        (0, "CLOSED", "owner topic deleted", False),
        (1, "OPEN", "owner topic deleted", False),
    ]
    [unowned] = report.entries_without_ledger
    assert (unowned.topic_id, unowned.ledger_id, unowned.entries) == (clean_id, 0, 3)
    assert (unowned.first_offset, unowned.last_offset, unowned.entry_logs) == (0, 2, [1])
    assert [(i.topic, i.subscription, i.removed) for i in report.inactive_subscriptions] == [
        ("idle", "forgotten", False)
    ]
    assert sql(dsn, "SELECT * FROM txnq.ledgers ORDER BY 1, 2, 3") == ledgers_before  # a look only
    assert lifecycle.doctor(client, inactive_seconds=86400 * 60).inactive_subscriptions == []

    removed = lifecycle.doctor(client, remove=True)

    assert all(i.removed for i in removed.orphan_ledgers + removed.entries_without_ledger)
    assert [i.removed for i in removed.inactive_subscriptions] == [True]
    assert lifecycle.doctor(client).clean
    assert [s.name for s in client.admin.list_subscriptions("idle")] == ["busy"]
    assert sql(
        dsn,
        "SELECT state, metadata->>'created_by' FROM txnq.ledgers WHERE topic_id = %s "
        "AND ledger_id = 0",
        (clean_id,),
    ) == [("DELETED", "gc doctor")]
    run = client.query("gc_history", {"job": "doctor", "limit": 1})[0]
    assert run["items"] == 4
    assert run["details"]["unsubscribed"] == ["idle/forgotten"]
    # The dirt's entries are now dead: the entry log goes whole.
    sql(dsn, "SELECT txnq.roll_entry_log_v1(true)")
    gc = lifecycle.collect_entry_logs(client, grace_seconds=0)
    assert [(i.entry_log_id, i.action) for i in gc.items] == [(1, "dropped")]

    with pytest.raises(errors.InvalidArgumentError):
        lifecycle.doctor(client, inactive_seconds=0)


def test_gc_doctor_command_exits_1_on_dirt_and_cleans_with_remove(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("gone")
    produce(client, "gone", 1)
    sql(dsn, "DELETE FROM txnq.topics WHERE name = 'gone'")
    runner = CliRunner()

    look = runner.invoke(app, ["gc", "doctor", "--dsn", dsn, "--json"])
    assert look.exit_code == 1, look.output
    found = json.loads(look.stdout)
    assert (found["clean"], len(found["orphan_ledgers"])) == (False, 1)

    text = runner.invoke(app, ["gc", "doctor", "--dsn", dsn])
    assert text.exit_code == 1 and "owner topic deleted" in text.stdout
    assert "--remove" in text.output

    fix = runner.invoke(app, ["gc", "doctor", "--remove", "--dsn", dsn])
    assert fix.exit_code == 0, fix.output
    again = runner.invoke(app, ["gc", "doctor", "--dsn", dsn, "--inactive-after", "1h"])
    assert again.exit_code == 0 and "No dirty data found" in again.output
    bad = runner.invoke(app, ["gc", "doctor", "--dsn", dsn, "--inactive-after", "soon"])
    assert bad.exit_code != 0


def test_the_scheduler_runs_minor_major_and_doctor_jobs() -> None:
    from txnq.workers.scheduler_jobs import JOBS

    every = {job.name: job.interval(load_settings()) for job in JOBS}
    assert every["collect_entry_logs"] == 3600
    assert every["compact_entry_logs_major"] == 86400
    assert every["gc_doctor"] == 86400
    assert every["vacuum_hot_tables"] == 60


# -- vacuum of the hot tables ------------------------------------------------------


def test_vacuum_hot_tables_vacuums_only_tables_with_dead_tuples(
    dsn: str, client: txnq.Client
) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        # A waiter row is inserted and deleted per wait: the churn of a busy topic.
        conn.execute(
            "INSERT INTO txnq.consumer_waiters (topic_id, partition, consumer_id) "
            "SELECT 1, 0, g FROM generate_series(1, 300) g"
        )
        conn.execute("DELETE FROM txnq.consumer_waiters")
        conn.execute("SELECT pg_stat_force_next_flush()")

    def dead() -> int:
        return int(
            sql_value(
                dsn,
                "SELECT n_dead_tup FROM pg_stat_user_tables "
                "WHERE schemaname = 'txnq' AND relname = 'consumer_waiters'",
            )
        )

    wait_until(lambda: dead() >= 300, what="the statistics to count the dead tuples")
    assert lifecycle.vacuum_hot_tables(client, min_dead=10**9) == []

    done = lifecycle.vacuum_hot_tables(client, min_dead=100)

    assert [(v.table, v.dead_tuples) for v in done if v.table == "consumer_waiters"] == [
        ("consumer_waiters", 300)
    ]
    wait_until(lambda: dead() == 0, what="VACUUM to clear the dead tuples")
    with pytest.raises(errors.InvalidArgumentError):
        lifecycle.vacuum_hot_tables(client, min_dead=-1)


def test_a_swap_that_cannot_lock_the_entries_in_time_fails_with_tq020_and_changes_nothing(
    dsn: str,
) -> None:
    """compaction_swap_v2 waits at most its lock timeout for readers of
    txnq.entries, then answers TQ020 (GcBusyError in Python): the source log
    and the target stay as they were, and the next GC run resumes."""
    with txnq.Client(dsn) as client:
        client.admin.create_topic("busy", partitions=1)
        with client.producer("busy") as producer:
            producer.send(b"kept")
    with psycopg.connect(dsn, autocommit=True) as conn, psycopg.connect(dsn) as reader:
        conn.execute("SELECT txnq.roll_entry_log_v2(true)")
        source = sql_value(
            dsn, "SELECT min(entry_log_id) FROM txnq.entry_logs WHERE state <> 'DROPPED'"
        )
        target = conn.execute("SELECT txnq.compaction_begin_v2(%s)", [source]).fetchone()
        assert target is not None
        row = conn.execute(
            "SELECT copied, source_rows FROM txnq.compaction_catch_up_v2(%s)", [target[0]]
        ).fetchone()
        assert row is not None
        logs_before = sql(dsn, "SELECT entry_log_id, state FROM txnq.entry_logs ORDER BY 1")
        reader.execute("SELECT count(*) FROM txnq.entries")  # holds its lock until rollback
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("SELECT txnq.compaction_swap_v2(%s, %s, '50ms')", [target[0], row[1]])
        reader.rollback()
    assert raised.value.sqlstate == "TQ020"
    assert isinstance(txnq.database.connections.translate(raised.value), errors.GcBusyError)
    assert sql(dsn, "SELECT entry_log_id, state FROM txnq.entry_logs ORDER BY 1") == logs_before
    with (
        txnq.Client(dsn) as client,
        client.subscribe("busy", "s", initial_position="earliest") as consumer,
    ):
        assert [m.value for m in receive_messages(consumer, 1)] == [b"kept"]


def test_gc_run_rolls_an_active_log_over_its_size_as_the_scheduler_does(
    dsn: str, client: txnq.Client
) -> None:
    """`txnq gc run` (lifecycle.collect_entry_logs) seals an active entry log
    over ENTRY_LOG_MAX_BYTES, as the scheduler's roll job does; a dry run and
    a log under the limit are left alone."""
    client.admin.create_topic("orders")
    produce(client, "orders", 50)
    assert lifecycle.collect_entry_logs(client).rolled_to_entry_log is None  # 1 GiB allowed
    sql(dsn, "UPDATE txnq.config SET entry_log_max_bytes = 8192")
    assert lifecycle.collect_entry_logs(client, dry_run=True).rolled_to_entry_log is None
    assert sql_value(dsn, "SELECT active_entry_log_id FROM txnq.config") == 1

    result = CliRunner().invoke(app, ["gc", "run", "--dsn", dsn, "--json"])

    assert result.exit_code == 0, result.output
    gc_report = next(r for r in json.loads(result.stdout) if r["job"] == "gc")
    assert gc_report["rolled_to_entry_log"] == 2
    assert sql_value(dsn, "SELECT active_entry_log_id FROM txnq.config") == 2
    assert sql_value(dsn, "SELECT state FROM txnq.entry_logs WHERE entry_log_id = 1") == "SEALED"
    # The new log is empty: the next run does not roll again.
    assert lifecycle.collect_entry_logs(client).rolled_to_entry_log is None


def test_gc_merges_small_sealed_logs_into_one_and_every_live_message_stays_readable_once(
    dsn: str, client: txnq.Client
) -> None:
    """issue 20: with a slow subscription holding a little of each log,
    compaction alone kept one log per log; GC now merges the small sealed
    logs of a run into one (txnq.compaction_merge_v1), and readers see each
    live message once, in order."""
    client.admin.create_topic("orders")
    slow = client.subscribe("orders", "slow", initial_position="earliest", **FAST)
    for log in range(4):
        produce(client, "orders", 10, start=10 * log)
        assert sql_value(dsn, "SELECT txnq.roll_entry_log_v1(true)") == log + 2
    logs_before = sql_value(dsn, "SELECT count(*) FROM txnq.entry_logs WHERE state = 'SEALED'")
    assert logs_before == 4

    report = lifecycle.collect_entry_logs(client, grace_seconds=0, compaction="minor")

    merged = [i for i in report.items if i.action == "merged"]
    assert sorted(i.entry_log_id for i in merged) == [2, 3, 4], report.items
    assert {i.compacted_into for i in merged} == {1}
    assert sum(i.moved_entries for i in merged) == 30
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entry_logs WHERE state = 'SEALED'") == 1
    for name in ("entries_000002", "entries_000003", "entries_000004"):
        assert not table_exists(dsn, name)
    assert [number(m) for m in receive_messages(slow, 40)] == list(range(40))
    assert_nothing_more(slow)
    # The merged log is one log like any other: the next run leaves it alone.
    again = lifecycle.collect_entry_logs(client, grace_seconds=0, compaction="minor")
    assert not [i for i in again.items if i.action == "merged"]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for args in ((1, 1, "2s"), (None, 1, "2s"), (1, 99, "2s"), (1, 5, "2s"), (1, 5, "2h")):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute("SELECT * FROM txnq.compaction_merge_v1(%s, %s, %s)", args)
            assert raised.value.sqlstate == "TQ005", args


#: The storage and compression of each entry array column of every entry-log
#: table: ('x', 'l') is lz4, ('e', '') uncompressed (revision 0023).
ENTRY_ARRAY_STORAGE = """
SELECT DISTINCT a.attstorage::text, a.attcompression::text
  FROM pg_catalog.pg_attribute a
  JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
 WHERE c.relnamespace = 'txnq'::regnamespace
   AND (c.relname = 'entries' OR c.relname ~ '^entries_[0-9]+$')
   AND a.attname IN ('payloads', 'keys', 'properties', 'event_times')
"""

LZ4_AVAILABLE = """
SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_settings
                WHERE name = 'default_toast_compression' AND 'lz4' = ANY (enumvals))
"""


def test_every_entry_log_compresses_with_lz4_or_not_at_all_and_reads_back(dsn: str) -> None:
    """Revision 0023: pglz spent milliseconds on a batch it could not compress;
    the entry arrays use lz4 where the server has it, else no compression, in
    the first entry log, in the ones rolled and compacted later, and the
    messages read back the same."""
    expected = [("x", "l")] if sql_value(dsn, LZ4_AVAILABLE) else [("e", "")]
    payloads = [bytes([i % 251]) * 300 for i in range(200)] + [b'{"a": 1}' * 40]
    with txnq.Client(dsn) as client:
        client.admin.create_topic("compressed", partitions=1)
        with client.producer("compressed") as producer:
            for payload in payloads[:100]:
                producer.send_async(payload, key="k", properties={"p": "v"})
            producer.flush()
            sql(dsn, "SELECT txnq.roll_entry_log_v3(true)")
            for payload in payloads[100:]:
                producer.send_async(payload)
            producer.flush()
        source = sql_value(dsn, "SELECT min(entry_log_id) FROM txnq.entry_logs")
        target = sql_value(dsn, "SELECT txnq.compaction_begin_v3(%s)", [source])
        assert sql(dsn, ENTRY_ARRAY_STORAGE) == expected
        sql(dsn, "SELECT txnq.compaction_abandon_v2(%s)", [target])
        with client.subscribe("compressed", "s", initial_position="earliest") as consumer:
            received = receive_messages(consumer, len(payloads))
    assert [m.value for m in received] == payloads
    assert received[0].properties == {"p": "v"} and received[0].key == "k"
