"""The message lifecycle: TTL moves cursors and deletes nothing; retention
deletes only consumed, closed ledgers that retention no longer keeps; entry-log
GC drops a PostgreSQL partition whose ledgers are all deleted, and nothing a
reader still needs."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql, sql_value
from txnq import errors, lifecycle
from txnq.cli import app
from txnq.database.migrate import upgrade
from txnq.settings import load_settings

FAST = {"poll_interval": "200ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    # Ledgers of two entries, rolled at once: a few messages make several ledgers.
    upgrade(dsn, settings=load_settings(ledger_max_entries=2, ledger_min_rollover_seconds=0))
    with txnq.Client(dsn) as client:
        yield client


def produce(client: txnq.Client, topic: str, count: int, start: int = 0) -> None:
    with client.producer(topic) as producer:
        for i in range(start, start + count):
            producer.send(f"m{i}", partition=0)  # one entry each


def ledgers(dsn: str, topic: str) -> list[tuple[int, int, int | None, str]]:
    return [
        tuple(row)  # type: ignore[misc]
        for row in sql(
            dsn,
            "SELECT l.ledger_id, l.first_offset, l.last_offset, l.state FROM txnq.ledgers l "
            "JOIN txnq.topics t USING (topic_id) WHERE t.name = %s ORDER BY l.ledger_id",
            (topic,),
        )
    ]


def age_everything(dsn: str, topic: str, seconds: int = 3600) -> None:
    """Move a topic's publish and ledger close times into the past (order kept)."""
    sql(
        dsn,
        "UPDATE txnq.entries e SET publish_time = publish_time - make_interval(secs => %s) "
        "FROM txnq.topics t WHERE t.topic_id = e.topic_id AND t.name = %s",
        (seconds, topic),
    )
    sql(
        dsn,
        "UPDATE txnq.ledgers l SET closed_at = closed_at - make_interval(secs => %s) "
        "FROM txnq.topics t WHERE t.topic_id = l.topic_id AND t.name = %s",
        (seconds, topic),
    )


# -- TTL -------------------------------------------------------------------------


