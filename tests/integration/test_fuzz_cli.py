"""Fuzzing the command line with hypothesis: random arguments to the commands
that write (topics create, produce, consume, txn abort, subscriptions reset)
end with exit code 0, 1 (an error line) or 2 (usage), never a traceback, and
a refused command leaves the database unchanged."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

import txnq
from tests.fuzz_support import fingerprint
from txnq.cli import app

runner = CliRunner(env={"COLUMNS": "200", "TXNQ_DSN": None, "TXNQ_CONFIG": None})

arg = st.one_of(
    st.text(alphabet="ab-_./ %'\"é0123456789", max_size=40),
    st.sampled_from(["", "-1", "0", "4097", "1e9", "nan", "--", "-x", "t", "s", "9:9", "0:0"]),
    st.integers(-5, 10**6).map(str),
)

COMMANDS = [
    lambda a: ["topics", "create", a[0], "--partitions", a[1]],
    lambda a: ["topics", "create", a[0], "--retention", a[1], "--ttl", a[2]],
    lambda a: ["produce", a[0], "-m", a[1], "--key", a[2]],
    lambda a: ["produce", "t", "-m", a[0], "--partition", a[1]],
    lambda a: ["consume", a[0], "-s", a[1], "--count", a[2]],
    lambda a: ["consume", "t", "-s", "s", "--initial-position", a[0], "--count", "1"],
    lambda a: ["txn", "abort", a[0]],
    lambda a: ["subscriptions", "reset", a[0], a[1], "--to", a[2]],
    lambda a: ["topics", "delete", a[0]],
    lambda a: ["topics", "set-policy", "t", "--retention", a[0]],
]


@pytest.fixture
def db(dsn: str) -> Any:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("t", partitions=2)
        client.subscribe("t", "s").close()
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield dsn, conn


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(which=st.integers(0, len(COMMANDS) - 1), args=st.lists(arg, min_size=3, max_size=3))
def test_random_cli_arguments_fail_cleanly(db, which, args) -> None:  # type: ignore[no-untyped-def]
    dsn, conn = db
    argv = [*COMMANDS[which](args), "--dsn", dsn]
    if argv[0] == "consume":
        argv += ["--timeout", "0.2"]
    before = fingerprint(conn)
    result = runner.invoke(app, argv)
    assert result.exit_code in (0, 1, 2), (argv, result.exit_code, result.output)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        argv,
        repr(result.exception),
    )
    if result.exit_code != 0:
        assert fingerprint(conn) == before, (argv, result.output)
