"""The PostgreSQL roles of revision 0007 (migrations/sql/0007/schema/0007_roles.sql): each
does what it is for and nothing more. Every test logs in as a temporary LOGIN
role that is a member of one txnq role only, and is not a superuser.

Roles are cluster-wide and tests run in parallel databases of one server:
the login roles have unique names and are dropped afterwards (they own
nothing, so DROP ROLE needs no REASSIGN).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote, urlsplit

import psycopg
import pytest
from psycopg import errors as pg_errors

import txnq
from tests.helpers import Login, drop_role, dsn_as_user, receive_messages, sql_value
from txnq.database import migrate

FAST = {"poll_interval": 0.05}
TXNQ_ROLES = ("txnq_admin", "txnq_client", "txnq_worker", "txnq_reader", "txnq_scheduler")


@pytest.fixture
def login_as(make_login: Callable[..., Login]) -> Callable[[str], str]:
    """``login_as("txnq_client")``: the DSN of a new LOGIN role granted that role only."""
    return lambda group: make_login(group).dsn


def denied(conn: psycopg.Connection, statements: list[str]) -> None:
    """Each statement fails for want of privilege (in its own transaction)."""
    for statement in statements:
        with pytest.raises(pg_errors.InsufficientPrivilege), conn.transaction():
            conn.execute(statement)


def test_the_roles_exist_cannot_log_in_and_admin_owns_the_schema(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        roles = conn.execute(
            "SELECT rolname, rolcanlogin, rolsuper, rolcreaterole, rolcreatedb FROM pg_roles "
            "WHERE rolname = ANY(%s) ORDER BY rolname",
            (list(TXNQ_ROLES),),
        ).fetchall()
        assert roles == [(name, False, False, False, False) for name in sorted(TXNQ_ROLES)]
        owners = conn.execute(
            "SELECT DISTINCT pg_get_userbyid(relowner) FROM pg_class "
            "WHERE relnamespace = 'txnq'::regnamespace AND relkind IN ('r', 'p', 'v', 'S')"
            " UNION SELECT DISTINCT pg_get_userbyid(proowner) FROM pg_proc "
            "WHERE pronamespace = 'txnq'::regnamespace"
            " UNION SELECT pg_get_userbyid(nspowner) FROM pg_namespace WHERE nspname = 'txnq'"
        ).fetchall()
        assert owners == [("txnq_admin",)]


def test_txnq_client_produces_consumes_and_commits_through_functions_only(
    dsn: str, make_login: Callable[..., Login]
) -> None:
    """An application role with grants on its topics (docs/security.md) does
    everything through txnq's functions; it holds no privilege on any table."""
    app = make_login("txnq_client")
    with txnq.Client(dsn) as owner:
        owner.admin.grant(app.name, prefix="orders", actions=["admin"])
        owner.admin.grant(app.name, topic="results", actions=["admin"])
    with txnq.Client(app.dsn) as client:
        client.admin.create_topic("orders", partitions=2)
        client.admin.create_topic("results")
        consumer = client.subscribe("orders", "billing", initial_position="earliest", **FAST)
        # An append that finds the entry log full rolls it: DDL on txnq.entries
        # through roll_entry_log_v2 (runs as its owner). Forcing a roll is the
        # scheduler's (an application could make partitions without bound).
        assert sql_value(dsn, "SELECT txnq.roll_entry_log_v2(true)") == 2
        with client.producer("orders") as producer:
            for i in range(4):
                producer.send(f"m{i}", key=f"k{i}")
        messages = receive_messages(consumer, 4)
        with client.producer("results") as results:
            with client.new_transaction() as txn:
                for message in messages:
                    results.send(message.value, txn=txn)
                    consumer.acknowledge(message, txn=txn)
            assert txn.state == "COMMITTED"
        out = client.subscribe("results", "audit", initial_position="earliest", **FAST)
        assert sorted(m.value for m in receive_messages(out, 4)) == [b"m0", b"m1", b"m2", b"m3"]

    # The rows landed in the entry log rolled to, a partition that txnq_admin
    # created after the migration: no default privilege hands it to the client.
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries_000002") >= 5
    with psycopg.connect(app.dsn, autocommit=True) as conn:
        assert conn.execute("SELECT tc_count FROM txnq.txn_limits_v1()").fetchone() == (16,)
        denied(
            conn,
            [
                "SELECT count(*) FROM txnq.entries_000002",
                "SELECT tc_count FROM txnq.config",
                "UPDATE txnq.transactions SET state = 'COMMITTED' WHERE state = 'ABORTED'",
                "UPDATE txnq.cursors SET mark_delete_offset = mark_delete_offset + 1",
                "DELETE FROM txnq.subscriptions",
                "DROP TABLE txnq.entries",
                "TRUNCATE txnq.topics",
                "ALTER TABLE txnq.topics ADD COLUMN x integer",
                "CREATE TABLE txnq.mine (x integer)",
                "CREATE INDEX ON txnq.entries (publish_time)",
                "DROP FUNCTION txnq.append_v3",
                "CREATE OR REPLACE FUNCTION txnq.f() RETURNS integer LANGUAGE sql AS 'SELECT 1'",
                "ALTER TABLE txnq.entries DETACH PARTITION txnq.entries_000001",
                "UPDATE txnq.config SET tc_count = 1",
                "UPDATE txnq.alembic_version SET version_num = '0001'",
                "SELECT txnq.grant_roles_v1()",
                "SELECT txnq.grant_roles_v2()",
                "SELECT txnq.compaction_begin_v1(1)",  # the scheduler's, not a client's
                "SELECT txnq.abort_timed_out_v1(10)",
                "SELECT txnq.authorize_v1(1, 'admin')",  # internal helpers: no EXECUTE
            ],
        )
        with pytest.raises(psycopg.Error) as forced:
            conn.execute("SELECT txnq.roll_entry_log_v2(true)")
        assert forced.value.sqlstate == "TQ018"
        assert conn.execute("SELECT txnq.schema_revision_v1()").fetchone() == (
            migrate.head_revision(),
        )


