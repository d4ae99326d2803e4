"""Inspection views (topics, partitions, subscriptions with backlog,
transactions, ledgers, entry logs, GC history) and the txnq_reader role.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

# Views before the role's grants; partition_status before topic_status (which
# sums it); the function before the view that calls it.
SQL_FILES = [
    "0005/views/partition_status.sql",
    "0005/views/topic_status.sql",
    "0005/views/subscription_status.sql",
    "0005/views/transaction_status_v2.sql",
    "0005/views/ledger_status.sql",
    "0005/functions/entry_log_usage_inspect_v1.sql",
    "0005/views/entry_log_status.sql",
    "0005/views/gc_history.sql",
    "0005/schema/0005_inspection.sql",
]

# Back to revision 0004: drop the views (their grants go with them), take back
# the schema grant, and put back the first transaction_status (CREATE OR
# REPLACE cannot drop a column). The txnq_reader role stays: roles belong to
# the cluster, other databases may use it, and DROP ROLE fails while any
# database still grants it something.
DOWNGRADE = """
DROP VIEW IF EXISTS txnq.topic_status, txnq.partition_status, txnq.subscription_status,
    txnq.ledger_status, txnq.entry_log_status, txnq.gc_history, txnq.transaction_status;
DROP FUNCTION IF EXISTS txnq.entry_log_usage_inspect_v1(integer);
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_reader') THEN
        REVOKE USAGE ON SCHEMA txnq FROM txnq_reader;
    END IF;
END $$;
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
    apply_sql_files(op.get_bind(), ["0002/views/transactions.sql"])
