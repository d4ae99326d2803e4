"""One live version of each SQL function (issue 18, sql/README.md).

- A shipped revision's SQL never changes: each revision runs frozen copies
  (migrations/sql/<revision>/), whose checksums migrations/sql/SHA256SUMS
  holds, so editing a shipped copy fails here.
- sql/functions/ and sql/views/ are the live tree: exactly what head runs, one
  function (or view) per file, each file the latest frozen copy of its name;
  editing a live file without a new revision fails here.
- Whatever path a database took (one revision at a time, stopped at any
  revision and upgraded later, or in one go), at head it runs the same
  functions, views, tables, constraints, indexes, triggers and grants.
- A superseded version (``name_vN`` beside a newer ``name_vM``) is a thin
  wrapper of a newer version, and no revision gives a function's name a
  different body unless the new one is such a wrapper: revision 0014 did
  (claimed_messages_v1), so replaying revision 0013 installed 0014's body.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
import pytest
from alembic import command
from alembic.script import ScriptDirectory
from psycopg import sql as pgsql

from tests.conftest import dsn_for_database
from txnq.database import migrate
from txnq.database.connections import create_engine_for

REPO = Path(__file__).resolve().parents[2]
FROZEN = REPO / "migrations" / "sql"
MANIFEST = FROZEN / "SHA256SUMS"
LIVE = REPO / "sql"
LIVE_FOLDERS = ("functions", "views")
DEFINES = re.compile(r"CREATE (?:OR REPLACE )?(FUNCTION|VIEW) txnq\.(\w+)\(?")
FROZEN_PATH = re.compile(r"\"(\d{4})/((?:functions|schema|views)/\w+\.sql)\"")
VERSIONED = re.compile(r"^(\w+)_v(\d+)$")

#: Superseded versions that are not thin wrappers of a newer version of their
#: own name, and why. The value is the one function the body may call instead
#: (None: the body may be a full one).
WRAPPER_EXCEPTIONS: dict[str, tuple[str | None, str]] = {
    "publish_staged_at_commit_v1": (
        "publish_staged_v2",
        "a trigger function cannot be called, so its wrapper calls what "
        "publish_staged_at_commit_v2 calls",
    ),
    "grant_roles_v1": (
        None,
        "each grant_roles_vN runs the one before it and adds its own rules "
        "(the migrating role only, never a client)",
    ),
    "grant_roles_v2": (None, "grant_roles_v3 runs it first, as it ran grant_roles_v1"),
    "grant_roles_v3": (None, "grant_roles_v4 runs it first, as it ran grant_roles_v2"),
    "grant_roles_v4": (None, "grant_roles_v5 runs it first, as it ran grant_roles_v3"),
    "grant_roles_v5": (None, "grant_roles_v6 runs it first, as it ran grant_roles_v4"),
}

#: Revisions that gave an existing name a different body that is no thin
#: wrapper. Never add to this: install a new version instead (sql/README.md).
HISTORIC_REPLACEMENTS = {
    ("0014", "claimed_messages_v1"): (
        "the break revision 0017 repairs: 0014's body is claimed_messages_v2 now"
    ),
}


# -- the revisions and their files -------------------------------------------------------


def revisions() -> list[tuple[str, ModuleType]]:
    """Every revision, base first, with its module."""
    script = ScriptDirectory.from_config(migrate.alembic_config("postgresql://localhost/unused"))
    return [(rev.revision, rev.module) for rev in reversed(list(script.walk_revisions()))]


def applied_in_order() -> list[str]:
    """Every frozen copy the upgrades run, in the order a fresh migration runs them."""
    return [path for _, module in revisions() for path in module.SQL_FILES]


def definitions(text: str) -> set[tuple[str, str]]:
    """The (kind, name) of every function and view a SQL text creates."""
    return {(kind, name) for kind, name in DEFINES.findall(text)}


def latest_definers() -> dict[tuple[str, str], str]:
    """For each function and view, the frozen copy that installed it last."""
    latest: dict[tuple[str, str], str] = {}
    for path in applied_in_order():
        for definition in definitions((FROZEN / path).read_text(encoding="utf-8")):
            latest[definition] = path
    return latest


def live_files() -> list[Path]:
    return sorted(path for folder in LIVE_FOLDERS for path in (LIVE / folder).glob("*.sql"))


# -- frozen copies ------------------------------------------------------------------------


def test_every_frozen_copy_matches_the_checksum_manifest() -> None:
    listed: dict[str, str] = {}
    for line in MANIFEST.read_text(encoding="utf-8").splitlines():
        digest, path = line.split(maxsplit=1)
        listed[path] = digest
    present = {path.relative_to(FROZEN).as_posix() for path in FROZEN.rglob("*.sql")}
    assert present == set(listed), (
        "migrations/sql/SHA256SUMS lists other files than migrations/sql/ holds: "
        f"not listed {sorted(present - set(listed))}, missing {sorted(set(listed) - present)}"
    )
    changed = [
        path
        for path, digest in sorted(listed.items())
        if hashlib.sha256((FROZEN / path).read_bytes()).hexdigest() != digest
    ]
    assert changed == [], (
        f"shipped SQL changed: {changed}. A shipped revision's SQL never changes: "
        "install a new version in a new revision (sql/README.md)"
    )


def test_each_revision_runs_its_own_frozen_copies() -> None:
    """A revision's folder holds exactly what its upgrade runs; it may re-run an
    earlier revision's copy unchanged (revision 0017 does), and its downgrade
    reinstalls earlier revisions' copies, never the live tree."""
    known = {revision for revision, _ in revisions()}
    for revision, module in revisions():
        folder = FROZEN / revision
        own = {p.relative_to(FROZEN).as_posix() for p in folder.rglob("*.sql")}
        upgrade = list(module.SQL_FILES)
        assert {p for p in upgrade if p.startswith(revision + "/")} == own, revision
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        assert "sql_text(" not in source, revision
        for owner, relative in FROZEN_PATH.findall(source):
            assert owner in known and owner <= revision, (revision, owner, relative)
            assert (FROZEN / owner / relative).is_file(), (revision, owner, relative)
        for path in upgrade:
            assert FROZEN_PATH.fullmatch(f'"{path}"'), (revision, path)