def test_txnq_reader_reads_views_and_cannot_insert(
    dsn: str, login_as: Callable[[str], str]
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders")
    with psycopg.connect(login_as("txnq_reader"), autocommit=True) as conn:
        assert conn.execute("SELECT topic FROM txnq.topic_status").fetchall() == [("orders",)]
        denied(
            conn,
            [
                "INSERT INTO txnq.topics (name) VALUES ('x')",
                "SELECT * FROM txnq.entries",
                "SELECT * FROM txnq.topics",
                # views that carry payloads are not the reader's
                "SELECT * FROM txnq.messages",
                "SELECT * FROM txnq.committed_messages",
                "DELETE FROM txnq.gc_history",
                "SELECT txnq.roll_entry_log_v1(true)",  # SECURITY DEFINER: not for PUBLIC
                "CREATE TABLE txnq.mine (x integer)",
            ],
        )
    assert sql_value(dsn, "SELECT count(*) FROM txnq.topics") == 1


def test_txnq_worker_runs_the_marker_phase_and_nothing_of_the_lifecycle(
    dsn: str, login_as: Callable[[str], str]
) -> None:
    with psycopg.connect(login_as("txnq_worker"), autocommit=True) as conn:
        conn.execute("SELECT * FROM txnq.coordinator_decided_v1(ARRAY[0, 1], 0, 10)")
        conn.execute("SELECT count(*) FROM txnq.transactions")  # and the metrics' reads
        denied(
            conn,
            [
                "UPDATE txnq.config SET updated_at = now()",  # the scheduler publishes settings
                "SELECT * FROM txnq.abort_timed_out_v1(10)",
                "SELECT txnq.compaction_begin_v1(1)",
                "SELECT txnq.roll_entry_log_v2(false)",
                "SELECT * FROM txnq.expire_ttl_v1(1)",
                "UPDATE txnq.transactions SET state = 'COMMITTED'",
                "DROP TABLE txnq.transactions",
                "CREATE TABLE txnq.mine (x integer)",
                "UPDATE txnq.alembic_version SET version_num = '0001'",
            ],
        )


def test_txnq_scheduler_publishes_settings_and_runs_the_lifecycle_only(
    dsn: str, login_as: Callable[[str], str]
) -> None:
    with psycopg.connect(login_as("txnq_scheduler"), autocommit=True) as conn:
        conn.execute("UPDATE txnq.config SET updated_at = now()")
        conn.execute("SELECT * FROM txnq.abort_timed_out_v1(10)")
        assert conn.execute("SELECT txnq.roll_entry_log_v2(true)").fetchone() == (2,)
        denied(
            conn,
            [
                "SELECT * FROM txnq.complete_txn_v1(0, 1)",  # the coordinator's
                "SELECT * FROM txnq.open_txn_v1(0, 10)",  # the applications'
                "UPDATE txnq.transactions SET state = 'COMMITTED'",
                "SELECT payloads FROM txnq.entries",
                "DROP TABLE txnq.transactions",
                "CREATE TABLE txnq.mine (x integer)",
            ],
        )


def test_objects_of_a_later_revision_are_granted_by_the_next_migrate(
    dsn: str, login_as: Callable[[str], str]
) -> None:
    """What a later revision adds needs no grants of its own: migrate makes a
    new function SECURITY DEFINER and grants it to the applications, keeps
    every table from them, and shows a new view to the reader."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("CREATE TABLE txnq.later_feature (id bigserial PRIMARY KEY, note text)")
        conn.execute("CREATE VIEW txnq.later_status AS SELECT count(*) AS n FROM txnq.topics")
        conn.execute(
            "CREATE FUNCTION txnq.later_v1() RETURNS bigint LANGUAGE sql"
            " AS 'SELECT count(*) FROM txnq.later_feature'"
        )
    migrate.upgrade(dsn)  # at head already: only the grants run
    assert (
        sql_value(
            dsn,
            "SELECT pg_get_userbyid(relowner) FROM pg_class "
            "WHERE oid = 'txnq.later_feature'::regclass",
        )
        == "txnq_admin"
    )
    with psycopg.connect(login_as("txnq_client"), autocommit=True) as conn:
        assert conn.execute("SELECT txnq.later_v1()").fetchone() == (0,)
        denied(
            conn,
            [
                "INSERT INTO txnq.later_feature (note) VALUES ('no')",
                "SELECT * FROM txnq.later_feature",
                "DROP TABLE txnq.later_feature",
            ],
        )
    with psycopg.connect(login_as("txnq_reader"), autocommit=True) as conn:
        assert conn.execute("SELECT n FROM txnq.later_status").fetchone() == (0,)
        denied(conn, ["SELECT * FROM txnq.later_feature", "SELECT txnq.later_v1()"])


def test_the_compose_init_script_creates_a_least_privilege_coordinator_login(dsn: str) -> None:
    """docker/postgres-init/10-txnq-roles.sh, run as the postgres image runs it
    (psql as POSTGRES_USER on POSTGRES_DB), twice: the login role it makes
    is a txnq_worker, with the password given, and no DDL."""
    psql = shutil.which("psql")
    if psql is None:
        pytest.skip("no psql on PATH: install the PostgreSQL client to run the init script")
    script = Path(__file__).resolve().parents[2] / "docker" / "postgres-init" / "10-txnq-roles.sh"
    role, password = f"txnq_test_coord_{uuid.uuid4().hex[:10]}", uuid.uuid4().hex
    parts = urlsplit(dsn)
    env = {
        "PATH": os.environ["PATH"],
        "PGHOST": parts.hostname or "127.0.0.1",
        "PGPORT": str(parts.port or 5432),
        "PGPASSWORD": unquote(parts.password or ""),
        "POSTGRES_USER": unquote(parts.username or "postgres"),
        "POSTGRES_DB": parts.path.lstrip("/"),
        "TXNQ_WORKER_PASSWORD": password,
        "TXNQ_WORKER_ROLE": role,
    }
    try:
        for _ in range(2):
            result = subprocess.run(
                ["sh", str(script)], env=env, capture_output=True, text=True, timeout=60
            )
            assert result.returncode == 0, result.stderr
        with psycopg.connect(dsn_as_user(dsn, role, password), autocommit=True) as conn:
            assert conn.execute(
                "SELECT rolsuper, pg_has_role(current_user, 'txnq_worker', 'MEMBER'),"
                " pg_has_role(current_user, 'txnq_admin', 'MEMBER')"
                " FROM pg_roles WHERE rolname = current_user"
            ).fetchone() == (False, True, False)
            conn.execute("SELECT count(*) FROM txnq.transactions")
            denied(conn, ["DROP TABLE txnq.transactions", "CREATE TABLE txnq.mine (x int)"])
    finally:
        drop_role(dsn, role)


def test_entry_log_partitions_made_at_run_time_belong_to_txnq_admin(
    dsn: str, login_as: Callable[[str], str]
) -> None:
    """Whoever rolls the entry log or starts a compaction (a client's append,
    a scheduler logged in as any member of txnq_admin), the new partition is
    txnq_admin's: the reader's inspection function, owned by txnq_admin, can
    count it, and the client's default privileges apply."""
    assert sql_value(dsn, "SELECT txnq.roll_entry_log_v1(true)") == 2  # seals entry log 1
    assert sql_value(dsn, "SELECT txnq.compaction_begin_v1(1)") == 3
    owners = sql_value(
        dsn,
        "SELECT array_agg(DISTINCT pg_get_userbyid(relowner)) FROM pg_class"
        " WHERE relnamespace = 'txnq'::regnamespace AND relname ~ '^entries_[0-9]+$'",
    )
    assert owners == ["txnq_admin"]
    with psycopg.connect(login_as("txnq_reader"), autocommit=True) as conn:
        rows = conn.execute(
            "SELECT entry_log_id, entries FROM txnq.entry_log_status ORDER BY 1"
        ).fetchall()
        assert rows == [(1, 0), (2, 0), (3, 0)]
