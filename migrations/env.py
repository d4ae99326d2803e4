"""Alembic environment of txnq.

The version table lives in schema ``txnq`` beside the queue's tables, so txnq
can share a database with an application. Migrations run under an advisory
lock, so two processes running ``txnq migrate`` at once apply each revision once.
"""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine, pool, text

from txnq.database.schema import metadata

MIGRATION_LOCK = "SELECT pg_advisory_lock(hashtext('txnq.migrate'))"
MIGRATION_UNLOCK = "SELECT pg_advisory_unlock(hashtext('txnq.migrate'))"


def run_migrations_online() -> None:
    config = context.config
    connection = config.attributes.get("connection")
    if connection is None:
        engine = create_engine(config.get_main_option("sqlalchemy.url"), poolclass=pool.NullPool)
        with engine.connect() as connection:
            _run(connection)
    else:
        _run(connection)


def _run(connection) -> None:  # type: ignore[no-untyped-def]
    connection.execute(text(MIGRATION_LOCK))
    connection.execute(text("CREATE SCHEMA IF NOT EXISTS txnq"))
    connection.commit()
    try:
        context.configure(
            connection=connection,
            target_metadata=metadata,
            version_table_schema="txnq",
            include_schemas=True,
            transaction_per_migration=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
    finally:
        connection.execute(text(MIGRATION_UNLOCK))
        connection.commit()


if context.is_offline_mode():
    raise SystemExit("txnq migrations run online only: use `txnq migrate`")
run_migrations_online()