# -- the live tree ------------------------------------------------------------------------


def test_every_live_file_is_the_latest_frozen_copy_of_its_name() -> None:
    latest = latest_definers()
    stale = []
    for live in live_files():
        text = live.read_text(encoding="utf-8")
        defined = definitions(text)
        assert defined, f"{live.relative_to(REPO)} creates no function or view"
        sources = {latest[d] for d in defined if d in latest}
        assert len(sources) == 1 and len(defined) == len([d for d in defined if d in latest]), (
            f"{live.relative_to(REPO)} is not the latest frozen copy of what it defines: "
            f"{sorted(sources)}"
        )
        (source,) = sources
        expected = Path(source).relative_to(Path(source).parts[0]).as_posix()
        if live.relative_to(LIVE).as_posix() != expected or (FROZEN / source).read_bytes() != (
            live.read_bytes()
        ):
            stale.append(f"{live.relative_to(REPO)} (head runs migrations/sql/{source})")
    assert stale == [], (
        "live files that are not what head runs: "
        + ", ".join(stale)
        + ". Change a function with a new version in a new revision (sql/README.md)"
    )


def test_the_live_tree_is_what_head_runs(dsn: str) -> None:
    """Every function and view of head is in exactly one live file, and running
    the live tree on a database at head changes nothing."""
    defined: dict[tuple[str, str], list[str]] = {}
    for live in live_files():
        for definition in definitions(live.read_text(encoding="utf-8")):
            defined.setdefault(definition, []).append(live.name)
    twice = {d: files for d, files in defined.items() if len(files) > 1}
    assert twice == {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        functions = {r[0] for r in conn.execute(FUNCTION_NAMES)}
        views = {r[0] for r in conn.execute(VIEW_NAMES)}
    assert {n for k, n in defined if k == "FUNCTION"} == functions
    assert {n for k, n in defined if k == "VIEW"} == views

    before = schema_snapshot(dsn)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for live in live_files():
            conn.execute(live.read_text(encoding="utf-8"))
    grant_roles(dsn)
    assert_same(before, schema_snapshot(dsn), "head", "head with the live tree run on it")


# -- superseded versions ------------------------------------------------------------------


def thin_wrapper_target(prosrc: str, language: str) -> str | None:
    """The one txnq function a thin wrapper's body calls; None when the body is
    anything more than that single call (a SELECT in SQL; PERFORM, RETURN or
    RETURN QUERY, and a trigger's RETURN NULL, in PL/pgSQL)."""
    body = " ".join(re.sub(r"--[^\n]*", "", prosrc).split())
    calls = re.findall(r"txnq\.(\w+)\(", body)
    if len(calls) != 1 or body.count("txnq.") != 1:
        return None
    if language == "sql":
        shape = r"SELECT [^;]*;?"
    elif language == "plpgsql":
        shape = r"BEGIN (?:PERFORM|RETURN QUERY SELECT|RETURN) [^;]*; (?:RETURN NULL; )?END;?"
    else:
        return None
    return calls[0] if re.fullmatch(shape, body) else None


def wraps_a_newer_version(name: str, target: str | None) -> bool:
    own, theirs = VERSIONED.match(name), VERSIONED.match(target or "")
    return bool(own and theirs and own[1] == theirs[1] and int(theirs[2]) > int(own[2])) or (
        name in WRAPPER_EXCEPTIONS and WRAPPER_EXCEPTIONS[name][0] == target
    )


def test_superseded_versions_are_thin_wrappers(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(FUNCTION_BODIES).fetchall()
    newest: dict[str, int] = {}
    for name, _, _ in rows:
        if match := VERSIONED.match(name):
            newest[match[1]] = max(newest.get(match[1], 0), int(match[2]))
    full_bodies = []
    for name, prosrc, language in rows:
        match = VERSIONED.match(name)
        if not match or int(match[2]) == newest[match[1]]:
            continue
        if name in WRAPPER_EXCEPTIONS and WRAPPER_EXCEPTIONS[name][0] is None:
            continue
        if not wraps_a_newer_version(name, thin_wrapper_target(prosrc, language)):
            full_bodies.append(name)
    assert full_bodies == [], (
        "superseded versions with a body of their own (make each a thin wrapper of the "
        f"newer version, or drop it, in a new revision): {full_bodies}"
    )


# -- every path to head -------------------------------------------------------------------


@dataclass
class History:
    """A database migrated one revision at a time: each function's body after
    each revision, each revision's schema snapshot, a clone stopped at each
    revision and the snapshot it reached at head."""

    bodies: dict[str, dict[str, tuple[str, str]]]
    snapshots: dict[str, dict[str, str]]
    stopped: dict[str, str]
    head: dict[str, str]


@pytest.fixture(scope="module")
def history(pg_server_dsn: str) -> Iterator[History]:
    created: list[str] = []

    def new_database(name: str, template: str | None = None) -> str:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            if template is not None:
                conn.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                    " WHERE datname = %s AND pid <> pg_backend_pid()",
                    (template,),
                )
            statement = pgsql.SQL("CREATE DATABASE {}").format(pgsql.Identifier(name))
            if template is not None:
                statement += pgsql.SQL(" TEMPLATE {}").format(pgsql.Identifier(template))
            conn.execute(statement)
        created.append(name)
        return dsn_for_database(pg_server_dsn, name)

    suffix = uuid.uuid4().hex[:8]
    try:
        steps_name = f"txnq_steps_{suffix}"
        steps = new_database(steps_name)
        result = History(bodies={}, snapshots={}, stopped={}, head={})
        for revision, _ in revisions():
            assert migrate.upgrade(steps, revision) == revision
            with psycopg.connect(steps, autocommit=True) as conn:
                result.bodies[revision] = {
                    name: (prosrc, language)
                    for name, prosrc, language in conn.execute(FUNCTION_BODIES)
                }
            result.snapshots[revision] = schema_snapshot(steps)
            result.stopped[revision] = new_database(f"txnq_at_{revision}_{suffix}", steps_name)
        result.head = result.snapshots[migrate.head_revision()]
        yield result
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
            for name in created:
                conn.execute(
                    pgsql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(
                        pgsql.Identifier(name)
                    )
                )


def test_one_revision_at_a_time_ends_where_one_go_does(history: History, dsn: str) -> None:
    assert_same(schema_snapshot(dsn), history.head, "head in one go", "head one step at a time")


def test_a_database_stopped_at_any_revision_upgrades_to_the_same_head(
    history: History, dsn: str
) -> None:
    fresh = schema_snapshot(dsn)
    differing = []
    for revision, stopped in history.stopped.items():
        assert migrate.upgrade(stopped) == migrate.head_revision()
        if schema_snapshot(stopped) != fresh:
            differing.append(revision)
    assert differing == [], f"stopped at {differing}, then upgraded, head differs from fresh"


def test_no_revision_gives_a_name_another_body_unless_a_thin_wrapper(history: History) -> None:
    replaced = []
    ordered = list(history.bodies.items())
    for (_, before), (revision, after) in pairwise(ordered):
        for name, (prosrc, language) in after.items():
            if name not in before or before[name][0] == prosrc:
                continue
            if (revision, name) in HISTORIC_REPLACEMENTS:
                continue
            if not wraps_a_newer_version(name, thin_wrapper_target(prosrc, language)):
                replaced.append(f"{revision}: {name}")
    assert replaced == [], (
        f"revisions that gave a name another body: {replaced}. Install a new version "
        "(name_vN+1) instead; the old name may only become a thin wrapper of it"
    )


def test_downgrading_the_head_revision_restores_the_one_before(
    history: History, pg_server_dsn: str, dsn: str
) -> None:
    script = ScriptDirectory.from_config(migrate.alembic_config(dsn))
    head = script.get_revision(migrate.head_revision())
    previous = head.down_revision
    assert isinstance(previous, str)
    engine = create_engine_for(dsn)
    try:
        with engine.connect() as connection:
            config = migrate.alembic_config(dsn)
            config.attributes["connection"] = connection
            command.downgrade(config, previous)
            migrate.grant_roles(connection)
            connection.commit()
    finally:
        engine.dispose()
    assert_same(
        history.snapshots[previous],
        schema_snapshot(dsn),
        f"{previous} one step at a time",
        f"head downgraded to {previous}",
    )


# -- snapshots ----------------------------------------------------------------------------

FUNCTION_NAMES = "SELECT proname FROM pg_proc WHERE pronamespace = 'txnq'::regnamespace"
VIEW_NAMES = "SELECT viewname FROM pg_views WHERE schemaname = 'txnq'"
FUNCTION_BODIES = """
SELECT p.proname, p.prosrc, l.lanname
  FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
 WHERE p.pronamespace = 'txnq'::regnamespace
"""

#: ACL arrays sorted, so grants made in another order compare equal.
ACL = "coalesce((SELECT string_agg(a::text, ',' ORDER BY a::text) FROM unnest({}) a), '-')"

SNAPSHOT = {
    "function": f"""
        SELECT p.oid::regprocedure::text,
               pg_get_functiondef(p.oid) || ' owner ' || pg_get_userbyid(p.proowner)
               || ' acl ' || {ACL.format("p.proacl")}
          FROM pg_proc p WHERE p.pronamespace = 'txnq'::regnamespace""",
    "relation": f"""
        SELECT c.relname,
               c.relkind::text || ' owner ' || pg_get_userbyid(c.relowner)
               || ' acl ' || {ACL.format("c.relacl")}
               || ' options ' || coalesce(c.reloptions::text, '-')
               || ' partition ' || coalesce(pg_get_partkeydef(c.oid), '-')
               || ' bound ' || coalesce(pg_get_expr(c.relpartbound, c.oid), '-')
               || ' view ' || coalesce(pg_get_viewdef(c.oid, true), '-')
          FROM pg_class c WHERE c.relnamespace = 'txnq'::regnamespace""",
    "column": f"""
        SELECT c.relname || '.' || a.attname,
               a.attnum::text || ' ' || format_type(a.atttypid, a.atttypmod)
               || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
               || ' default ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '-')
               || ' acl ' || {ACL.format("a.attacl")}
          FROM pg_attribute a
          JOIN pg_class c ON c.oid = a.attrelid
          LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
         WHERE c.relnamespace = 'txnq'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped""",
    "constraint": """
        SELECT conrelid::regclass::text || '.' || conname, pg_get_constraintdef(oid)
          FROM pg_constraint WHERE connamespace = 'txnq'::regnamespace""",
    "index": """
        SELECT indexrelid::regclass::text, pg_get_indexdef(indexrelid)
          FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
         WHERE c.relnamespace = 'txnq'::regnamespace""",
    "trigger": """
        SELECT tgrelid::regclass::text || '.' || tgname, pg_get_triggerdef(t.oid)
          FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
         WHERE c.relnamespace = 'txnq'::regnamespace AND NOT t.tgisinternal""",
    "schema": f"""
        SELECT nspname, pg_get_userbyid(nspowner) || ' acl ' || {ACL.format("nspacl")}
          FROM pg_namespace WHERE nspname = 'txnq'""",
    "default privileges": f"""
        SELECT pg_get_userbyid(defaclrole) || ' ' || defaclobjtype::text, {ACL.format("defaclacl")}
          FROM pg_default_acl WHERE defaclnamespace IN (0, 'txnq'::regnamespace)""",
}


def schema_snapshot(dsn: str) -> dict[str, str]:
    """Every function (its full definition, owner and grants), relation, column,
    constraint, index, trigger and grant of schema txnq, keyed by kind and name."""
    snapshot: dict[str, str] = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for kind, query in SNAPSHOT.items():
            for key, value in conn.execute(query):
                snapshot[f"{kind} {key}"] = value
    return snapshot


def grant_roles(dsn: str) -> None:
    engine = create_engine_for(dsn)
    try:
        with engine.connect() as connection:
            migrate.grant_roles(connection)
            connection.commit()
    finally:
        engine.dispose()


def assert_same(expected: dict[str, str], found: dict[str, str], left: str, right: str) -> None:
    if expected == found:
        return
    lines: list[Any] = []
    for key in sorted(set(expected) | set(found)):
        a, b = expected.get(key), found.get(key)
        if a == b:
            continue
        if a is None or b is None:
            lines.append(f"{key}: only in {left if b is None else right}")
            continue
        diff = difflib.unified_diff(a.splitlines(), b.splitlines(), left, right, lineterm="", n=1)
        lines.append(f"{key}:\n" + "\n".join(list(diff)[:20]))
    raise AssertionError(f"{left} and {right} differ:\n" + "\n".join(lines[:30]))
