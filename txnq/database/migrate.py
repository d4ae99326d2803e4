"""Schema migrations: Alembic revisions in ``migrations/`` are the only way the
schema changes. ``txnq migrate`` calls :func:`upgrade`; :class:`txnq.Client`
calls :func:`check_schema` and refuses a database whose schema is behind.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from importlib import resources
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from psycopg import sql as psycopg_sql
from sqlalchemy import Connection

from txnq.database.connections import create_engine_for, sqlalchemy_url
from txnq.errors import SchemaOutdatedError
from txnq.settings import Settings

PUBLISH_CONFIG = """
UPDATE txnq.config
   SET ledger_max_entries = %(ledger_max_entries)s,
       ledger_max_bytes = %(ledger_max_bytes)s,
       ledger_min_rollover_seconds = %(ledger_min_rollover_seconds)s,
       ledger_max_rollover_seconds = %(ledger_max_rollover_seconds)s,
       entry_log_max_bytes = %(entry_log_max_bytes)s,
       entry_log_max_age_seconds = %(entry_log_max_age_seconds)s,
       tc_count = %(tc_count)s,
       txn_max_timeout_seconds = %(txn_max_timeout)s,
       backlog_quota_default_limit_bytes = %(backlog_quota_default_limit_bytes)s,
       backlog_quota_default_limit_seconds = %(backlog_quota_default_limit_seconds)s,
       backlog_quota_default_policy = %(backlog_quota_default_policy)s,
       updated_at = now()
"""


#: The newest ``txnq.grant_roles_vN()`` (revision 0007 and later), if any.
NEWEST_GRANT_ROLES = """
SELECT p.proname FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = to_regnamespace('txnq') AND p.pronargs = 0
   AND p.proname ~ '^grant_roles_v[0-9]+$'
 ORDER BY substring(p.proname FROM '[0-9]+$')::integer DESC
 LIMIT 1