def test_ttl_acknowledges_expired_messages_and_deletes_nothing(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("events", ttl="1h")
    consumer = client.subscribe("events", "slow", initial_position="earliest", **FAST)
    produce(client, "events", 3)
    age_everything(dsn, "events")
    produce(client, "events", 1, start=3)  # fresh

    report = lifecycle.expire_ttl(client)

    assert [(i.topic, i.mark_delete_before, i.mark_delete_after) for i in report.items] == [
        ("events", -1, 2)
    ]
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries WHERE marker IS NULL") == 4
    assert all(state != "DELETED" for *_, state in ledgers(dsn, "events"))
    consumer.close()
    again = client.subscribe("events", "slow", **FAST)
    assert [m.value for m in receive_messages(again, 1)] == [b"m3"]
    assert_nothing_more(again)
    assert lifecycle.expire_ttl(client).items == []  # nothing more to expire
    assert sql_value(dsn, "SELECT items FROM txnq.gc_runs WHERE job = 'ttl'") == 1


def test_ttl_stops_before_a_message_pending_in_an_open_transaction(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("events", ttl="1h")
    consumer = client.subscribe("events", "etl", initial_position="earliest", **FAST)
    produce(client, "events", 4)
    messages = receive_messages(consumer, 4)
    txn = client.new_transaction()
    consumer.acknowledge(messages[2], txn=txn)
    age_everything(dsn, "events")

    lifecycle.expire_ttl(client)

    assert sql_value(dsn, "SELECT mark_delete_offset FROM txnq.cursors") == 1
    txn.commit()  # the transaction decides offset 2, as it would have without TTL
    lifecycle.expire_ttl(client)
    assert sql_value(dsn, "SELECT mark_delete_offset FROM txnq.cursors") == 3


def test_a_topic_without_ttl_never_expires(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic("events")
    client.subscribe("events", "slow", initial_position="earliest", **FAST)
    produce(client, "events", 2)
    age_everything(dsn, "events", seconds=10 * 86400)
    assert lifecycle.expire_ttl(client).items == []
    assert sql_value(dsn, "SELECT mark_delete_offset FROM txnq.cursors") == -1


# -- retention -------------------------------------------------------------------


def test_retention_deletes_only_closed_ledgers_every_subscription_consumed(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("orders")  # retention 0 / 0: delete once consumed
    fast = client.subscribe("orders", "fast", initial_position="earliest", **FAST)
    slow = client.subscribe("orders", "slow", initial_position="earliest", **FAST)
    produce(client, "orders", 7)
    assert ledgers(dsn, "orders") == [
        (0, 0, 1, "CLOSED"),
        (1, 2, 3, "CLOSED"),
        (2, 4, 5, "CLOSED"),
        (3, 6, None, "OPEN"),
    ]
    fast.acknowledge_cumulative(receive_messages(fast, 7)[-1])
    slow.acknowledge_cumulative(receive_messages(slow, 4)[-1])  # offsets 0..3 only

    report = lifecycle.apply_retention(client)

    assert [(i.ledger_id, i.first_offset, i.last_offset) for i in report.items] == [
        (0, 0, 1),
        (1, 2, 3),
    ]
    assert [state for *_, state in ledgers(dsn, "orders")] == [
        "DELETED",
        "DELETED",
        "CLOSED",  # the slow subscription still needs offsets 4 and 5
        "OPEN",  # never deleted
    ]
    assert client.admin.describe_topic("orders").partitions[0].earliest_offset == 4
    # The slow subscription reads on; a new one starts at the earliest retained offset.
    assert [m.value for m in receive_messages(slow, 3)] == [b"m4", b"m5", b"m6"]
    late = client.subscribe("orders", "late", initial_position="earliest", **FAST)
    assert receive_messages(late, 1)[0].value == b"m4"


def test_retention_by_time_and_size_keeps_consumed_ledgers(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic("orders", retention="1h")
    reader = client.subscribe("orders", "all", initial_position="earliest", **FAST)
    produce(client, "orders", 7)
    reader.acknowledge_cumulative(receive_messages(reader, 7)[-1])

    assert lifecycle.apply_retention(client).items == []  # consumed, but younger than 1h
    age_everything(dsn, "orders", seconds=7200)
    assert [i.ledger_id for i in lifecycle.apply_retention(client).items] == [0, 1, 2]

    client.admin.create_topic("capped", retention_size=1)  # not by time, by size
    capped = client.subscribe("capped", "all", initial_position="earliest", **FAST)
    produce(client, "capped", 7)
    capped.acknowledge_cumulative(receive_messages(capped, 7)[-1])
    deleted = lifecycle.apply_retention(client).items
    # Oldest first while the consumed ledgers kept exceed one byte: all but the last.
    assert [(i.topic, i.ledger_id) for i in deleted] == [("capped", 0), ("capped", 1)]

    client.admin.create_topic("forever", retention="infinite")
    keeper = client.subscribe("forever", "all", initial_position="earliest", **FAST)
    produce(client, "forever", 7)
    keeper.acknowledge_cumulative(receive_messages(keeper, 7)[-1])
    age_everything(dsn, "forever", seconds=365 * 86400)
    assert lifecycle.apply_retention(client).items == []


def test_retention_leaves_an_ongoing_transaction_alone(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    producer = client.producer("orders")
    txn = client.new_transaction()
    producer.send("in flight", partition=0, txn=txn)  # offset 0, holds the max read offset
    produce(client, "orders", 4, start=1)
    # No subscription: "consumed" means readable, which stops before the transaction.
    assert lifecycle.apply_retention(client).items == []
    txn.commit()
    assert [i.ledger_id for i in lifecycle.apply_retention(client).items] == [0, 1]


# -- entry-log GC ----------------------------------------------------------------


def test_gc_drops_an_entry_log_whose_ledgers_are_all_deleted(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic("orders")
    reader = client.subscribe("orders", "all", initial_position="earliest", **FAST)
    produce(client, "orders", 4)  # ledgers 0 and 1 in entry log 1
    assert sql_value(dsn, "SELECT txnq.roll_entry_log_v1(true)") == 2
    produce(client, "orders", 3, start=4)  # ledger 2 and the open ledger 3, in entry log 2
    reader.acknowledge_cumulative(receive_messages(reader, 7)[-1])

    kept = lifecycle.collect_entry_logs(client, grace_seconds=0)  # nothing deleted yet
    assert [(i.entry_log_id, i.action, i.live_entries) for i in kept.items] == [
        (1, "kept: 100% live", 4)
    ]
    lifecycle.apply_retention(client)
    dry = lifecycle.collect_entry_logs(client, dry_run=True, grace_seconds=0)
    assert [(i.entry_log_id, i.action) for i in dry.items] == [(1, "would drop")]
    assert sql_value(dsn, "SELECT to_regclass('txnq.entries_000001') IS NOT NULL")

    report = lifecycle.collect_entry_logs(client, grace_seconds=0)

    assert [(i.entry_log_id, i.action, i.entries) for i in report.items] == [(1, "dropped", 4)]
    assert report.reclaimed_bytes > 0
    assert sql_value(dsn, "SELECT count(*) FROM pg_class WHERE relname = 'entries_000001'") == 0
    assert sql(dsn, "SELECT state FROM txnq.entry_logs ORDER BY entry_log_id") == [
        ("DROPPED",),
        ("ACTIVE",),
    ]
    # Nothing a reader needs went: new messages flow, a new subscription starts
    # at the earliest retained offset and reads every retained message once.
    produce(client, "orders", 1, start=7)
    assert [m.value for m in receive_messages(reader, 1)] == [b"m7"]
    late = client.subscribe("orders", "late", initial_position="earliest", **FAST)
    assert [m.value for m in receive_messages(late, 2)] == [b"m6", b"m7"]
    assert_nothing_more(late)
    assert lifecycle.collect_entry_logs(client, grace_seconds=0).items == []


def test_gc_leaves_a_recently_sealed_entry_log_and_refuses_a_bad_grace(
    dsn: str, client: txnq.Client
) -> None:
    sql(dsn, "SELECT txnq.roll_entry_log_v1(true)")
    assert lifecycle.collect_entry_logs(client).items == []  # sealed less than a minute ago
    with pytest.raises(errors.InvalidArgumentError):
        lifecycle.collect_entry_logs(client, grace_seconds=-1)


# -- policies and the command line ------------------------------------------------


def test_set_topic_policy_changes_only_what_is_given(client: txnq.Client) -> None:
    client.admin.create_topic("orders", retention="7d", ttl="1h")
    topic = client.admin.set_topic_policy("orders", retention_size="1GiB")
    assert (topic.retention_seconds, topic.retention_bytes, topic.ttl_seconds) == (
        7 * 86400,
        1024**3,
        3600,
    )
    assert client.admin.set_topic_policy("orders", ttl=None).ttl_seconds is None
    assert client.admin.set_topic_policy("orders", retention="infinite").retention_seconds == -1
    for bad in ({"ttl": 0}, {"retention": "soon"}, {"retention_size": "-5"}, {}):
        with pytest.raises(errors.InvalidArgumentError):
            client.admin.set_topic_policy("orders", **bad)  # type: ignore[arg-type]
    assert client.admin.get_topic("orders").retention_seconds == -1  # nothing changed
    with pytest.raises(errors.TopicNotFoundError):
        client.admin.set_topic_policy("nope", ttl="1h")


def test_cli_set_policy_gc_run_and_history(dsn: str, client: txnq.Client) -> None:
    runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})

    def ok_json(*args: str) -> object:
        result = runner.invoke(app, [*args, "--json", "--dsn", dsn])
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return json.loads(result.stdout)

    client.admin.create_topic("orders")
    topic = ok_json("topics", "set-policy", "orders", "--ttl", "1h", "--retention", "0")
    assert topic == {**topic, "ttl_seconds": 3600, "retention_seconds": 0}
    reader = client.subscribe("orders", "all", initial_position="earliest", **FAST)
    produce(client, "orders", 4)
    reader.acknowledge_cumulative(receive_messages(reader, 4)[-1])

    reports = ok_json("gc", "run")
    assert [r["job"] for r in reports] == [  # type: ignore[index]
        "ttl",
        "retention",
        "backlog_quota",
        "gc",
    ]
    assert [i["ledger_id"] for i in reports[1]["items"]] == [0, 1]  # type: ignore[index]
    dry = ok_json("gc", "run", "--dry-run")
    assert [r["job"] for r in dry] == ["gc"]  # type: ignore[union-attr]
    history = ok_json("gc", "history", "--job", "retention")
    assert [(r["job"], r["items"]) for r in history] == [("retention", 2)]  # type: ignore[union-attr]
    assert ok_json("topics", "set-policy", "orders", "--ttl", "none")["ttl_seconds"] is None  # type: ignore[index]
    table = runner.invoke(app, ["gc", "run", "--dsn", dsn])
    assert table.exit_code == 0 and "Entry-log GC reclaimed" in table.stdout
