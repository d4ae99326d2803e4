"""No stored row can stall anything: failures of the scheduler's jobs and of
the coordinators' marker phase are isolated per topic (partition, entry log,
transaction) and recorded: txnq.job_failures, the view
txnq.job_failure_status, and a failures column of txnq.gc_runs and
txnq.gc_history. grant_roles_v3 lets the worker roles write
txnq.job_failures (revision 0015's roles hold no table rights but those
listed). docs/lifecycle.md ("When a job fails").

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0016/schema/0016_job_failures.sql",
    "0016/views/gc_history_v2.sql",
    "0016/views/job_failure_status.sql",
    "0016/functions/grant_roles_v3.sql",
]

# Back to revision 0015: gc_history loses its last column (a view cannot drop
# a column with CREATE OR REPLACE: dropped and created as revision 0005 did,
# with its grant to txnq_reader; txnq migrate grants the other roles again).
DOWNGRADE = """
DROP FUNCTION txnq.grant_roles_v3();
DROP VIEW txnq.job_failure_status;
DROP VIEW txnq.gc_history;
DROP TABLE txnq.job_failures;
ALTER TABLE txnq.gc_runs DROP COLUMN failures;
"""

GRANT_READER = """
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_reader') THEN
        GRANT SELECT ON txnq.gc_history TO txnq_reader;
    END IF;
END $$;
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    apply_sql_files(op.get_bind(), ["0005/views/gc_history.sql"])
    driver_connection.execute(GRANT_READER)
