"""purge_history_v1: the history txnq kept forever is deleted after a retention.

issue 20 asked that a topic run for months with its database staying the
same size. Finished transactions (with their log, partitions and
subscriptions), aborted ranges nothing is left to hide, DELETED ledgers whose
entries are gone, DROPPED entry logs, GC runs, consumers whose lease expired
long ago, and producers (a new random name per producer instance) were kept
forever. txnq.purge_history_v1 deletes them once
older than the retention the scheduler's `purge_history` job passes
(FINISHED_TXN_RETENTION_SECONDS, HISTORY_RETENTION_SECONDS,
PRODUCER_EXPIRY_SECONDS), a bounded number per call. docs/lifecycle.md has the rule of every table.

Its runs are recorded in txnq.gc_runs as job 'purge' (the check constraint
gains it). grant_roles_v4 puts the function in the scheduler class
(grant_roles_v2's lists predate it) and runs at the end. Downgrade drops
both, the 'purge' runs and the constraint's new value.

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0020/schema/0020_purge_history.sql",
    "0020/functions/purge_history_v1.sql",
    "0020/functions/grant_roles_v4.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v4()"

DOWNGRADE = [
    "DELETE FROM txnq.gc_runs WHERE job = 'purge'",
    "ALTER TABLE txnq.gc_runs DROP CONSTRAINT gc_runs_job_check",
    "ALTER TABLE txnq.gc_runs ADD CONSTRAINT gc_runs_job_check "
    "CHECK (job IN ('ttl', 'retention', 'gc', 'doctor', 'backlog_quota'))",
    "DROP FUNCTION txnq.purge_history_v1(double precision, double precision, double precision, "
    "integer)",
    "DROP FUNCTION txnq.grant_roles_v4()",
    "SELECT txnq.grant_roles_v3()",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    for statement in DOWNGRADE:
        driver_connection.execute(statement)
