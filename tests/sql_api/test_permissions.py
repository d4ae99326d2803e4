"""Permissions per topic (docs/security.md, revision 0015): every public txnq
function, found in pg_proc so that none is forgotten (the versions a later
revision adds included), is run as each kind of role and allows exactly what
that role may; application roles touch no table; a transaction belongs to the
role that opened it; hostile names are refused cleanly.

Roles are cluster-wide and tests run in parallel databases of one server:
each test makes its own LOGIN roles (unique names, dropped afterwards).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql as pgsql
from txnq.workers.scheduler_jobs import JOBS, JobContext

import txnq
from tests.fuzz_support import fingerprint
from tests.helpers import Login, running_coordinator, wait_until
from txnq import errors

DENIED = ("TQ018", "42501")
TOPIC = "perm.orders"
PREFIX = "perm."
FAST = {"poll_interval": 0.05}

# What each public function acts on, by base name (the name without _vN: a
# later version of a function lands in the class of its earlier ones). A
# function of schema txnq in none of these sets fails
# test_every_function_of_txnq_is_classified: say what it is for.
PRODUCE = {
    "append", "append_delayed", "register_producer", "stage_send", "send_at_commit",
    "append_packed",
}  # fmt: skip
CONSUME = {
    "fetch", "fetch_packed", "ack", "ack_shared", "claim", "nack_shared", "release_claims", "seek",
    "subscribe",
    "unsubscribe", "register_consumer", "heartbeat_consumer", "stage_ack", "cursor_generation",
    "cursor_positions", "close_consumer", "register_waiters", "next_visible_claim",
    "spark_partition_bounds", "spark_first_offset_at", "read_committed", "spark_ingestion_get",
    "spark_ingestion_create", "spark_ingestion_plan", "spark_ingestion_commit",
    "spark_ingestion_delete",
}  # fmt: skip
ADMIN = {
    "create_topic", "add_partitions", "delete_topic", "set_topic_policy", "set_backlog_quota",
    "grant_topic_permission", "revoke_topic_permission",
}  # fmt: skip
# Looking a topic up and describing it: any grant on it will do.
USE = {
    "topic_by_name", "topic_partition_count", "topic_partitions", "list_subscriptions",
    "subscription_by_name", "subscription_cursors", "subscription_consumers", "backlog_quota_info",
}  # fmt: skip
# Naming a transaction: the role that opened it (each role calls them on its own).
OWN_TXN = {
    "end_txn", "end_and_complete_txn", "complete_txn", "bind_txn", "txn_state", "txn_describe",
    "txn_describe_partitions", "txn_describe_subscriptions", "txn_history", "sink_begin",
    "sink_prepare", "sink_forget", "cluster_txn_prepare", "cluster_txn_apply", "cluster_end_txn",
}  # fmt: skip
# No topic named: every application role may (listings show only what it may see).
ANY_CLIENT = {
    "open_txn", "txn_limits", "schema_revision", "list_topics", "topic_permissions",
    "publish_staged", "discard_staged", "init_transactional_id", "spark_ingestion_list",
    "sink_pending", "sink_session_epoch", "sink_session_lock", "txn_list", "roll_entry_log",
    "console_role", "cluster_txn_mirror", "cluster_txn_writable",
}  # fmt: skip
PURE = {"key_hash", "key_owner", "partition_for_key"}
ADMIN_ONLY = {"txn_find_hanging", "console_record_action"}
COORDINATOR = {
    "complete_txn_partition", "complete_txn_subscription", "finish_txn", "complete_txn",
    "coordinator_decided", "coordinator_record_owner", "schema_revision",
}  # fmt: skip
SCHEDULER = {
    "abort_timed_out", "expire_ttl", "apply_retention", "check_backlog_quota", "entry_log_usage",
    "compaction_begin", "compaction_copy", "compaction_last_key", "compaction_catch_up",
    "compaction_swap", "compaction_abandon", "roll_entry_log", "unsubscribe", "schema_revision",
    "gc_drop_entry_log", "purge_history", "txn_log_maintain", "compaction_merge", "console_sample",
}  # fmt: skip
READER = {"entry_log_usage_inspect", "topic_permissions", "schema_revision", "console_role"}
CLIENT = PRODUCE | CONSUME | ADMIN | USE | OWN_TXN | ANY_CLIENT | PURE | ADMIN_ONLY
PUBLIC = CLIENT | COORDINATOR | SCHEDULER | READER
# Called only by other txnq functions: no role but the owner may execute them.
INTERNAL = {
    "find_duplicate", "txn_require_open", "apply_acks", "roll_ledger", "entry_log_needs_roll",
    "compaction_tables", "compaction_columns", "shared_advance", "dispatch_shared", "dead_letter",
    "claimed_messages", "check_ack_once", "subscription_backlog", "earliest_offset", "caller",
    "caller_role", "caller_is_trusted", "caller_is_admin", "permission_granted",
    "permission_denied", "topic_visible",
    "unfold_claim_ranges",  # revision 0027 (grant_roles_v6)
}  # fmt: skip
SHARED_SUBSCRIPTION = {"claim", "ack_shared", "nack_shared", "release_claims", "next_visible_claim"}

OPEN_TXN = "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 60)"
FUNCTIONS = """
SELECT p.proname, p.oid::regprocedure::text AS signature, p.pronargs, p.pronargdefaults,
       p.proargtypes::regtype[]::text[] AS types, p.proargnames AS names,
       p.proargmodes::text[] AS modes, p.prorettype = 'trigger'::regtype AS is_trigger
  FROM pg_proc p
 WHERE p.pronamespace = 'txnq'::regnamespace
 ORDER BY p.proname
