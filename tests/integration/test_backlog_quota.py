"""Backlog quotas (docs/backlog-quota.md): a subscription over its topic's
quota holds or refuses producers, or has its oldest backlog acknowledged on its
behalf; the check runs periodically, the append only reads its outcome."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import psycopg
import pytest
from typer.testing import CliRunner

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql, sql_value
from txnq import errors
from txnq.cli import app
from txnq.database.migrate import upgrade
from txnq.lifecycle.backlog_quota import check_backlog_quotas
from txnq.settings import load_settings

FAST = {"poll_interval": "200ms"}
GiB = 1024**3


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn, backlog_quota_hold_timeout_seconds=10) as client:
        yield client


def produce(client: txnq.Client, topic: str, count: int, partitions: int = 1) -> None:
    """``count`` messages of 100 bytes, one entry each, round the partitions."""
    with client.producer(topic) as producer:
        for i in range(count):
            producer.send(f"m{i}".ljust(100, "."), partition=i % partitions)


def cursors(dsn: str, topic: str, subscription: str) -> list[int]:
    rows = sql(
        dsn,
        "SELECT c.mark_delete_offset FROM txnq.cursors c "
        "JOIN txnq.subscriptions s USING (subscription_id) JOIN txnq.topics t "
        "ON t.topic_id = c.topic_id WHERE t.name = %s AND s.name = %s ORDER BY c.partition",
        (topic, subscription),
    )
    return [row[0] for row in rows]


def entries(dsn: str) -> int:
    return int(sql_value(dsn, "SELECT count(*) FROM txnq.entries WHERE marker IS NULL"))


def age_everything(dsn: str, seconds: int = 7200) -> None:
    sql(
        dsn,
        "UPDATE txnq.entries SET publish_time = publish_time - make_interval(secs => %s)",
        (seconds,),
    )


def values(messages: list[txnq.Message]) -> list[str]:
    return [m.value.decode().rstrip(".") for m in messages]


# -- producer_error --------------------------------------------------------------


def test_producer_error_refuses_sends_and_loses_nothing_already_sent(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic(
        "orders", backlog_quota_size=250, backlog_quota_policy="producer_error"
    )
    consumer = client.subscribe("orders", "billing", initial_position="earliest", **FAST)
    produce(client, "orders", 3)

    report = check_backlog_quotas(client)

    [breach] = report.items
    assert (breach.subscription, breach.over_size, breach.over_age) == ("billing", True, False)
    assert (breach.backlog_bytes, breach.limit_bytes, breach.evicted_entries) == (300, 250, 0)
    producer = client.producer("orders")
    with pytest.raises(errors.BacklogQuotaExceededError) as raised:
        producer.send(b"refused")
    message = str(raised.value)
    assert "topic 'orders' is over its backlog quota" in message
    assert "subscription 'billing' holds 300 bytes" in message and "limit 250 bytes" in message
    assert "acknowledge" in message and "--backlog-quota-size" in message
    assert isinstance(raised.value, errors.TopicBusyError)
    producer.send_async(b"refused too")
    with pytest.raises(errors.BacklogQuotaExceededError):
        producer.flush()

    assert entries(dsn) == 3
    received = receive_messages(consumer, 3)
    assert values(received) == ["m0", "m1", "m2"]
    assert_nothing_more(consumer)
    consumer.acknowledge_cumulative(received[-1])
    assert check_backlog_quotas(client).items == []  # under quota again: the record goes
    producer.send(b"accepted")
    assert [m.value for m in receive_messages(consumer, 1)] == [b"accepted"]
    producer.close()


def test_old_clients_calling_append_v2_honour_the_quota(dsn: str, client: txnq.Client) -> None:
    topic = client.admin.create_topic(
        "orders", backlog_quota_size=150, backlog_quota_policy="producer_error"
    )
    client.subscribe("orders", "billing", initial_position="earliest", **FAST)
    produce(client, "orders", 2)
    check_backlog_quotas(client)
    for version in ("append_v1", "append_v2"):
        with pytest.raises(psycopg.Error) as raised:
            sql(
                dsn,
                f"SELECT * FROM txnq.{version}(%s, 0, NULL, NULL, NULL, ARRAY['x']::bytea[])",
                (topic.topic_id,),
            )
        assert raised.value.sqlstate == "TQ016"
    assert entries(dsn) == 2


def test_a_retry_of_a_written_batch_gets_its_offset_even_over_quota(
    dsn: str, client: txnq.Client
) -> None:
    topic = client.admin.create_topic(
        "orders", backlog_quota_size=150, backlog_quota_policy="producer_error"
    )
    client.subscribe("orders", "billing", initial_position="earliest", **FAST).close()
    [(producer_id, epoch)] = sql(
        dsn,
        "SELECT DISTINCT producer_id, epoch FROM txnq.register_producer_v2(%s, 'p1')",
        (topic.topic_id,),
    )
    append = (
        "SELECT entry_offset, duplicate FROM txnq.append_v4(%s, 0, %s, %s, %s, "
        "ARRAY[convert_to(repeat('x', 100), 'UTF8')])"
    )
    assert sql(dsn, append, (topic.topic_id, producer_id, epoch, 0)) == [(0, False)]
    assert sql(dsn, append, (topic.topic_id, producer_id, epoch, 1)) == [(1, False)]
    check_backlog_quotas(client)

    # The outcome of sequence 1 was lost, say: its retry is recognised.
    assert sql(dsn, append, (topic.topic_id, producer_id, epoch, 1)) == [(1, True)]
    with pytest.raises(psycopg.Error) as raised:
        sql(dsn, append, (topic.topic_id, producer_id, epoch, 2))
    assert raised.value.sqlstate == "TQ016"
    assert entries(dsn) == 2


def test_transactional_sends_are_refused_like_any_other(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic(
        "orders", backlog_quota_size=150, backlog_quota_policy="producer_error"
    )
    client.subscribe("orders", "billing", initial_position="earliest", **FAST)
    produce(client, "orders", 2)
    check_backlog_quotas(client)
    producer = client.producer("orders", transactional_id="etl-1")
    txn = client.new_transaction()
    with pytest.raises(errors.BacklogQuotaExceededError):
        producer.send(b"in a transaction", txn=txn)
    txn.abort()
    assert entries(dsn) == 2
    producer.close()


# -- producer_hold ---------------------------------------------------------------


def test_producer_hold_blocks_until_a_consumer_acknowledges(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic(
        "orders", backlog_quota_size=250, backlog_quota_policy="producer_hold"
    )
    client.subscribe("orders", "billing", initial_position="earliest", **FAST).close()
    produce(client, "orders", 3)
    check_backlog_quotas(client)
    acknowledged = threading.Event()
    failures: list[BaseException] = []

    def consume_later() -> None:
        try:
            with client.subscribe("orders", "billing", **FAST) as consumer:
                received = receive_messages(consumer, 3)
                # Blocked meanwhile: nothing beyond the three was written.
                assert entries(dsn) == 3
                consumer.acknowledge_cumulative(received[-1])
                acknowledged.set()
        except BaseException as exc:
            failures.append(exc)

    consumer_thread = threading.Thread(target=consume_later)
    with client.producer("orders") as producer:
        consumer_thread.start()
        message_id = producer.send(b"held")  # blocks until the backlog fits again
        consumer_thread.join(timeout=10)
    assert failures == []
    assert acknowledged.is_set()
    assert message_id.offset == 3
    with client.subscribe("orders", "billing", **FAST) as consumer:
        assert [m.value for m in receive_messages(consumer, 1)] == [b"held"]


def test_producer_hold_raises_after_the_hold_timeout(dsn: str) -> None:
    with txnq.Client(dsn, backlog_quota_hold_timeout_seconds=0.5) as client:
        client.admin.create_topic("orders", backlog_quota_size=250)  # policy: the default, hold
        client.subscribe("orders", "billing", initial_position="earliest", **FAST)
        produce(client, "orders", 3)
        check_backlog_quotas(client)
        with client.producer("orders") as producer:
            with pytest.raises(errors.BacklogQuotaExceededError) as raised:
                producer.send(b"held, then refused")
            assert "subscription 'billing' holds 300 bytes" in str(raised.value)
            assert "held for 0.5s" in str(raised.value)
            assert "BACKLOG_QUOTA_HOLD_TIMEOUT_SECONDS" in str(raised.value)
    assert entries(dsn) == 3


# -- consumer_backlog_eviction ---------------------------------------------------


def test_eviction_moves_the_slowest_subscription_so_its_backlog_fits(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic(
        "events", 2, backlog_quota_size=250, backlog_quota_policy="consumer_backlog_eviction"
    )
    fast = client.subscribe("events", "fast", initial_position="earliest", **FAST)
    slow = client.subscribe("events", "slow", initial_position="earliest", **FAST)
    produce(client, "events", 5, partitions=2)  # m0 m2 m4 on partition 0, m1 m3 on 1
    for message in receive_messages(fast, 5):
        fast.acknowledge(message)
    slow.close()

    report = check_backlog_quotas(client)

    [breach] = report.items
    assert (breach.subscription, breach.backlog_bytes, breach.evicted_entries) == ("slow", 500, 3)
    # The three oldest (m0, m1, m2) are acknowledged; 200 bytes are left.
    assert cursors(dsn, "events", "slow") == [1, 0]
    assert cursors(dsn, "events", "fast") == [2, 1]
    assert entries(dsn) == 5  # nothing is deleted
    slow = client.subscribe("events", "slow", **FAST)
    assert sorted(values(receive_messages(slow, 2))) == ["m3", "m4"]
    assert_nothing_more(slow)
    with client.producer("events") as producer:
        producer.send(b"never refused")  # eviction never holds producers
    assert sql_value(dsn, "SELECT count(*) FROM txnq.backlog_quota_exceeded") == 0
    assert sql_value(dsn, "SELECT items FROM txnq.gc_runs WHERE job = 'backlog_quota'") == 1


def test_eviction_stops_before_a_message_pending_in_an_open_transaction(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic(
        "events", backlog_quota_size=150, backlog_quota_policy="consumer_backlog_eviction"
    )
    consumer = client.subscribe("events", "etl", initial_position="earliest", **FAST)
    produce(client, "events", 4)
    messages = receive_messages(consumer, 4)
    txn = client.new_transaction()
    consumer.acknowledge(messages[1], txn=txn)

    [breach] = check_backlog_quotas(client).items

    # The backlog fits only past offset 2, but offset 1 is the transaction's.
    assert breach.evicted_entries == 1
    assert cursors(dsn, "events", "etl") == [0]
    txn.commit()
    assert cursors(dsn, "events", "etl") == [1]
    check_backlog_quotas(client)
    assert cursors(dsn, "events", "etl") == [2]


def test_eviction_stops_at_the_max_read_offset(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic(
        "events", backlog_quota_size=50, backlog_quota_policy="consumer_backlog_eviction"
    )
    client.subscribe("events", "etl", initial_position="earliest", **FAST).close()
    produce(client, "events", 2)
    with client.producer("events") as producer:
        txn = client.new_transaction()
        producer.send(b"x" * 100, txn=txn)  # offset 2: the max read offset stays at 1
        producer.send(b"y" * 100)  # offset 3, behind the ongoing transaction

        check_backlog_quotas(client)
        assert cursors(dsn, "events", "etl") == [1]
        txn.commit()  # marker at 4; everything is readable now
    check_backlog_quotas(client)
    # 3 is the newest data entry and is over the 50-byte quota on its own:
    # the whole backlog goes, the marker folded in.
    assert cursors(dsn, "events", "etl") == [4]


# -- age -------------------------------------------------------------------------


def test_quota_by_age(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic(
        "events", backlog_quota_age="1h", backlog_quota_policy="producer_error"
    )
    client.subscribe("events", "etl", initial_position="earliest", **FAST).close()
    produce(client, "events", 2)
    assert check_backlog_quotas(client).items == []  # fresh: under quota
    age_everything(dsn)  # published two hours ago

    [breach] = check_backlog_quotas(client).items

    assert (breach.over_size, breach.over_age, breach.limit_seconds) == (False, True, 3600.0)
    assert breach.backlog_seconds is not None and 7200 <= breach.backlog_seconds < 7300
    with client.producer("events") as producer:
        with pytest.raises(errors.BacklogQuotaExceededError, match=r"published 7[0-9]{3}"):
            producer.send(b"refused")
        # Eviction by age acknowledges the old entries, as TTL would.
        client.admin.set_topic_policy("events", backlog_quota_policy="consumer_backlog_eviction")
        producer.send(b"fresh")  # the policy change cleared the record
    [breach] = check_backlog_quotas(client).items
    assert breach.evicted_entries == 2
    consumer = client.subscribe("events", "etl", **FAST)
    assert [m.value for m in receive_messages(consumer, 1)] == [b"fresh"]
    assert_nothing_more(consumer)


# -- defaults, settings and validation -------------------------------------------


def test_server_defaults_apply_to_topics_without_a_quota_of_their_own(dsn: str) -> None:
    upgrade(
        dsn,
        settings=load_settings(
            backlog_quota_default_limit_bytes=250, backlog_quota_default_policy="producer_error"
        ),
    )
    with txnq.Client(dsn) as client:
        client.admin.create_topic("defaulted")
        client.admin.create_topic("unlimited", backlog_quota_size=-1)
        for topic in ("defaulted", "unlimited"):
            client.subscribe(topic, "s", initial_position="earliest", **FAST).close()
            produce(client, topic, 3)

        assert [b.topic for b in check_backlog_quotas(client).items] == ["defaulted"]

        quota = client.admin.describe_topic("defaulted").backlog_quota
        assert quota is not None
        assert (quota.limit_bytes, quota.limit_seconds, quota.policy) == (
            250,
            -1.0,
            "producer_error",
        )
        assert quota.from_defaults == ["size", "age", "policy"]
        assert quota.exceeded_reason is not None and "'s' holds 300 bytes" in quota.exceeded_reason
        unlimited = client.admin.describe_topic("unlimited").backlog_quota
        assert unlimited is not None and unlimited.exceeded_since is None
        assert unlimited.limit_bytes == -1 and unlimited.from_defaults == ["age", "policy"]
        # Back to the default for the one that had its own limit:
        client.admin.set_topic_policy("unlimited", backlog_quota_size="default")
        assert client.admin.get_topic("unlimited").backlog_quota_bytes is None
        assert [b.topic for b in check_backlog_quotas(client).items] == ["defaulted", "unlimited"]


@pytest.mark.parametrize(
    ("option", "value", "complaint"),
    [
        ("backlog_quota_size", 0, "positive size"),
        ("backlog_quota_size", -5, "must not be negative"),
        ("backlog_quota_size", "10 parsecs", "is not a size"),
        ("backlog_quota_size", True, "not a bool"),
        ("backlog_quota_age", 0, "longer than zero"),
        ("backlog_quota_age", "soon", "is not a duration"),
        ("backlog_quota_policy", "drop_everything", "must be one of producer_hold"),
        ("backlog_quota_policy", 1, "must be one of"),
    ],
)
def test_bad_quota_values_are_refused_and_change_nothing(
    client: txnq.Client, option: str, value: object, complaint: str
) -> None:
    with pytest.raises(errors.InvalidArgumentError, match=complaint):
        client.admin.create_topic("orders", **{option: value})
    assert client.admin.list_topics() == []
    client.admin.create_topic("orders", backlog_quota_size="1MiB")
    with pytest.raises(errors.InvalidArgumentError, match=complaint):
        client.admin.set_topic_policy("orders", **{option: value})
    topic = client.admin.get_topic("orders")
    assert (topic.backlog_quota_bytes, topic.backlog_quota_seconds, topic.backlog_quota_policy) == (
        1024 * 1024,
        None,
        None,
    )


def test_quota_values_in_every_accepted_form(client: txnq.Client) -> None:
    client.admin.create_topic(
        "orders",
        backlog_quota_size="10GiB",
        backlog_quota_age="2h",
        backlog_quota_policy="producer_exception",
    )
    topic = client.admin.get_topic("orders")
    assert (topic.backlog_quota_bytes, topic.backlog_quota_seconds) == (10 * GiB, 7200.0)
    assert topic.backlog_quota_policy == "producer_error"  # Pulsar's name, stored as txnq's
    topic = client.admin.set_topic_policy(
        "orders", backlog_quota_size="infinite", backlog_quota_age=-1
    )
    assert (topic.backlog_quota_bytes, topic.backlog_quota_seconds) == (-1, -1.0)
    assert topic.backlog_quota_policy == "producer_error"  # not given: unchanged
    topic = client.admin.set_topic_policy("orders", backlog_quota_policy=None)
    assert topic.backlog_quota_policy is None  # the server default again


@pytest.mark.parametrize(
    ("setting", "value", "complaint"),
    [
        ("BACKLOG_QUOTA_DEFAULT_LIMIT_BYTES", "0", "positive size"),
        ("BACKLOG_QUOTA_DEFAULT_LIMIT_BYTES", "-2", "not a size"),
        ("BACKLOG_QUOTA_DEFAULT_LIMIT_SECONDS", "0", "longer than zero"),
        ("BACKLOG_QUOTA_DEFAULT_POLICY", "drop", "must be one of"),
        ("BACKLOG_QUOTA_CHECK_INTERVAL_SECONDS", "0", "longer than zero"),
        ("BACKLOG_QUOTA_HOLD_TIMEOUT_SECONDS", "forever", "not a duration"),
    ],
)
def test_bad_settings_are_configuration_errors(
    monkeypatch: pytest.MonkeyPatch, setting: str, value: str, complaint: str
) -> None:
    monkeypatch.setenv(f"TXNQ_{setting}", value)
    with pytest.raises(errors.ConfigurationError, match=complaint) as raised:
        load_settings()
    assert setting in str(raised.value)


def test_settings_defaults_and_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = load_settings()
    assert (
        settings.backlog_quota_default_limit_bytes,
        settings.backlog_quota_default_limit_seconds,
        settings.backlog_quota_default_policy,
        settings.backlog_quota_check_interval_seconds,
        settings.backlog_quota_hold_timeout_seconds,
    ) == (-1, -1.0, "producer_hold", 60.0, 30.0)
    monkeypatch.setenv("TXNQ_BACKLOG_QUOTA_DEFAULT_LIMIT_BYTES", "10GiB")
    monkeypatch.setenv("TXNQ_BACKLOG_QUOTA_DEFAULT_LIMIT_SECONDS", "1d")
    monkeypatch.setenv("TXNQ_BACKLOG_QUOTA_DEFAULT_POLICY", "consumer_backlog_eviction")
    settings = load_settings()
    assert settings.backlog_quota_default_limit_bytes == 10 * GiB
    assert settings.backlog_quota_default_limit_seconds == 86400.0
    assert settings.backlog_quota_default_policy == "consumer_backlog_eviction"


# -- command line, gc run, scheduler ---------------------------------------------


def test_set_policy_cli_round_trip(dsn: str, client: txnq.Client) -> None:
    runner = CliRunner()
    client.admin.create_topic("orders")

    result = runner.invoke(
        app,
        [
            "topics", "set-policy", "orders", "--backlog-quota-size", "10GiB",
            "--backlog-quota-age", "1h", "--backlog-quota-policy", "producer_error",
            "--dsn", dsn, "--json",
        ],
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    topic = json.loads(result.stdout)
    assert (topic["backlog_quota_bytes"], topic["backlog_quota_seconds"]) == (10 * GiB, 3600.0)
    assert topic["backlog_quota_policy"] == "producer_error"
    result = runner.invoke(app, ["topics", "describe", "orders", "--dsn", dsn, "--json"])
    quota = json.loads(result.stdout)["backlog_quota"]
    assert (quota["limit_bytes"], quota["policy"], quota["from_defaults"]) == (
        10 * GiB,
        "producer_error",
        [],
    )
    result = runner.invoke(app, ["topics", "describe", "orders", "--dsn", dsn])
    assert "backlog quota size" in result.stdout and "10GiB" in result.stdout
    result = runner.invoke(
        app,
        [
            "topics",
            "set-policy",
            "orders",
            "--backlog-quota-size",
            "default",
            "--dsn",
            dsn,
            "--json",
        ],
    )
    assert json.loads(result.stdout)["backlog_quota_bytes"] is None
    assert client.admin.get_topic("orders").backlog_quota_seconds == 3600.0  # unchanged
    result = runner.invoke(
        app, ["topics", "set-policy", "orders", "--backlog-quota-policy", "drop", "--dsn", dsn]
    )
    assert result.exit_code == 1
    assert "backlog_quota_policy must be one of" in result.stderr


def test_gc_run_checks_backlog_quotas_and_history_records_it(dsn: str, client: txnq.Client) -> None:
    client.admin.create_topic(
        "events", backlog_quota_size=150, backlog_quota_policy="consumer_backlog_eviction"
    )
    client.subscribe("events", "slow", initial_position="earliest", **FAST).close()
    produce(client, "events", 3)
    runner = CliRunner()

    result = runner.invoke(app, ["gc", "run", "--dsn", dsn, "--json"])

    assert result.exit_code == 0, result.output
    [quota] = [r for r in json.loads(result.stdout) if r["job"] == "backlog_quota"]
    assert [(i["subscription"], i["evicted_entries"]) for i in quota["items"]] == [("slow", 2)]
    result = runner.invoke(app, ["gc", "history", "--job", "backlog_quota", "--dsn", dsn, "--json"])
    [run] = json.loads(result.stdout)
    assert run["details"] == {"entries_evicted": 2, "topics_over_quota": []}


def test_the_scheduler_runs_the_check_every_interval(dsn: str) -> None:
    from txnq.workers.scheduler_jobs import JOBS, JobContext, backlog_quota

    [job] = [j for j in JOBS if j.name == "backlog_quota"]
    assert job.interval(load_settings(backlog_quota_check_interval_seconds="15s")) == 15.0
    with txnq.Client(dsn) as client:
        client.admin.create_topic(
            "orders", backlog_quota_size=150, backlog_quota_policy="producer_error"
        )
        client.subscribe("orders", "billing", initial_position="earliest", **FAST).close()
        context = JobContext(client)
        assert backlog_quota(context) is None
        produce(client, "orders", 2)
        outcome = backlog_quota(context)
        assert outcome is not None and "orders/billing (producer_error)" in outcome
        assert (
            sql_value(dsn, "SELECT subscription_name FROM txnq.backlog_quota_exceeded") == "billing"
        )
