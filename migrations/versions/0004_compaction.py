"""Entry-log compaction (live rows to a new log, then the old one dropped) and
the dirty-data sweep's history.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0004/schema/0004_compaction.sql",
    "0004/functions/compaction_v1.sql",
]

# Back to revision 0003: an unfinished compaction's target is dropped (its
# source is untouched and still attached); finished compactions stay, as
# SEALED logs 0003 reads like any other.
DOWNGRADE = """
DO $$
DECLARE v record;
BEGIN
    FOR v IN SELECT entry_log_id FROM txnq.entry_logs WHERE state = 'COMPACTING' LOOP
        PERFORM txnq.compaction_abandon_v1(v.entry_log_id);
    END LOOP;
END $$;
DROP FUNCTION IF EXISTS txnq.compaction_begin_v1(integer),
    txnq.compaction_tables_v1(integer),
    txnq.compaction_columns_v1(text),
    txnq.compaction_copy_v1(integer, integer, integer, bigint, integer, bigint),
    txnq.compaction_last_key_v1(integer),
    txnq.compaction_catch_up_v1(integer),
    txnq.compaction_swap_v1(integer, bigint, text),
    txnq.compaction_abandon_v1(integer);
DELETE FROM txnq.gc_runs WHERE job = 'doctor';
ALTER TABLE txnq.gc_runs DROP CONSTRAINT gc_runs_job_check;
ALTER TABLE txnq.gc_runs ADD CONSTRAINT gc_runs_job_check CHECK (job IN ('ttl', 'retention', 'gc'));
DROP INDEX txnq.entry_logs_one_compaction_per_source;
ALTER TABLE txnq.entry_logs DROP COLUMN compacted_from;
ALTER TABLE txnq.entry_logs DROP CONSTRAINT entry_logs_state_check;
ALTER TABLE txnq.entry_logs ADD CONSTRAINT entry_logs_state_check
    CHECK (state IN ('ACTIVE', 'SEALED', 'DROPPED'));
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
