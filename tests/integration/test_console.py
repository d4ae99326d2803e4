"""The web console's server (docs/console.md) over HTTP, without a browser:
what every endpoint answers to bad input, that a read-only role is refused
every action by the server and by SQL, that actions are recorded, and that
the chart history stays bounded. tests/integration/test_console_browser.py
drives the page itself in Chromium."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

import txnq
from tests.helpers import Login, console_caller, sql, sql_value
from txnq import errors
from txnq.console.reads import ConsoleDatabase
from txnq.console.samples import sample_history
from txnq.console.server import ConsoleServer
from txnq.settings import load_settings

Call = Callable[..., tuple[int, Any]]


@pytest.fixture
def console(dsn: str) -> Iterator[Call]:
    server = ConsoleServer(dsn, load_settings(), port=0).start()
    try:
        yield console_caller(server.url)
    finally:
        server.stop()


def test_every_page_endpoint_answers_json(dsn: str, console: Call) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2)
    for path in ("whoami", "topics", "subscriptions", "transactions", "storage", "actions"):
        status, body = console(f"/api/{path}")
        assert status == 200, body
    status, body = console("/api/topics")
    assert [t["topic"] for t in body["topics"]] == ["orders"]
    assert console("/api/whoami")[1]["may_administer"] is True


def test_transactions_list_their_partitions_and_pending_acks(
    dsn: str, console: Call, make_login: Callable[..., Login]
) -> None:
    """Issue 21: transactions with their partitions and pending acks; a role
    that may not describe a transaction (the reader) sees the counts only."""
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2)
        client.admin.create_topic("invoices")
        with client.producer("orders") as producer:
            producer.send(b"o", partition=1)
        consumer = client.subscribe("orders", "billing", initial_position="earliest")
        message = consumer.receive(timeout=5)
        assert message is not None
        txn = client.new_transaction()
        with client.producer("invoices") as invoices:
            invoices.send(b"i", txn=txn)
        consumer.acknowledge(message, txn=txn)
        status, body = console("/api/transactions")
        reader = make_login("txnq_reader")
        server = ConsoleServer(reader.dsn, load_settings(), port=0).start()
        try:
            read_status, read_body = console_caller(server.url)("/api/transactions")
        finally:
            server.stop()
        txn.abort()
        consumer.close()
    assert status == 200, body
    (row,) = [r for r in body["transactions"] if r["id"] == f"{txn.txn_id[0]}:{txn.txn_id[1]}"]
    assert [(p["topic"], p["partition"]) for p in row["partition_list"]] == [("invoices", 0)]
    assert [
        (a["topic"], a["partition"], a["subscription"], a["pending_acks"]) for a in row["ack_list"]
    ] == [("orders", 1, "billing", 1)]
    assert read_status == 200, read_body
    (seen,) = [r for r in read_body["transactions"] if r["id"] == row["id"]]
    assert seen["partition_list"] is None and seen["ack_list"] is None
    assert (seen["partitions"], seen["subscriptions"]) == (1, 1)


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/api/topics?window=abc", "window must be a number"),
        ("/api/topics?window=1", "window must be from 60"),
        ("/api/storage?window=99999999999", "window must be from 60"),
        ("/api/messages?topic=no%20such", "not valid"),
        ("/api/messages?topic=orders&partition=x", "partition must be a whole number"),
        ("/api/messages?topic=orders&partition=-1", "partition must be 0 or more"),
        ("/api/messages?topic=orders&offset=-5", "offset must be 0 or more"),
        ("/api/messages?topic=orders&limit=0", "limit must be from 1"),
        ("/api/messages?topic=orders&time=yesterday", "ISO 8601"),
        ("/api/messages?topic=orders&offset=1&time=2026-01-01T00:00Z", "not both"),
        ("/api/nothing", "Not Found"),
    ],
)
def test_bad_input_to_a_read_gets_a_clear_error(console: Call, path: str, fragment: str) -> None:
    status, body = console(path)
    assert status in (400, 404), body
    assert fragment in body["error"]


@pytest.mark.parametrize(
    ("action", "args", "fragment"),
    [
        ("explode", {}, "unknown action 'explode'"),
        ("create_topic", [], "a JSON object"),
        ("create_topic", {}, "topic is required"),
        ("create_topic", {"topic": "a b"}, "not valid"),
        ("create_topic", {"topic": "t", "partitions": 0}, "partitions must be"),
        ("create_topic", {"topic": "t", "retention": "forever-ish"}, "retention"),
        ("set_policy", {"topic": "orders"}, "give one of retention"),
        ("seek_subscription", {"topic": "orders", "subscription": "s", "to": "soon"}, "ISO 8601"),
        ("seek_subscription", {"topic": "orders", "subscription": "s", "to": "2026-01-01"}, "zone"),
        ("abort_transaction", {"txn_id": "not-an-id"}, "transaction"),
        ("delete_topic", {"topic": "orders", "force": "yes"}, "true or false"),
        ("produce", {"topic": "orders", "payload": 5}, "must be a string"),
    ],
)
def test_bad_input_to_an_action_gets_a_clear_error_and_changes_nothing(
    dsn: str, console: Call, action: str, args: object, fragment: str
) -> None:
    status, body = console(f"/api/actions/{action}", args)
    assert status == 400, body
    assert fragment in body["error"]
    assert sql_value(dsn, "SELECT count(*) FROM txnq.topics") == 0


def test_the_policy_action_sets_and_clears_every_policy(dsn: str, console: Call) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders")
        change = {
            "topic": "orders",
            "ttl": "1h",
            "backlog_quota_size": "10MiB",
            "backlog_quota_age": "1d",
            "backlog_quota_policy": "producer_error",
        }
        status, body = console("/api/actions/set_policy", change)
        assert status == 200, body
        info = client.admin.get_topic("orders")
        assert (info.ttl_seconds, info.backlog_quota_bytes, info.backlog_quota_seconds) == (
            3600.0,
            10 * 1024 * 1024,
            86400.0,
        )
        assert info.backlog_quota_policy == "producer_error"
        cleared = {"topic": "orders", "ttl": "none", "backlog_quota_size": "default"}
        status, body = console("/api/actions/set_policy", cleared)
        assert status == 200, body
        info = client.admin.get_topic("orders")
        assert info.ttl_seconds is None and info.backlog_quota_bytes is None
        assert info.backlog_quota_policy == "producer_error"  # not given: unchanged
        status, body = console(
            "/api/actions/set_policy", {"topic": "orders", "backlog_quota_policy": "drop_all"}
        )
        assert status == 400 and "producer_hold" in body["error"], body


def test_an_action_is_recorded_done_or_failed(dsn: str, console: Call) -> None:
    status, body = console("/api/actions/create_topic", {"topic": "orders", "partitions": 3})
    assert status == 200, body
    status, body = console("/api/actions/create_topic", {"topic": "orders"})
    assert status == 400 and body["type"] == "TopicExistsError"
    status, body = console("/api/actions/produce", {"topic": "orders", "payload": '{"a": 1}'})
    assert status == 200, body
    rows = sql(dsn, "SELECT action, target, succeeded FROM txnq.console_action_log ORDER BY at")
    assert rows == [
        ("create_topic", "orders", True),
        ("create_topic", "orders", False),
        ("produce", "orders", True),
    ]
    partition = body["result"]["partition"]
    status, body = console(f"/api/messages?topic=orders&partition={partition}")
    assert body["messages"][0]["payload"]["json"] == '{\n  "a": 1\n}'


def test_an_action_without_the_console_header_is_refused(dsn: str, console: Call) -> None:
    status, body = console("/api/actions/create_topic", {"topic": "orders"}, header=False)
    assert status == 403
    assert "x-txnq-console" in body["error"]
    assert sql_value(dsn, "SELECT count(*) FROM txnq.topics") == 0


def test_the_server_refuses_every_action_of_the_reader_role(
    dsn: str, make_login: Callable[..., Login]
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders")
    reader = make_login("txnq_reader")
    server = ConsoleServer(reader.dsn, load_settings(), port=0).start()
    try:
        call = console_caller(server.url)
        status, body = call("/api/whoami")
        assert body["may_administer"] is False
        for action, args in [
            ("create_topic", {"topic": "other"}),
            ("delete_topic", {"topic": "orders"}),
            ("produce", {"topic": "orders", "payload": "x"}),
        ]:
            status, body = call(f"/api/actions/{action}", args)
            assert status == 403, body
            assert body["type"] == "PermissionDeniedError"
        # It reads every page but the payloads.
        for path in ("topics", "subscriptions", "transactions", "storage", "actions"):
            assert call(f"/api/{path}")[0] == 200
        status, body = call("/api/messages?topic=orders")
        assert status == 403 and "may not read" in body["error"]
    finally:
        server.stop()
    assert sql_value(dsn, "SELECT count(*) FROM txnq.topics") == 1
    # And SQL refuses it too, whoever calls the function directly.
    with (
        psycopg.connect(reader.dsn, autocommit=True) as conn,
        pytest.raises(psycopg.errors.InsufficientPrivilege),
    ):
        conn.execute("SELECT txnq.console_record_action_v1('produce', 'orders', '{}', NULL)")


def test_a_client_role_may_not_record_console_actions(
    dsn: str, make_login: Callable[..., Login]
) -> None:
    login = make_login("txnq_client")
    with (
        psycopg.connect(login.dsn, autocommit=True) as conn,
        pytest.raises(psycopg.Error, match="may not administer"),
    ):
        conn.execute("SELECT txnq.console_record_action_v1('produce', 'orders', '{}', NULL)")


def test_the_chart_history_is_sampled_and_bounded(dsn: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2)
        with client.producer("orders") as producer:
            for i in range(5):
                producer.send(f"m{i}".encode())
        database = ConsoleDatabase(dsn, client.settings)
        assert sample_history(database) == 1
        rows = sql(dsn, "SELECT topic, entries_written FROM txnq.topic_history")
        assert rows == [("orders", 5)] or rows[0][1] >= 1
        assert sql_value(dsn, "SELECT count(*) FROM txnq.storage_history") == 1
        # Samples and console actions older than the history go at the next sample.
        sql(dsn, "UPDATE txnq.topic_samples SET sampled_at = sampled_at - interval '2 hours'")
        sql(dsn, "UPDATE txnq.storage_samples SET sampled_at = sampled_at - interval '2 hours'")
        sql(
            dsn,
            "INSERT INTO txnq.console_actions (at, role, action, target) "
            "VALUES (now() - interval '2 hours', 'x', 'produce', 'orders')",
        )
        sample_history(database, keep_seconds=3600)
        assert sql_value(dsn, "SELECT count(*) FROM txnq.topic_samples") == 1
        assert sql_value(dsn, "SELECT count(*) FROM txnq.storage_samples") == 1
        assert sql_value(dsn, "SELECT count(*) FROM txnq.console_actions") == 0
        for bad in (0, -1, "1h", float("inf")):
            with pytest.raises(errors.InvalidArgumentError):
                sample_history(database, keep_seconds=bad)  # type: ignore[arg-type]


def test_txnq_console_serves_until_sigterm(dsn: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "txnq.cli", "console", "--dsn", dsn, "--port", "0", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = json.loads(process.stdout.readline())["url"]
        assert url.startswith("http://127.0.0.1:")
        status, body = console_caller(url)("/api/whoami")
        assert status == 200 and body["may_administer"] is True
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=20)
    assert process.returncode == 0, err
    assert "Traceback" not in err


def test_txnq_console_names_the_setting_when_its_port_is_taken(dsn: str) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "txnq.cli", "console", "--dsn", dsn, "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 1
    assert "CONSOLE_PORT" in result.stderr and "Traceback" not in result.stderr
