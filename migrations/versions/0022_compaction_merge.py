"""compaction_merge_v1: GC merges small sealed entry logs into one.

issue 20 asked that the number of entry-log partitions stay bounded under a
slow subscriber. Compaction turns one sealed log into one new log, so logs
that a slow subscription holds a little of each never became fewer.
txnq.compaction_merge_v1 moves the live rows of one sealed log into another
and drops it, in one transaction (readers see the rows in one log or the
other, never both, never neither); GC merges the small logs of a run into
one within ENTRY_LOG_MAX_BYTES (txnq/lifecycle/entry_logs.py).

grant_roles_v4 (whose scheduler-only list names it) runs at the end.
Downgrade drops the function.

Revision ID: 0022
Revises: 0021
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

SQL_FILES = ["0022/functions/compaction_merge_v1.sql"]

GRANT_ROLES = "SELECT txnq.grant_roles_v4()"

DOWNGRADE = "DROP FUNCTION txnq.compaction_merge_v1(integer, integer, text)"


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    driver_connection.execute(GRANT_ROLES)
