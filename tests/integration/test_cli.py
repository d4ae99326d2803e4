"""The ``txnq`` command line, driven through typer's CliRunner against a real
PostgreSQL (a fresh migrated database per test), and ``txnq standalone`` /
``txnq worker scheduler`` as real processes.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from typer.testing import CliRunner, Result

from tests.conftest import free_tcp_port
from tests.helpers import Login
from txnq.cli import app
from txnq.database.embedded import DEFAULT_PORT, EmbeddedServer
from txnq.database.migrate import head_revision

# Wide enough that no table cell wraps in the assertions below.
runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})

STARTUP_TIMEOUT_SECONDS = 60


def txnq(*args: str, input: str | bytes | None = None) -> Result:
    return runner.invoke(app, list(args), input=input)


def ok(*args: str, input: str | bytes | None = None) -> Result:
    result = txnq(*args, input=input)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result


def ok_json(*args: str, input: str | bytes | None = None) -> Any:
    return json.loads(ok(*args, "--json", input=input).stdout)


def json_lines(result: Result) -> list[dict[str, Any]]:
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def assert_refused(result: Result, *fragments: str) -> None:
    """Exit code 1, one red line on stderr that says why, and no traceback."""
    assert result.exit_code == 1, (result.stdout, result.stderr, result.exception)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


# -- topics --------------------------------------------------------------------


def test_topics_create_list_describe_update_delete(dsn: str) -> None:
    created = ok_json(
        *("topics", "create", "orders", "--partitions", "2", "--retention", "7d"),
        *("--retention-size", "10GiB", "--ttl", "1h", "--max-message-bytes", "1MiB"),
        *("--dsn", dsn),
    )
    assert created["name"] == "orders"
    assert created["partitions"] == 2
    assert created["retention_seconds"] == 7 * 86400
    assert created["retention_bytes"] == 10 * 1024**3
    assert created["ttl_seconds"] == 3600
    assert created["max_message_bytes"] == 1024**2
    datetime.fromisoformat(created["created_at"])  # datetimes are ISO strings
    ok("topics", "create", "events", "--dsn", dsn)

    listed = ok_json("topics", "list", "--dsn", dsn)
    assert [t["name"] for t in listed] == ["events", "orders"]

    described = ok_json("topics", "describe", "orders", "--dsn", dsn)
    assert described["topic"]["name"] == "orders"
    assert [p["partition"] for p in described["partitions"]] == [0, 1]
    assert described["subscriptions"] == []

    updated = ok_json("topics", "update", "orders", "--partitions", "3", "--dsn", dsn)
    assert updated["partitions"] == 3

    assert ok_json("topics", "delete", "orders", "--dsn", dsn) == {"deleted": "orders"}
    assert [t["name"] for t in ok_json("topics", "list", "--dsn", dsn)] == ["events"]


def test_topic_tables_show_the_settings_in_units(dsn: str) -> None:
    created = ok(
        *("topics", "create", "orders", "--partitions", "4", "--retention", "7d"),
        *("--retention-size", "10GiB", "--ttl", "1h", "--dsn", dsn),
    ).stdout
    assert "Topic orders" in created
    for shown in ("7d", "10GiB", "1h", "5MiB"):
        assert shown in created

    listed = ok("topics", "list", "--dsn", dsn).stdout
    assert re.search(r"orders\s+4\s+7d\s+10GiB\s+1h\s+5MiB", listed), listed

    described = ok("topics", "describe", "orders", "--dsn", dsn).stdout
    assert "Partitions" in described and "High watermark" in described
    assert "Subscriptions: none" in described


def test_topics_delete_refuses_a_topic_with_a_backlog_unless_forced(dsn: str) -> None:
    ok("topics", "create", "orders", "--dsn", dsn)
    ok("consume", "orders", "-s", "billing", "--timeout", "0.1s", "--dsn", dsn)
    ok("produce", "orders", "-m", "unread", "--dsn", dsn)

    assert_refused(txnq("topics", "delete", "orders", "--dsn", dsn), "orders")
    ok("topics", "delete", "orders", "--force", "--dsn", dsn)


def test_topics_update_cannot_shrink(dsn: str) -> None:
    ok("topics", "create", "orders", "--partitions", "3", "--dsn", dsn)
    assert_refused(
        txnq("topics", "update", "orders", "--partitions", "2", "--dsn", dsn), "can only grow"
    )


def test_topics_grant_revoke_and_permissions(dsn: str, make_login: Callable[..., Login]) -> None:
    """docs/security.md: an admin grants a role produce on a topic; the role's
    refusal before says which command to run."""
    app_role = make_login("txnq_client", label="cli")
    ok("topics", "create", "orders", "--dsn", dsn)
    assert_refused(
        txnq("produce", "orders", "-m", "no", "--dsn", app_role.dsn),
        f"txnq topics grant orders --role {app_role.name} --action",
    )
    granted = ok_json(
        *("topics", "grant", "orders", "--role", app_role.name, "--action", "produce"),
        *("--action", "consume", "--dsn", dsn),
    )
    assert granted["added"] == 2
    assert sorted(g["action"] for g in granted["grants"]) == ["consume", "produce"]
    ok("topics", "grant", "team.", "--prefix", "--role", app_role.name, "-a", "admin", "--dsn", dsn)
    ok("produce", "orders", "-m", "yes", "--dsn", app_role.dsn)

    listed = ok_json("topics", "permissions", "orders", "--dsn", dsn)
    assert [(g["resource"], g["kind"], g["action"]) for g in listed] == [
        ("orders", "topic", "consume"),
        ("orders", "topic", "produce"),
    ]
    table = ok("topics", "permissions", "--role", app_role.name, "--dsn", dsn).stdout
    assert "team." in table and "prefix" in table and "orders" in table

    assert ok_json(*("topics", "revoke", "orders", "--role", app_role.name, "--dsn", dsn)) == {
        "removed": 2
    }
    assert_refused(
        txnq("topics", "grant", "orders", "--role", "x'; DROP TABLE txnq.topics; --", "-a",
             "produce", "--dsn", dsn),
        "role name",
    )  # fmt: skip
    assert_refused(
        txnq("topics", "grant", "orders", "--role", app_role.name, "-a", "own", "--dsn", dsn),
        "unknown action",
    )


# -- produce and consume ----------------------------------------------------------


def test_produce_then_consume_returns_the_values(dsn: str) -> None:
    ok("topics", "create", "orders", "--partitions", "2", "--dsn", dsn)
    sent = ok_json(
        *("produce", "orders", "-m", "first", "-m", "zweite ✓", "--key", "customer-7"),
        *("--property", "source=cli", "--property", "trace=a=b", "--dsn", dsn),
    )
    assert sent["sent"] == 2
    assert len(sent["message_ids"]) == 2
    assert sent["last_message_id"] == sent["message_ids"][-1]

    received = json_lines(
        ok(
            *("consume", "orders", "-s", "billing", "--initial-position", "earliest"),
            *("--count", "2", "--json", "--dsn", dsn),
        )
    )
    assert [m["value"] for m in received] == ["first", "zweite ✓"]
    assert {m["key"] for m in received} == {"customer-7"}
    assert received[0]["properties"] == {"source": "cli", "trace": "a=b"}
    assert received[0]["encoding"] == "utf-8"
    ids = [{k: m[k] for k in ("topic", "partition", "offset", "batch_index")} for m in received]
    assert ids == sent["message_ids"]
    datetime.fromisoformat(received[0]["publish_time"])

    # Acknowledged at the end: the subscription has nothing left to deliver.
    again = ok("consume", "orders", "-s", "billing", "--timeout", "300ms", "--json", "--dsn", dsn)
    assert json_lines(again) == []
    assert "Received and acknowledged 0 messages" in again.stderr


def test_consume_prints_a_table_and_binary_values_as_hex(dsn: str) -> None:
    ok("topics", "create", "orders", "--dsn", dsn)
    ok("produce", "orders", "-m", "hello [bold]world[/bold]", "--key", "k1", "--dsn", dsn)
    ok("produce", "orders", "--file", "-", "--dsn", dsn, input=b"\xff\xfe\n")

    result = ok(
        *("consume", "orders", "-s", "audit", "--initial-position", "earliest"),
        *("--count", "2", "--dsn", dsn),
    )
    assert "Partition" in result.stdout and "Value" in result.stdout
    assert "hello [bold]world[/bold]" in result.stdout  # user text is not rich markup
    assert "hex:fffe" in result.stdout


def test_consume_no_ack_leaves_the_messages_in_the_backlog(dsn: str) -> None:
    ok("topics", "create", "orders", "--dsn", dsn)
    ok("produce", "orders", "-m", "a", "-m", "b", "--dsn", dsn)
    consume = ("consume", "orders", "-s", "billing", "--initial-position", "earliest")

    first = ok(*consume, "--count", "2", "--no-ack", "--json", "--dsn", dsn)
    again = ok(*consume, "--count", "2", "--json", "--dsn", dsn)

    assert [m["value"] for m in json_lines(first)] == ["a", "b"]
    assert [m["value"] for m in json_lines(again)] == ["a", "b"]
    assert "not acknowledged" in first.stderr


def test_consume_stops_after_count_and_acknowledges_only_what_it_printed(dsn: str) -> None:
    ok("topics", "create", "orders", "--dsn", dsn)
    ok("produce", "orders", *(f"-m{i}" for i in range(5)), "--dsn", dsn)
    consume = ("consume", "orders", "-s", "billing", "--initial-position", "earliest", "--json")

    first = json_lines(ok(*consume, "--count", "2", "--dsn", dsn))
    rest = json_lines(ok(*consume, "--timeout", "300ms", "--dsn", dsn))

    assert [m["value"] for m in first] == ["0", "1"]
    assert [m["value"] for m in rest] == ["2", "3", "4"]


def test_produce_reads_one_message_per_line_and_repeats_them(dsn: str) -> None:
    ok("topics", "create", "lines", "--dsn", dsn)
    sent = ok_json(
        "produce", "lines", "--file", "-", "--count", "2", "--dsn", dsn, input="one\ntwo\r\n"
    )
    assert sent["sent"] == 4

    received = json_lines(
        ok(
            *("consume", "lines", "-s", "s", "--initial-position", "earliest"),
            *("--count", "4", "--json", "--dsn", dsn),
        )
    )
    assert [m["value"] for m in received] == ["one", "two", "one", "two"]


def test_produce_from_a_file(dsn: str, tmp_path: Path) -> None:
    ok("topics", "create", "lines", "--dsn", dsn)
    path = tmp_path / "messages.txt"
    path.write_text("alpha\nbeta\n")

    result = ok("produce", "lines", "-m", "first", "--file", str(path), "--dsn", dsn)

    assert "Sent 3 messages to lines" in result.stdout
    assert "last message id lines:0:" in result.stdout


def test_produce_many_messages_reports_the_count_and_last_id(dsn: str) -> None:
    ok("topics", "create", "bulk", "--partitions", "2", "--dsn", dsn)

    sent = ok_json("produce", "bulk", "-m", "x", "--count", "2500", "--dsn", dsn)

    assert sent["sent"] == 2500
    assert "message_ids" not in sent
    assert sent["last_message_id"]["topic"] == "bulk"
    backlog = ok_json("topics", "describe", "bulk", "--dsn", dsn)["partitions"]
    assert sum(p["high_watermark"] + 1 for p in backlog) >= 2  # batched into entries


# -- subscriptions -----------------------------------------------------------------


def test_subscriptions_list_describe_reset_delete(dsn: str) -> None:
    ok("topics", "create", "orders", "--partitions", "2", "--dsn", dsn)
    ok("produce", "orders", "-m", "a", "-m", "b", "-m", "c", "--key", "k", "--dsn", dsn)
    consume = ("consume", "orders", "-s", "billing", "--initial-position", "earliest", "--json")
    assert len(json_lines(ok(*consume, "--count", "3", "--dsn", dsn))) == 3

    listed = ok_json("subscriptions", "list", "orders", "--dsn", dsn)
    assert [(s["name"], s["subscription_type"], s["consumers"]) for s in listed] == [
        ("billing", "exclusive", 0)
    ]
    described = ok_json("subscriptions", "describe", "orders", "billing", "--dsn", dsn)
    assert described["topic"] == "orders"
    assert described["subscription"]["name"] == "billing"
    assert [c["partition"] for c in described["cursors"]] == [0, 1]
    assert described["consumers"] == []
    table = ok("subscriptions", "describe", "orders", "billing", "--dsn", dsn).stdout
    assert "Cursors" in table and "Mark delete" in table and "Consumers: none" in table

    reset = ok_json("subscriptions", "reset", "orders", "billing", "--to", "earliest", "--dsn", dsn)
    assert reset["subscription"] == "billing"
    assert {c["mark_delete_offset"] for c in reset["cursors"]} == {-1}
    assert [m["value"] for m in json_lines(ok(*consume, "--count", "3", "--dsn", dsn))] == [
        "a",
        "b",
        "c",
    ]

    ok("subscriptions", "reset", "orders", "billing", "--to", "latest", "--dsn", dsn)
    assert json_lines(ok(*consume, "--timeout", "300ms", "--dsn", dsn)) == []

    an_hour_ago = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    ok("subscriptions", "reset", "orders", "billing", "--to", an_hour_ago, "--dsn", dsn)
    assert len(json_lines(ok(*consume, "--count", "3", "--dsn", dsn))) == 3

    ok("subscriptions", "reset", "orders", "billing", "--to", "0", "--dsn", dsn)

    assert ok_json("subscriptions", "delete", "orders", "billing", "--dsn", dsn) == {
        "topic": "orders",
        "deleted": "billing",
    }
    assert ok_json("subscriptions", "list", "orders", "--dsn", dsn) == []


# -- errors ---------------------------------------------------------------------------


def test_a_bad_topic_name_is_refused_in_one_line(dsn: str) -> None:
    assert_refused(txnq("topics", "create", "bad name", "--dsn", dsn), "'bad name' is not valid")


def test_an_unknown_topic_is_refused_in_one_line(dsn: str) -> None:
    for args in (
        ("topics", "describe", "nope"),
        ("topics", "delete", "nope"),
        ("produce", "nope", "-m", "x"),
        ("consume", "nope", "-s", "s"),
        ("subscriptions", "list", "nope"),
    ):
        assert_refused(txnq(*args, "--dsn", dsn), "topic 'nope' does not exist")


def test_bad_options_are_refused_in_one_line(dsn: str) -> None:
    ok("topics", "create", "orders", "--dsn", dsn)
    assert_refused(txnq("topics", "create", "t2", "--retention", "7x", "--dsn", dsn), "7x")
    assert_refused(txnq("topics", "create", "t3", "--partitions", "0", "--dsn", dsn), "1 to 4096")
    assert_refused(txnq("topics", "create", "orders", "--dsn", dsn), "orders")
    assert_refused(txnq("produce", "orders", "--dsn", dsn), "nothing to send")
    assert_refused(txnq("produce", "orders", "-m", "x", "-P", "novalue", "--dsn", dsn), "KEY=VALUE")
    assert_refused(
        txnq("produce", "orders", "--file", "/no/such/file", "--dsn", dsn), "/no/such/file"
    )
    assert_refused(txnq("consume", "orders", "-s", "s", "--timeout", "soon", "--dsn", dsn), "soon")
    assert_refused(
        txnq("subscriptions", "describe", "orders", "ghost", "--dsn", dsn), "no subscription"
    )
    assert_refused(
        txnq("subscriptions", "reset", "orders", "ghost", "--to", "earliest", "--dsn", dsn),
        "no subscription",
    )
    ok("consume", "orders", "-s", "s", "--timeout", "0.1s", "--dsn", dsn)
    assert_refused(
        txnq("subscriptions", "reset", "orders", "s", "--to", "yesterday", "--dsn", dsn),
        "'yesterday'",
    )


def test_an_unreachable_database_is_refused_in_one_line(dsn: str) -> None:
    missing = urlunsplit(urlsplit(dsn)._replace(path="/cli_no_such_database"))
    assert_refused(txnq("topics", "list", "--dsn", missing), "cli_no_such_database")
    assert_refused(txnq("migrate", "--dsn", missing), "cli_no_such_database")


def test_usage_errors_exit_2() -> None:
    assert txnq("consume", "orders").exit_code == 2  # --subscription is required
    assert txnq("consume", "orders", "-s", "s", "--type", "fanout").exit_code == 2
    assert txnq("topics", "frobnicate").exit_code == 2


def test_help_works_for_every_group_and_command() -> None:
    # Every command's page is rendered and checked in tests/unit/test_cli_rendering.py.
    for command in ([], ["topics"], ["topics", "create"], ["server", "start"]):
        assert ok(*command, "--help").stdout.startswith("Usage: txnq")
        assert ok(*command, "-h").stdout.startswith("Usage: txnq")


def test_version() -> None:
    assert ok("--version").stdout.startswith("txnq ")


# -- transactions -----------------------------------------------------------------------


def test_txn_list_describe_abort_and_find_hanging(dsn: str) -> None:
    import txnq as txnq_lib

    ok("topics", "create", "orders", "--partitions", "2", "--dsn", dsn)
    ok("produce", "orders", "-m", "in", "--dsn", dsn)
    with txnq_lib.Client(dsn) as client:
        consumer = client.subscribe("orders", "etl", initial_position="earliest")
        message = consumer.receive(timeout=5)
        assert message is not None
        producer = client.producer("orders")
        committed = client.new_transaction()
        producer.send("kept", partition=0, txn=committed)
        committed.commit()
        hanging = client.new_transaction(timeout="200ms")
        producer.send("stuck", partition=1, txn=hanging)
        consumer.acknowledge(message, txn=hanging)
        time.sleep(0.4)  # past its timeout, and no scheduler runs here

        listed = ok_json("txn", "list", "--dsn", dsn)
        assert [t["id"] for t in listed] == [str(hanging.txn_id), str(committed.txn_id)]
        open_only = ok_json("txn", "list", "--state", "open", "--dsn", dsn)
        assert [t["id"] for t in open_only] == [str(hanging.txn_id)]
        assert ok_json("txn", "list", "--older-than", "1h", "--dsn", dsn) == []
        assert str(committed.txn_id) in ok("txn", "list", "--dsn", dsn).stdout

        found = txnq("txn", "find-hanging", "--grace", "0s", "--json", "--dsn", dsn)
        assert found.exit_code == 1  # scripts can alert on it
        rows = json.loads(found.stdout)
        assert {(r["id"], r["topic"], r["partition"], r["why"]) for r in rows} == {
            (str(hanging.txn_id), "orders", 1, "open past its timeout")
        }
        # Within the default grace (10s) the scheduler would still abort it: not hanging.
        assert "Hanging transactions: none" in ok("txn", "find-hanging", "--dsn", dsn).stdout
        assert (
            "open past its timeout"
            in txnq("txn", "find-hanging", "--grace", "0", "--dsn", dsn).stdout
        )

        described = ok_json("txn", "describe", str(hanging.txn_id), "--dsn", dsn)
        assert described["transaction"]["state"] == "OPEN"
        assert described["transaction"]["overdue_seconds"] > 0
        # "in" went to a round-robin partition (the round robin starts at a
        # random one): partition 1 held it or nothing before "stuck".
        first_offset = 1 if message.partition == 1 else 0
        assert described["partitions"] == [
            {"topic": "orders", "partition": 1, "first_offset": first_offset, "marker_offset": None}
        ]
        assert described["subscriptions"][0]["pending_acks"] == 1
        assert [h["state"] for h in described["history"]] == ["OPEN"]
        table = ok("txn", "describe", str(hanging.txn_id), "--dsn", dsn).stdout
        assert "Partitions written" in table and "History" in table

        aborted = ok_json("txn", "abort", str(hanging.txn_id), "--dsn", dsn)
        assert (aborted["state"], aborted["reason"]) == ("ABORTED", "admin")
        # The abort is finished: nothing hangs, the ack is released, the client is told.
        assert ok_json("txn", "find-hanging", "--grace", "0s", "--dsn", dsn) == []
        history = ok_json("txn", "describe", str(hanging.txn_id), "--dsn", dsn)["history"]
        assert [h["state"] for h in history] == ["OPEN", "ABORTING", "ABORTED"]
        assert consumer.receive(timeout=5) is not None  # redelivered
        with pytest.raises(txnq_lib.errors.TransactionEndedError):
            producer.send("late", txn=hanging)

        assert_refused(
            txnq("txn", "abort", str(committed.txn_id), "--dsn", dsn), "COMMITTED", "cannot"
        )
    assert_refused(txnq("txn", "describe", "9:999", "--dsn", dsn), "does not exist")
    assert_refused(txnq("txn", "describe", "x", "--dsn", dsn), "not a transaction id")
    assert_refused(txnq("txn", "list", "--state", "bogus", "--dsn", dsn), "state must be")
    assert_refused(txnq("txn", "list", "--older-than", "soon", "--dsn", dsn), "older_than")


# -- migrate and the embedded server ----------------------------------------------------


def test_migrate_is_idempotent_and_reports_the_revision(dsn: str) -> None:
    assert ok_json("migrate", "--dsn", dsn) == {
        "revision": head_revision(),
        "head": head_revision(),
    }
    assert "up to date" in ok("migrate", "--dsn", dsn).stdout


def test_server_status_and_stop_of_a_home_without_a_server(tmp_path: Path) -> None:
    home = tmp_path / "no-server"

    status = ok_json("server", "status", "--home", str(home))
    stopped = ok_json("server", "stop", "--home", str(home))

    assert status["running"] is False
    assert status["port"] == DEFAULT_PORT  # where its first start will listen
    assert status["dsn"] == f"postgresql://postgres@127.0.0.1:{DEFAULT_PORT}/txnq"
    assert status["home"] == str(home)
    assert stopped == {"home": str(home), "was_running": False, "running": False}
    assert "running" in ok("server", "status", "--home", str(home)).stdout


# -- processes: standalone and the scheduler worker -------------------------------------


def _cli_process(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-u", "-m", "txnq.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def _read_until(process: subprocess.Popen[str], pattern: str, stream: str = "stdout") -> str:
    """Lines of the process's stream until one matches ``pattern``; its first group."""
    pipe = process.stdout if stream == "stdout" else process.stderr
    assert pipe is not None
    deadline = time.monotonic() + STARTUP_TIMEOUT_SECONDS
    seen: list[str] = []
    while time.monotonic() < deadline:
        line = pipe.readline()
        if not line:
            break
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match.group(1)
    process.kill()
    _, rest = process.communicate(timeout=10)
    raise AssertionError(f"no line matched {pattern!r} in {''.join(seen)!r}; stderr: {rest}")


