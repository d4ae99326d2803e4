"""Backlog quotas (Pulsar's backlogQuota): per-topic limits by size and age
with server defaults, the periodic check and its eviction, and append_v3,
which refuses batches while the last check found the topic over its quota.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0006/schema/0006_backlog_quota.sql",
    "0006/functions/subscription_backlog_v1.sql",
    "0006/functions/check_backlog_quota_v1.sql",
    "0006/functions/append_v3.sql",
    "0006/functions/v2_over_v3.sql",
]

# Back to revision 0005: append_v2 gets its own body back (it no longer knows
# quotas), then what 0006 added goes. Cursors moved by eviction stay moved, as
# TTL's do.
DOWNGRADE = """
DROP FUNCTION IF EXISTS txnq.check_backlog_quota_v1(integer),
    txnq.subscription_backlog_v1(integer);
DROP TABLE txnq.backlog_quota_exceeded;
DELETE FROM txnq.gc_runs WHERE job = 'backlog_quota';
ALTER TABLE txnq.gc_runs DROP CONSTRAINT gc_runs_job_check;
ALTER TABLE txnq.gc_runs ADD CONSTRAINT gc_runs_job_check
    CHECK (job IN ('ttl', 'retention', 'gc', 'doctor'));
ALTER TABLE txnq.topics DROP COLUMN backlog_quota_bytes, DROP COLUMN backlog_quota_seconds,
    DROP COLUMN backlog_quota_policy;
ALTER TABLE txnq.config DROP COLUMN backlog_quota_default_limit_bytes,
    DROP COLUMN backlog_quota_default_limit_seconds, DROP COLUMN backlog_quota_default_policy;
"""

DROP_APPEND_V3 = """
DROP FUNCTION IF EXISTS txnq.append_v3(integer, integer, bigint, integer, bigint, bytea[], bytea[],
                                       jsonb[], timestamptz[], integer, bigint);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    apply_sql_files(op.get_bind(), ["0002/functions/append_v2.sql"])
    driver_connection.execute(DROP_APPEND_V3)
    driver_connection.execute(DOWNGRADE)
