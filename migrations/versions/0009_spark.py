"""Spark: the committed-range view (txnq.committed_messages) that Spark reads
over JDBC, the stored offsets of incremental ingestions, and the transactions
of two-phase-commit sinks (docs/spark.md).

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0009/schema/0009_spark.sql",
    "0009/views/committed_messages.sql",
]

DOWNGRADE = """
DROP VIEW txnq.committed_messages;
DROP TABLE txnq.sink_transactions;
DROP TABLE txnq.spark_ingestions;
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