def _stop(process: subprocess.Popen[str], signum: int) -> tuple[int, str, str]:
    process.send_signal(signum)
    try:
        out, err = process.communicate(timeout=STARTUP_TIMEOUT_SECONDS)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    return process.returncode, out, err


def test_consume_until_stopped_acknowledges_what_it_printed(dsn: str) -> None:
    ok("topics", "create", "orders", "--dsn", dsn)
    process = _cli_process(
        *("consume", "orders", "-s", "tail", "--timeout", "0", "--json", "--dsn", dsn)
    )
    _read_until(process, r"(Ctrl-C to stop)", stream="stderr")
    ok("produce", "orders", "-m", "live", "--dsn", dsn)
    assert _read_until(process, r'"value": "(\w+)"') == "live"

    code, _, err = _stop(process, signal.SIGTERM)

    assert code == 0, err
    assert "Received and acknowledged 1 message" in err
    cursors = ok_json("subscriptions", "describe", "orders", "tail", "--dsn", dsn)["cursors"]
    assert cursors[0]["backlog_entries"] == 0


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A home for an embedded server, which is stopped if a test left it running."""
    home = tmp_path / "txnq-home"
    yield home
    EmbeddedServer(home).stop()


def test_standalone_serves_until_ctrl_c_then_stops_its_server(home: Path) -> None:
    process = _cli_process("standalone", "--home", str(home), "--port", str(free_tcp_port()))
    dsn = _read_until(process, r"^export TXNQ_DSN=(\S+)")

    with psycopg.connect(dsn, connect_timeout=10) as conn:
        revision = conn.execute("SELECT version_num FROM txnq.alembic_version").fetchone()
    assert revision == (head_revision(),)
    assert EmbeddedServer(home).is_running()

    code, _, err = _stop(process, signal.SIGINT)

    assert code == 0, err
    assert "Traceback" not in err
    assert "Stopped PostgreSQL" in err
    assert not EmbeddedServer(home).is_running()


def test_standalone_json_is_one_line_naming_the_dsn_and_its_kept_port(home: Path) -> None:
    port = free_tcp_port()
    process = _cli_process("standalone", "--home", str(home), "--port", str(port), "--json")
    line = _read_until(process, r"^(\{.*\})$")

    banner = json.loads(line)
    assert banner["dsn"] == f"postgresql://postgres@127.0.0.1:{port}/txnq"
    assert (banner["port"], banner["started"], banner["revision"]) == (port, True, head_revision())
    assert "abort_timed_out" in banner["jobs"] and banner["coordinator"] is True
    # The web console is served too (docs/console.md).
    with urllib.request.urlopen(banner["console"] + "api/whoami", timeout=10) as response:
        assert json.loads(response.read())["revision"] == head_revision()
    code, _, err = _stop(process, signal.SIGTERM)
    assert code == 0, err
    assert (home / "port").read_text().strip() == str(port)


def test_standalone_leaves_running_a_server_it_did_not_start(home: Path) -> None:
    server = EmbeddedServer(home, port=free_tcp_port())
    dsn = server.start()
    process = _cli_process("standalone", "--home", str(home), "--no-workers")
    assert _read_until(process, r"^export TXNQ_DSN=(\S+)") == dsn

    code, _, err = _stop(process, signal.SIGTERM)

    assert code == 0, err
    assert "Traceback" not in err
    assert "keeps running" in err
    assert server.is_running()


def test_worker_coordinator_finishes_a_decided_transaction_then_stops(dsn: str) -> None:
    import txnq as txnq_lib

    ok("topics", "create", "orders", "--dsn", dsn)
    with txnq_lib.Client(dsn) as client:
        txn = client.new_transaction()
        client.producer("orders").send("x", txn=txn)
        txn.commit(wait=False)  # the decision only: a worker writes the marker
    process = _cli_process("worker", "coordinator", "--dsn", dsn)
    _read_until(process, r"transaction (\S+) committed", stream="stderr")

    code, _, err = _stop(process, signal.SIGTERM)

    assert code == 0, err
    assert "Traceback" not in err
    assert ok_json("txn", "describe", str(txn.txn_id), "--dsn", dsn)["transaction"]["state"] == (
        "COMMITTED"
    )


def test_worker_scheduler_publishes_settings_and_rolls_the_entry_log(dsn: str) -> None:
    process = _cli_process(
        "worker", "scheduler", "--dsn", dsn, env={"TXNQ_ENTRY_LOG_MAX_AGE_SECONDS": "1234"}
    )
    _read_until(process, r"job (roll_entry_log): the active entry log", stream="stderr")

    code, _, err = _stop(process, signal.SIGTERM)

    assert code == 0, err
    assert "Traceback" not in err
    with psycopg.connect(dsn) as conn:
        row = conn.execute("SELECT entry_log_max_age_seconds FROM txnq.config").fetchone()
    assert row is not None and float(row[0]) == 1234


def test_scheduler_skips_a_job_that_another_process_runs(
    dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    from txnq.workers.scheduler import JOBS, Scheduler, _JobRunner

    logging.getLogger("txnq.workers.scheduler").addHandler(caplog.handler)
    roll = next(job for job in JOBS if job.name == "roll_entry_log")
    scheduler = Scheduler(dsn, jobs=[])
    scheduler.start()
    try:
        assert scheduler.client is not None
        runner = _JobRunner(roll, scheduler.client)
        with psycopg.connect(dsn, autocommit=True) as other:
            other.execute("SELECT pg_advisory_lock(hashtext(%s))", (roll.lock_key,))
            with caplog.at_level("DEBUG", logger="txnq.workers.scheduler"):
                runner()
            assert "another process is running it" in caplog.text
            other.execute("SELECT pg_advisory_unlock(hashtext(%s))", (roll.lock_key,))
        caplog.clear()
        with caplog.at_level("INFO", logger="txnq.workers.scheduler"):
            runner()
        assert "the active entry log" in caplog.text
        runner.close()
    finally:
        scheduler.shutdown()
        logging.getLogger("txnq.workers.scheduler").removeHandler(caplog.handler)


def test_server_start_keeps_its_port_so_the_dsn_survives_a_restart(home: Path) -> None:
    port = free_tcp_port()
    started = ok_json("server", "start", "--home", str(home), "--port", str(port))
    assert started["dsn"] == f"postgresql://postgres@127.0.0.1:{port}/txnq"
    assert started["revision"] == head_revision()

    assert ok_json("server", "stop", "--home", str(home))["was_running"] is True
    again = ok_json("server", "start", "--home", str(home))  # no --port: the home keeps it

    assert again["dsn"] == started["dsn"]
    assert ok_json("topics", "list", "--dsn", again["dsn"]) == []


def test_a_taken_port_is_refused_naming_the_setting_that_changes_it(home: Path) -> None:
    import socket

    port = free_tcp_port()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", port))
        taken.listen()
        refused = txnq("server", "start", "--home", str(home), "--port", str(port))

    assert refused.exit_code == 1, refused.output
    error = refused.stderr.strip().splitlines()[-1]  # after the note that it starts
    assert error.startswith(f"error: port {port} on 127.0.0.1 is taken"), refused.stderr
    assert "TXNQ_EMBEDDED_PORT" in error and "--port" in error
    assert "Traceback" not in refused.output


def test_errors_under_json_are_json_on_standard_error(dsn: str) -> None:
    result = txnq("topics", "describe", "nowhere", "--json", "--dsn", dsn)

    assert result.exit_code == 1
    assert result.stdout == ""
    error = json.loads(result.stderr)
    assert error["type"] == "TopicNotFoundError", error
    assert "nowhere" in error["error"]


def test_a_new_topic_says_none_where_nothing_is_kept(dsn: str) -> None:
    shown = " ".join(ok("topics", "create", "orders", "--dsn", dsn).stdout.split())

    assert "retention none" in shown
    assert "retention size none" in shown
    assert "ttl none" in shown
    assert "0s" not in shown