"""


def base_name(proname: str) -> str:
    return re.sub(r"_v[0-9]+$", "", proname)


def is_internal(base: str) -> bool:
    return base in INTERNAL or re.match(r"^(require|authorize)(_|$)", base) is not None


@dataclass(frozen=True)
class Function:
    proname: str
    signature: str
    args: list[tuple[str | None, str, bool]]  # (name, type, has a default)
    is_trigger: bool

    @property
    def base(self) -> str:
        return base_name(self.proname)


def functions(conn: psycopg.Connection[Any]) -> list[Function]:
    out = []
    for row in conn.execute(FUNCTIONS).fetchall():
        proname, signature, nargs, ndefaults, types, names, modes, is_trigger = row
        input_names: list[str | None] = []
        for i, name in enumerate(names or [None] * nargs):
            mode = modes[i] if modes else "i"
            if mode in ("i", "b", "v"):
                input_names.append(name or None)
        args = [
            (input_names[i] if i < len(input_names) else None, types[i], i >= nargs - ndefaults)
            for i in range(nargs)
        ]
        out.append(Function(proname, signature, args, is_trigger))
    return out


def public_functions(conn: psycopg.Connection[Any]) -> list[Function]:
    return [
        f
        for f in functions(conn)
        if not f.is_trigger and not is_internal(f.base) and f.base != "grant_roles"
    ]


@dataclass
class World:
    """What the calls name: made by the owner before any role calls."""

    topic_id: int
    subscription_id: int
    shared_subscription_id: int
    consumer_id: int
    owner_txn: tuple[int, int]
    values: dict[str, Any] = field(default_factory=dict)


def build_world(dsn: str) -> World:
    with txnq.Client(dsn) as owner:
        owner.admin.create_topic(TOPIC)
        with owner.producer(TOPIC) as producer:
            for i in range(3):
                producer.send(f"m{i}")
        topic_id = owner.admin.get_topic(TOPIC).topic_id
    with psycopg.connect(dsn, autocommit=True) as conn:

        def one(query: str, *params: Any) -> Any:
            row = conn.execute(query, params).fetchone()
            assert row is not None
            return row[0]

        sub = one(
            "SELECT txnq.subscribe_v1(%s, 'sub', 'exclusive', 'read_committed', 'earliest')",
            topic_id,
        )
        shared = one(
            "SELECT txnq.subscribe_v1(%s, 'shared', 'shared', 'read_committed', 'earliest')",
            topic_id,
        )
        consumer = one("SELECT txnq.register_consumer_v1(%s, 'c1', 0, 300)", shared)
        conn.execute("SELECT txnq.spark_ingestion_create_v1('ing', %s)", (topic_id,))
        txn = conn.execute("SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 600)").fetchone()
        assert txn is not None
    return World(topic_id, sub, shared, consumer, (txn[0], txn[1]))  # fmt: skip


def argument(
    f: Function, name: str | None, type_: str, world: World, role: str, txn: tuple[int, int]
) -> Any:
    """A valid value for parameter ``name`` of ``f`` (None: NULL)."""
    now = datetime.now(UTC)
    by_name: dict[str, Any] = {
        "p_topic_id": world.topic_id,
        "p_partition": 0,
        "p_subscription_id": world.shared_subscription_id
        if f.base in SHARED_SUBSCRIPTION
        else world.subscription_id,
        "p_consumer_id": world.consumer_id,
        "p_payloads": [b"x"],
        "p_payload_bytes": b"x",
        "p_payload_lengths": [1],
        "p_deliver_at": now + timedelta(hours=1),
        "p_after_offset": -1,
        "p_max_entries": 10,
        "p_max_bytes": 1_000_000,
        "p_cumulative_offset": 0,
        "p_offsets": [0] if f.base in ("ack_shared", "nack_shared", "stage_ack") else None,
        "p_batch_indexes": [0] if f.base in ("ack_shared", "nack_shared", "stage_ack") else None,
        "p_batch_sizes": [1] if f.base == "stage_ack" else None,
        "p_offset": 0,
        "p_subscription_type": "exclusive",
        "p_isolation": "read_committed",
        "p_initial_position": "earliest",
        "p_force": False,
        "p_priority": 0,
        "p_lease_seconds": 30.0,
        "p_timeout_seconds": 30.0,
        "p_tc_id": 0 if f.base == "open_txn" else txn[0],
        # Topic functions run outside a transaction (p_txn_tc NULL too).
        "p_txn_seq": txn[1] if f.base in OWN_TXN | COORDINATOR else None,
        "p_commit": False,
        "p_reason": "client",
        "p_notify": False,
        "p_epoch": 0,
        "p_transactional_id": "perm-tid",
        "p_max_messages": 10,
        "p_ack_timeout_seconds": 30.0,
        "p_delays": [0.0],
        "p_partitions": {"add_partitions": 2, "create_topic": 1, "partition_for_key": 4}.get(
            f.base, [0]
        ),
        "p_retention_seconds": 0.0,
        "p_retention_bytes": 0,
        "p_max_message_bytes": 1000,
        "p_clear_ttl": False,
        "p_set_bytes": False,
        "p_set_seconds": False,
        "p_set_policy": False,
        "p_role": role,
        "p_resource": TOPIC,
        "p_is_prefix": False,
        "p_actions": ["consume"],
        "p_topic": TOPIC,
        "p_payload": b"x",
        "p_at": now,
        "p_start_offset": 0,
        "p_end_offset": 10,
        "p_planned_offsets": [1],
        "p_run": 1,
        "p_checkpoint_id": 1,
        "p_older_than": 0.0,
        "p_limit": 10,
        "p_grace_seconds": 0.0,
        "p_entry_log_id": 1,
        "p_max_count": 10,
        "p_source": 1,
        "p_target": 1,
        "p_max_rows": 10,
        "p_source_rows": 0,
        "p_lock_timeout": "1s",
        "p_owner": "perm-test",
        "p_tc_ids": [0],
    }
    if name == "p_name":
        return {
            "subscribe": "sub",
            "subscription_by_name": "sub",
            "register_producer": "perm-producer",
            "register_consumer": "perm-consumer",
        }.get(f.base, "ing" if f.base.startswith("spark_ingestion") else TOPIC)
    if name is None or name == "p_key":
        # Unnamed (the pure helpers): a value of the type, never NULL (PostgreSQL
        # folds a STRICT function of a NULL to NULL without calling it).
        return {"bytea": b"k", "integer": 1, "integer[]": [1], "bigint[]": [1]}.get(type_)
    return by_name.get(name)


def call(
    f: Function, world: World, role: str, txn: tuple[int, int]
) -> tuple[pgsql.Composable, list[Any], list[str | None]]:
    """``SELECT * FROM txnq.f(...)`` with valid arguments, each cast to its
    type; and the names of the parameters passed (in order)."""
    params: list[Any] = []
    passed: list[str | None] = []
    parts: list[pgsql.Composable] = []
    named = all(name for name, _, _ in f.args)
    known = {
        "p_topic_id", "p_partition", "p_subscription_id", "p_consumer_id", "p_payloads", "p_name",
    }  # fmt: skip
    for name, type_, has_default in f.args:
        value = argument(f, name, type_, world, role, txn)
        if named and value is None and has_default and name not in known:
            continue
        cast = pgsql.SQL("%s::{}").format(pgsql.SQL(type_))
        parts.append(
            pgsql.SQL("{} => {}").format(pgsql.Identifier(name), cast) if named and name else cast
        )
        params.append(value)
        passed.append(name)
    query = pgsql.SQL("SELECT * FROM txnq.{}({})").format(
        pgsql.Identifier(f.proname), pgsql.SQL(", ").join(parts)
    )
    return query, params, passed


def outcome(conn: psycopg.Connection[Any], f: Function, world: World, role: str) -> str | None:
    """The SQLSTATE the call fails with (None: it ran), rolled back either way."""
    try:
        with conn.transaction(force_rollback=True):
            conn.execute("SET LOCAL statement_timeout = '10s'")
            conn.execute("SET LOCAL lock_timeout = '3s'")
            txn = world.owner_txn
            if f.base in OWN_TXN:
                try:
                    with conn.transaction():
                        row = conn.execute(
                            "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 60)"
                        ).fetchone()
                        assert row is not None
                        txn = (row[0], row[1])
                except psycopg.Error:
                    pass  # a role that may not open one: the owner's
            query, params, _ = call(f, world, role, txn)
            conn.execute(query, params).fetchall()
        return None
    except psycopg.Error as exc:
        return exc.sqlstate


@dataclass(frozen=True)
class Profile:
    """A kind of role: its txnq group role and its grants on TOPIC / PREFIX."""

    name: str
    group: str
    topic_actions: tuple[str, ...] = ()
    prefix_actions: tuple[str, ...] = ()

    def may(self, base: str) -> bool:
        if self.group == "txnq_admin":
            return True
        if self.group == "txnq_worker":
            return base in COORDINATOR or base in PURE
        if self.group == "txnq_scheduler":
            return base in SCHEDULER or base in PURE
        if self.group == "txnq_reader":
            return base in READER
        actions = set(self.topic_actions) | set(self.prefix_actions)
        if "admin" in actions:
            actions |= {"produce", "consume"}
        if base in PRODUCE:
            return "produce" in actions
        if base in CONSUME:
            return "consume" in actions
        if base in ADMIN:
            return "admin" in self.topic_actions or "admin" in self.prefix_actions
        if base in USE:
            return bool(actions)
        return base in OWN_TXN or base in ANY_CLIENT or base in PURE


PROFILES = [
    Profile("app_without_grants", "txnq_client"),
    Profile("app_with_produce", "txnq_client", topic_actions=("produce",)),
    Profile("app_with_consume", "txnq_client", topic_actions=("consume",)),
    Profile("app_with_admin", "txnq_client", topic_actions=("admin",)),
    Profile("app_with_a_prefix_grant", "txnq_client", prefix_actions=("produce", "consume")),
    Profile("coordinator", "txnq_worker"),
    Profile("scheduler", "txnq_scheduler"),
    Profile("reader", "txnq_reader"),
    Profile("admin", "txnq_admin"),
]


@pytest.fixture
def world(dsn: str) -> World:
    return build_world(dsn)


def test_every_function_of_txnq_is_classified(dsn: str) -> None:
    """A new function must say who may call it (this file's sets and
    grant_roles_v2's classes): none slips through unclassified."""
    with psycopg.connect(dsn) as conn:
        unknown = sorted(
            f.signature
            for f in functions(conn)
            if not f.is_trigger
            and not is_internal(f.base)
            and f.base != "grant_roles"
            and f.base not in PUBLIC
        )
    assert unknown == [], f"classify these functions (docs/security.md): {unknown}"


@pytest.mark.parametrize("profile", PROFILES, ids=[p.name for p in PROFILES])
def test_every_public_function_allows_exactly_what_the_role_may(
    dsn: str, world: World, make_login: Callable[..., Login], profile: Profile
) -> None:
    login = make_login(profile.group, label=profile.name)
    with txnq.Client(dsn) as owner:
        if profile.topic_actions:
            owner.admin.grant(login.name, topic=TOPIC, actions=list(profile.topic_actions))
        if profile.prefix_actions:
            owner.admin.grant(login.name, prefix=PREFIX, actions=list(profile.prefix_actions))
    with psycopg.connect(dsn) as conn:
        todo = public_functions(conn)
    assert len(todo) > 50
    wrong: list[str] = []
    with psycopg.connect(login.dsn, autocommit=True) as conn:
        for f in todo:
            state = outcome(conn, f, world, login.name)
            allowed = state not in DENIED
            if allowed != profile.may(f.base):
                expected = "allowed" if profile.may(f.base) else "denied (TQ018 or 42501)"
                wrong.append(f"{f.signature}: expected {expected}, got {state or 'success'}")
    assert wrong == [], f"{profile.name} ({len(wrong)} wrong):\n" + "\n".join(wrong)


def test_internal_helpers_are_executable_by_no_txnq_role(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        helpers = [f for f in functions(conn) if is_internal(f.base) or f.is_trigger]
        assert len(helpers) > 20
        granted = conn.execute(
            "SELECT p.oid::regprocedure::text, r.rolname FROM pg_proc p"
            " CROSS JOIN unnest(ARRAY['txnq_client', 'txnq_worker', 'txnq_scheduler',"
            "                         'txnq_reader', 'public']) AS r(rolname)"
            " WHERE p.oid::regprocedure::text = ANY(%s)"
            "   AND has_function_privilege(CASE WHEN r.rolname = 'public' THEN 'txnq_reader'"
            "                                   ELSE r.rolname END, p.oid, 'EXECUTE')",
            ([f.signature for f in helpers],),
        ).fetchall()
    assert granted == []


def test_every_public_function_runs_as_its_owner_with_a_pinned_search_path(dsn: str) -> None:
    with psycopg.connect(dsn) as conn:
        names = [f.signature for f in public_functions(conn) if f.base not in PURE]
        loose = conn.execute(
            "SELECT p.oid::regprocedure::text FROM pg_proc p"
            " WHERE p.oid::regprocedure::text = ANY(%s)"
            "   AND NOT (p.prosecdef AND pg_get_userbyid(p.proowner) = 'txnq_admin'"
            "            AND 'search_path=pg_catalog, txnq, pg_temp' = ANY(p.proconfig))",
            (names,),
        ).fetchall()
    assert loose == []


def test_no_application_role_reads_or_writes_a_txnq_table(
    dsn: str, world: World, make_login: Callable[..., Login]
) -> None:
    """Not even with admin on every topic: the rows are the functions'."""
    app = make_login("txnq_client")
    with txnq.Client(dsn) as owner:
        owner.admin.grant(app.name, prefix="p", actions=["admin"])
    with psycopg.connect(dsn) as conn:
        tables = [
            (r[0], r[1])
            for r in conn.execute(
                "SELECT c.oid::regclass::text, quote_ident(a.attname) FROM pg_class c"
                " JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ("
                "     SELECT max(b.attnum) FROM pg_attribute b WHERE b.attrelid = c.oid"
                "        AND b.attnum > 0 AND NOT b.attisdropped AND b.attidentity = ''"
                "        AND b.attgenerated = '')"
                " WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind IN ('r', 'p')"
                " ORDER BY 1"
            ).fetchall()
        ]
        sequences = [
            r[0]
            for r in conn.execute(
                "SELECT c.oid::regclass::text FROM pg_class c"
                " WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind = 'S' ORDER BY 1"
            ).fetchall()
        ]
    assert {"txnq.transactions", "txnq.entries_000001"} <= {t for t, _ in tables}
    allowed: list[str] = []
    with psycopg.connect(app.dsn, autocommit=True) as conn:
        for table, column in tables:
            for statement in (
                f"SELECT * FROM {table}",
                f"DELETE FROM {table}",
                f"UPDATE {table} SET {column} = {column}",
                f"INSERT INTO {table} DEFAULT VALUES",
            ):
                try:
                    with conn.transaction(force_rollback=True):
                        conn.execute(statement)
                    allowed.append(statement)
                except psycopg.Error as exc:
                    if exc.sqlstate != "42501":
                        allowed.append(f"{statement}: {exc.sqlstate} {exc}")
        for sequence in sequences:
            try:
                with conn.transaction(force_rollback=True):
                    conn.execute("SELECT nextval(%s)", (sequence,))
                allowed.append(f"nextval({sequence})")
            except psycopg.Error as exc:
                if exc.sqlstate != "42501":
                    allowed.append(f"nextval({sequence}): {exc.sqlstate}")
    assert allowed == []


def test_a_transaction_is_written_and_ended_only_by_the_role_that_opened_it(
    dsn: str, world: World, make_login: Callable[..., Login]
) -> None:
    alice = make_login("txnq_client", label="alice")
    bob = make_login("txnq_client", label="bob")
    ops = make_login("txnq_admin", label="ops")
    with txnq.Client(dsn) as owner:
        for who in (alice, bob):
            owner.admin.grant(who.name, topic=TOPIC, actions=["produce", "consume"])
    with psycopg.connect(alice.dsn, autocommit=True) as conn:
        row = conn.execute("SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 60)").fetchone()
        assert row is not None
        tc, seq = row
    # Writes first, ends last (an end that went through would end the others' chance).
    attempts = [
        (
            "SELECT * FROM txnq.append_v3(%s, 0, NULL, NULL, NULL, ARRAY['x'::bytea], NULL, NULL,"
            " NULL, %s, %s)",
            (world.topic_id, tc, seq),
        ),
        (
            "SELECT txnq.ack_v2(%s, 0, %s, 0, NULL, NULL, NULL, NULL, NULL, %s, %s)",
            (world.topic_id, world.subscription_id, tc, seq),
        ),
        (
            "SELECT txnq.ack_shared_v3(%s, 0, %s, ARRAY[0::bigint], ARRAY[0], %s, %s)",
            (world.topic_id, world.shared_subscription_id, tc, seq),
        ),
        ("SELECT * FROM txnq.txn_state_v1(%s, %s)", (tc, seq)),
        ("SELECT * FROM txnq.txn_describe_v1(%s, %s)", (tc, seq)),
        ("SELECT txnq.sink_begin_v1('bob-sink', %s, %s)", (tc, seq)),
        ("SELECT txnq.complete_txn_v1(%s, %s)", (tc, seq)),
        ("SELECT * FROM txnq.end_txn_v1(%s, %s, false)", (tc, seq)),
        ("SELECT * FROM txnq.end_txn_v1(%s, %s, true)", (tc, seq)),
    ]
    with psycopg.connect(dsn) as conn:
        before = fingerprint(conn)
    accepted = []
    with psycopg.connect(bob.dsn, autocommit=True) as conn:
        for query, params in attempts:
            try:
                conn.execute(query, params).fetchall()
                accepted.append(query)
            except psycopg.Error as exc:
                if exc.sqlstate != "TQ018":
                    accepted.append(f"{query}: {exc.sqlstate} {exc}")
        txns = conn.execute("SELECT tc_id, txn_seq FROM txnq.txn_list_v1(NULL, 0, 100)").fetchall()
        assert (tc, seq) not in txns  # bob does not even see it
    assert accepted == [], "bob was allowed:\n" + "\n".join(accepted)
    with psycopg.connect(dsn) as conn:
        assert fingerprint(conn) == before
    # Its opener commits it; an admin may end anyone's.
    with psycopg.connect(alice.dsn, autocommit=True) as conn:
        assert conn.execute(
            "SELECT state FROM txnq.txn_state_v1(%s, %s)", (tc, seq)
        ).fetchone() == ("OPEN",)
        assert conn.execute(
            "SELECT e.state FROM txnq.end_txn_v1(%s, %s, true) e", (tc, seq)
        ).fetchone() == ("COMMITTING",)
    with psycopg.connect(alice.dsn, autocommit=True) as conn:
        row = conn.execute("SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 60)").fetchone()
        assert row is not None
    with psycopg.connect(ops.dsn, autocommit=True) as conn:
        assert conn.execute(
            "SELECT e.state FROM txnq.end_txn_v1(%s, %s, false, 'admin') e", row
        ).fetchone() == ("ABORTING",)


def test_the_python_client_reports_a_missing_grant_and_the_command_that_fixes_it(
    dsn: str, world: World, make_login: Callable[..., Login]
) -> None:
    app = make_login("txnq_client", label="app")
    with txnq.Client(app.dsn) as client:
        with pytest.raises(errors.PermissionDeniedError) as denied:
            client.producer(TOPIC)
        message = str(denied.value)
        assert app.name in message and TOPIC in message
        assert f"txnq topics grant {TOPIC} --role {app.name}" in message
        assert client.admin.list_topics() == []  # sees no topic it holds no grant on
    with txnq.Client(dsn) as owner:
        assert owner.admin.grant(app.name, topic=TOPIC, actions="produce") == 1
        assert owner.admin.grant(app.name, topic=TOPIC, actions=["produce"]) == 0
    with txnq.Client(app.dsn) as client:
        with client.producer(TOPIC) as producer:
            producer.send(b"allowed")
        assert [t.name for t in client.admin.list_topics()] == [TOPIC]
        grants = client.admin.permissions()
        assert [(g.role, g.resource, g.kind, g.action) for g in grants] == [
            (app.name, TOPIC, "topic", "produce")
        ]
        with pytest.raises(errors.PermissionDeniedError):
            client.admin.grant(app.name, topic=TOPIC, actions="admin")  # not its admin
    with txnq.Client(dsn) as owner:
        assert owner.admin.revoke(app.name, topic=TOPIC) == 1
    with txnq.Client(app.dsn) as client, pytest.raises(errors.PermissionDeniedError):
        client.admin.get_topic(TOPIC)


def test_a_prefix_grant_covers_topics_created_later_and_no_other(
    dsn: str, make_login: Callable[..., Login]
) -> None:
    team = make_login("txnq_client", label="team")
    with txnq.Client(dsn) as owner:
        owner.admin.grant(team.name, prefix="team.", actions=["admin"])
        owner.admin.create_topic("other")
    with txnq.Client(team.dsn) as client:
        # Granted before the topic existed (create_topic itself checks it too).
        client.admin.create_topic("team.events")
        with client.producer("team.events") as producer:
            producer.send(b"x")
        consumer = client.subscribe(
            "team.events", "s", initial_position="earliest", poll_interval=0.05
        )
        assert consumer.receive(timeout=5).value == b"x"
        consumer.close()
        with pytest.raises(errors.PermissionDeniedError):
            client.admin.get_topic("other")
        assert [t.name for t in client.admin.list_topics()] == ["team.events"]
        # A topic admin may grant on what it administers, not beyond.
        assert client.admin.grant(team.name, topic="team.events", actions="consume") == 1
        with pytest.raises(errors.PermissionDeniedError):
            client.admin.grant(team.name, prefix="team", actions="admin")


def test_a_grant_to_a_group_role_counts_for_its_members(
    dsn: str, world: World, make_login: Callable[..., Login]
) -> None:
    group = make_login(label="group")  # used as a group: it holds the grant
    member = make_login("txnq_client", group.name, label="member")
    with txnq.Client(dsn) as owner:
        owner.admin.grant(group.name, topic=TOPIC, actions="consume")
    with txnq.Client(member.dsn) as client:
        consumer = client.subscribe(TOPIC, "sub", **FAST)
        assert consumer.receive(timeout=5) is not None
        consumer.close()


HOSTILE_NAMES = [
    "",
    "'",
    "x'; DROP TABLE txnq.topics; --",
    '"; DROP TABLE txnq.topics; --',
    "%s%s%n%x",
    "%",
    "*",
    "a b",
    "tab\tname",
    "line\nbreak",
    "back\\slash",
    "x" * 300,
    "ü-topic",
    "名前",
    "emoji-😀",
    "perm.orders ",
    "perm.orders;",
    "../etc/passwd",
]

FINGERPRINT_MORE = """
SELECT (SELECT count(*) FROM txnq.topic_permissions),
       (SELECT count(*) FROM txnq.spark_ingestions),
       (SELECT count(*) FROM txnq.sink_transactions),
       (SELECT count(*) FROM txnq.transactional_ids),
       (SELECT count(*) FROM txnq.consumers),
       (SELECT count(*) FROM txnq.producers),
       (SELECT count(*) FROM pg_class WHERE relnamespace = 'txnq'::regnamespace)
"""
NAME_PARAMETERS = {"p_name", "p_role", "p_resource", "p_topic", "p_transactional_id"}


def full_fingerprint(dsn: str) -> tuple[Any, ...]:
    with psycopg.connect(dsn) as conn:
        row = conn.execute(FINGERPRINT_MORE).fetchone()
        assert row is not None
        return fingerprint(conn) + tuple(row)


@pytest.fixture
def admin_login(make_login: Callable[..., Login]) -> Iterator[Login]:
    yield make_login("txnq_admin", label="admin")


def test_hostile_names_through_every_function_that_takes_a_name_change_nothing(
    dsn: str, world: World, admin_login: Login
) -> None:
    """As an admin (past every permission check, so the argument checks are
    what stops them): each call either fails with a TQ code or finds nothing,
    and the database is as it was."""
    with psycopg.connect(dsn) as conn:
        takers = [
            (f, name)
            for f in public_functions(conn)
            for name, type_, _ in f.args
            if name in NAME_PARAMETERS and type_ == "text"
        ]
    assert {f.base for f, _ in takers} >= {"create_topic", "grant_topic_permission", "subscribe"}
    before = full_fingerprint(dsn)
    problems = []
    with psycopg.connect(admin_login.dsn, autocommit=True) as conn:
        for f, parameter in takers:
            for hostile in HOSTILE_NAMES:
                query, params, passed = call(f, world, admin_login.name, world.owner_txn)
                params[passed.index(parameter)] = hostile
                try:
                    conn.execute(query, params).fetchall()
                except psycopg.Error as exc:
                    if not (exc.sqlstate or "").startswith("TQ"):
                        problems.append(f"{f.signature} {parameter}={hostile!r}: {exc.sqlstate}")
                    continue
                if full_fingerprint(dsn) != before:
                    problems.append(
                        f"{f.signature} {parameter}={hostile!r}: accepted, changed data"
                    )
                    before = full_fingerprint(dsn)
    assert problems == [], "\n".join(problems)
    assert full_fingerprint(dsn) == before, "a call with a hostile name changed something"


def test_hostile_names_through_the_admin_api_are_refused_before_anything_changes(
    dsn: str, world: World, make_login: Callable[..., Login]
) -> None:
    app = make_login("txnq_client", label="app")
    before = full_fingerprint(dsn)
    refused = 0
    with txnq.Client(dsn) as owner:
        calls: list[Callable[[str], Any]] = [
            lambda n: owner.admin.grant(n, topic=TOPIC, actions="produce"),
            lambda n: owner.admin.grant(app.name, topic=n, actions="produce"),
            lambda n: owner.admin.grant(app.name, prefix=n, actions="produce"),
            lambda n: owner.admin.grant(app.name, topic=TOPIC, actions=[n]),
            lambda n: owner.admin.revoke(n, topic=TOPIC),
            lambda n: owner.admin.revoke(app.name, prefix=n),
            lambda n: owner.admin.permissions(role=n),
            lambda n: owner.admin.permissions(topic=n),
            lambda n: owner.admin.get_topic(n),
            lambda n: owner.admin.create_topic(n),
            lambda n: owner.admin.delete_topic(n),
            lambda n: owner.admin.describe_subscription(TOPIC, n),
        ]
        for hostile in HOSTILE_NAMES:
            for do in calls:
                with pytest.raises(errors.TxnqError):
                    do(hostile)
                refused += 1
        # A role name of the right shape that does not exist: the SQL check.
        with pytest.raises(errors.InvalidArgumentError, match="does not exist"):
            owner.admin.grant("no_such_role_anywhere", topic=TOPIC, actions="produce")
    assert refused == len(HOSTILE_NAMES) * 12
    assert full_fingerprint(dsn) == before


def test_the_workers_do_their_jobs_as_their_own_roles(
    dsn: str, world: World, make_login: Callable[..., Login]
) -> None:
    """The coordinator as a txnq_worker finishes an application's commit; the
    scheduler as a txnq_scheduler runs every job, entry-log GC included."""
    app = make_login("txnq_client", label="app")
    coordinator = make_login("txnq_worker", label="coordinator")
    scheduler = make_login("txnq_scheduler", label="scheduler")
    with txnq.Client(dsn) as owner:
        owner.admin.grant(app.name, topic=TOPIC, actions=["produce"])
    with txnq.Client(app.dsn) as client, client.producer(TOPIC) as producer:
        txn = client.new_transaction()
        producer.send(b"in a transaction", txn=txn)
        txn.commit(wait=False)  # the decision only: a coordinator finishes it
        tc, seq = txn.txn_id.tc_id, txn.txn_id.seq

    def state() -> str:
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT state FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s", (tc, seq)
            ).fetchone()
            assert row is not None
            return str(row[0])

    with running_coordinator(coordinator.dsn):
        wait_until(lambda: state() == "COMMITTED", timeout=10, what="the coordinator's commit")

    with psycopg.connect(dsn, autocommit=True) as conn:  # an empty, sealed entry log
        conn.execute("SELECT txnq.roll_entry_log_v2(true)")
        conn.execute("SELECT txnq.roll_entry_log_v2(true)")
        conn.execute(
            "UPDATE txnq.entry_logs SET sealed_at = now() - interval '1 day' WHERE entry_log_id = 2"
        )
    with txnq.Client(scheduler.dsn) as client:
        context = JobContext(client=client)
        done = {job.name: job.run(context) for job in JOBS}
    assert "entry log 2 dropped" in str(done["collect_entry_logs"])
    with psycopg.connect(dsn) as conn:
        assert conn.execute(
            "SELECT state FROM txnq.entry_logs WHERE entry_log_id = 2"
        ).fetchone() == ("DROPPED",)


def test_the_asyncio_client_grants_and_is_refused_the_same_way(
    dsn: str, world: World, make_login: Callable[..., Login]
) -> None:
    app = make_login("txnq_client", label="aio")

    async def scenario() -> None:
        async with txnq.aio.Client(dsn) as owner:
            assert await owner.admin.grant(app.name, topic=TOPIC, actions="consume") == 1
            grants = await owner.admin.permissions(role=app.name)
            assert [(g.resource, g.action) for g in grants] == [(TOPIC, "consume")]
        async with txnq.aio.Client(app.dsn) as client:
            with pytest.raises(errors.PermissionDeniedError, match="--action admin"):
                await client.admin.set_topic_policy(TOPIC, ttl="1h")
            consumer = await client.subscribe(TOPIC, "aio", initial_position="earliest", **FAST)
            assert (await consumer.receive(timeout=5)) is not None
            await consumer.close()

    asyncio.run(asyncio.wait_for(scenario(), timeout=60))
