"""The schema changes only through Alembic revisions, and the migrated schema
is what txnq.schema declares."""

from __future__ import annotations

import psycopg
import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text

from txnq import errors
from txnq.client import Client
from txnq.database.connections import create_engine_for
from txnq.database.migrate import (
    alembic_config,
    check_schema,
    current_revision,
    head_revision,
    upgrade,
)
from txnq.database.schema import metadata


def test_migrated_schema_matches_the_declared_metadata(dsn: str) -> None:
    engine = create_engine_for(dsn)
    try:
        with engine.connect() as connection:
            context = MigrationContext.configure(
                connection,
                opts={
                    "include_schemas": True,
                    "version_table_schema": "txnq",
                    "include_name": _only_txnq,
                },
            )
            differences = compare_metadata(context, metadata)
    finally:
        engine.dispose()
    assert differences == []


def _only_txnq(name: str | None, type_: str, parent_names: dict[str, str | None]) -> bool:
    if type_ == "schema":
        return name == "txnq"
    # Entry logs and txn_log's time partitions are partitions created at run
    # time, and Alembic's own table.
    return not (
        type_ == "table"
        and name is not None
        and (name.startswith(("entries_", "txn_log_")) or name == "alembic_version")
    )


def test_upgrade_is_idempotent_and_reports_the_head(dsn: str) -> None:
    assert upgrade(dsn) == head_revision()
    assert upgrade(dsn) == head_revision()


def _downgrade_to_base(dsn: str) -> None:
    from alembic import command

    engine = create_engine_for(dsn)
    try:
        with engine.connect() as connection:
            config = alembic_config(dsn)
            config.attributes["connection"] = connection
            command.downgrade(config, "base")
    finally:
        engine.dispose()


def test_downgrade_then_upgrade_rebuilds_the_schema(dsn: str) -> None:
    _downgrade_to_base(dsn)
    engine = create_engine_for(dsn)
    try:
        with engine.connect() as connection:
            assert current_revision(connection) is None
            count = connection.execute(
                text(
                    "SELECT count(*) FROM pg_tables WHERE schemaname = 'txnq' "
                    "AND tablename <> 'alembic_version'"
                )
            ).scalar()
            assert count == 0
    finally:
        engine.dispose()
    assert upgrade(dsn) == head_revision()


def test_client_refuses_a_database_without_the_schema(pg_server_dsn: str) -> None:
    from tests.conftest import dsn_for_database

    with psycopg.connect(pg_server_dsn, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS txnq_unmigrated")
        admin.execute("CREATE DATABASE txnq_unmigrated")
    try:
        with pytest.raises(errors.SchemaOutdatedError, match="txnq migrate"):
            Client(dsn_for_database(pg_server_dsn, "txnq_unmigrated"))
    finally:
        with psycopg.connect(pg_server_dsn, autocommit=True) as admin:
            admin.execute("DROP DATABASE txnq_unmigrated WITH (FORCE)")


def test_a_newer_schema_is_accepted_because_functions_are_versioned(dsn: str) -> None:
    # A revision the library does not know comes from a newer txnq: append_v1
    # and the other v1 functions stay, so an older client keeps working.
    engine = create_engine_for(dsn)
    try:
        with engine.connect() as connection:
            connection.execute(text("UPDATE txnq.alembic_version SET version_num = 'f00dfeed'"))
            connection.commit()
            assert check_schema(connection) == "f00dfeed"
            connection.execute(
                text("UPDATE txnq.alembic_version SET version_num = :v"), {"v": head_revision()}
            )
            connection.commit()
    finally:
        engine.dispose()


def test_client_refuses_a_database_whose_schema_was_rolled_back(dsn: str) -> None:
    _downgrade_to_base(dsn)
    with pytest.raises(errors.SchemaOutdatedError, match="txnq migrate"):
        Client(dsn)