"""


def frozen_sql(path: str) -> str:
    """The text of a frozen copy: ``path`` is relative to ``migrations/sql/``
    and starts with the revision that shipped it (``0015/functions/append_v4.sql``).
    A revision runs only frozen copies, never the live tree under ``sql/``:
    what a revision ran once it runs the same way forever (sql/README.md)."""
    return (
        resources.files("txnq.migrations")
        .joinpath("sql", *path.split("/"))
        .read_text(encoding="utf-8")
    )


def apply_sql_files(bind: Connection, paths: Iterable[str]) -> None:
    """Run frozen copies (:func:`frozen_sql`) on the migration's connection.

    They go to psycopg directly and without parameters, so ``%`` in
    ``format()`` calls and ``:`` in casts reach PostgreSQL untouched.
    """
    driver_connection: Any = bind.connection.driver_connection
    for path in paths:
        driver_connection.execute(frozen_sql(path))


def alembic_config(dsn: str) -> Config:
    config = Config()
    config.set_main_option("script_location", str(resources.files("txnq.migrations")))
    config.set_main_option("sqlalchemy.url", sqlalchemy_url(dsn).render_as_string(False))
    return config


@functools.cache
def head_revision() -> str:
    """The newest revision this library ships. Cached: Alembic reads every
    revision file to find it (about 35 ms, paid by every ``Client()`` in
    check_schema, so by every Spark read, docs/benchmarks.md#spark), and the
    installed revisions do not change while the process runs."""
    script = ScriptDirectory.from_config(alembic_config("postgresql://localhost/unused"))
    head = script.get_current_head()
    assert head is not None
    return head


#: The schema's revision through ``txnq.schema_revision_v1()`` (revision 0015
#: on): application roles may not read ``txnq.alembic_version`` itself.
SCHEMA_REVISION = """
SELECT CASE WHEN to_regprocedure('txnq.schema_revision_v1()') IS NOT NULL
            THEN 'function' END
"""


def current_revision(connection: Connection) -> str | None:
    """The revision the schema is at (None: no txnq schema). Read through
    ``txnq.schema_revision_v1()`` where it exists, so that roles without any
    privilege on txnq's tables (docs/security.md) can check it; from
    ``txnq.alembic_version`` on older schemas."""
    driver_connection: Any = connection.connection.driver_connection
    row = driver_connection.execute(SCHEMA_REVISION).fetchone()
    if row is not None and row[0] == "function":
        revision = driver_connection.execute("SELECT txnq.schema_revision_v1()").fetchone()
        return None if revision is None else revision[0]
    context = MigrationContext.configure(connection, opts={"version_table_schema": "txnq"})
    return context.get_current_revision()


def upgrade(dsn: str, revision: str = "head", settings: Settings | None = None) -> str:
    """Migrate the database to ``revision`` and publish the server-side settings.

    Returns the revision the database is at afterwards.
    """
    engine = create_engine_for(dsn, pool_size=1)
    try:
        with engine.connect() as connection:
            config = alembic_config(dsn)
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
            grant_roles(connection)
            if settings is not None and current_revision(connection) == head_revision():
                publish_settings(connection, settings)
            connection.commit()
            now = current_revision(connection)
    finally:
        engine.dispose()
    return now or "base"


def grant_roles(connection: Connection) -> None:
    """Grant the txnq roles (txnq_admin, txnq_client, txnq_worker, txnq_reader)
    what they may do on every object of schema txnq, by the rules of the newest
    ``txnq.grant_roles_vN()`` (revision 0007 on, docs/security.md). Runs after every
    upgrade, so objects of later revisions are covered without grants of their
    own; before revision 0007 there is no such function and nothing happens."""
    driver_connection: Any = connection.connection.driver_connection
    row = driver_connection.execute(NEWEST_GRANT_ROLES).fetchone()
    if row is not None:
        driver_connection.execute(
            psycopg_sql.SQL("SELECT {}()").format(psycopg_sql.Identifier("txnq", row[0]))
        )


def publish_settings(connection: Connection, settings: Settings) -> None:
    """Write the settings the SQL functions act on (ledger and entry-log rollover,
    transaction limits, backlog quota defaults)."""
    driver_connection: Any = connection.connection.driver_connection
    driver_connection.execute(
        PUBLISH_CONFIG,
        {
            "ledger_max_entries": settings.ledger_max_entries,
            "ledger_max_bytes": settings.ledger_max_bytes,
            "ledger_min_rollover_seconds": settings.ledger_min_rollover_seconds,
            "ledger_max_rollover_seconds": settings.ledger_max_rollover_seconds,
            "entry_log_max_bytes": settings.entry_log_max_bytes,
            "entry_log_max_age_seconds": settings.entry_log_max_age_seconds,
            "tc_count": settings.tc_count,
            "txn_max_timeout": settings.txn_max_timeout,
            "backlog_quota_default_limit_bytes": settings.backlog_quota_default_limit_bytes,
            "backlog_quota_default_limit_seconds": settings.backlog_quota_default_limit_seconds,
            "backlog_quota_default_policy": settings.backlog_quota_default_policy,
        },
    )


def check_schema(connection: Connection) -> str:
    """Raise :class:`SchemaOutdatedError` unless the database is at the head revision."""
    found = current_revision(connection)
    expected = head_revision()
    if found == expected:
        return found
    script = ScriptDirectory.from_config(alembic_config("postgresql://localhost/unused"))
    if found is not None and found not in {rev.revision for rev in script.walk_revisions()}:
        # A revision this library does not know is a newer schema. Data-path
        # functions are versioned (append_v1 stays when append_v2 arrives), so an
        # older client keeps working during a rolling upgrade.
        return found
    if found is None:
        raise SchemaOutdatedError(
            "this database has no txnq schema yet: run `txnq migrate --dsn <dsn>` "
            "(or `txnq.database.migrate.upgrade(dsn)`) first"
        )
    raise SchemaOutdatedError(
        f"the txnq schema is at revision {found}, this library needs {expected}: "
        "run `txnq migrate` to upgrade it"
    )
