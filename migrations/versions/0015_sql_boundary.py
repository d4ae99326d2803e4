"""The SQL boundary holds (issue 17): every public txnq function validates
its arguments itself and checks the caller's permission on the topic; the
argument checks shared by many functions live in txnq.require_*_v1, the
permission checks in txnq.authorize*_v1.

workers: the functions of the coordinator workers and the scheduler get a v2
that checks its arguments (their v1 become wrappers); a compaction target
records the source row count of its catch-up (entry_logs.compaction_source_rows),
which the swap requires.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

from txnq.migrate import apply_sql_files

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

SQL_FILES = [
    "functions/require_partition_v1.sql",
    "functions/require_number_v1.sql",
    "functions/require_timestamps_v1.sql",
    "functions/require_properties_v1.sql",
    "functions/authorize_v1.sql",
    "functions/authorize_topic_name_v1.sql",
    "functions/authorize_txn_v1.sql",
    # workers: the functions of the coordinator workers and the scheduler
    # (marker phase, timeouts, TTL, retention, backlog quota, ledger and entry-log
    # rollover, entry-log usage and compaction) check their arguments; their v1
    # become wrappers. A compaction target records its catch-up's count.
    "schema/0015_compaction_catch_up.sql",
    "functions/finish_txn_v2.sql",
    "functions/complete_txn_partition_v2.sql",
    "functions/complete_txn_subscription_v2.sql",
    "functions/complete_txn_v2.sql",
    "functions/abort_timed_out_v2.sql",
    "functions/expire_ttl_v2.sql",
    "functions/apply_retention_v2.sql",
    "functions/check_backlog_quota_v2.sql",
    "functions/roll_entry_log_v2.sql",
    "functions/roll_ledger_v2.sql",
    "functions/entry_log_usage_v2.sql",
    "functions/entry_log_usage_inspect_v2.sql",
    "functions/compaction_v2.sql",
    "functions/superseded_0015_workers.sql",
]

# Downgrading reinstalls the bodies that this revision's wrappers replaced,
# before DOWNGRADE drops what the revision added.
RESTORE_FILES = [
    # workers
    "functions/finish_txn_v1.sql",
    "functions/complete_txn_partition_v1.sql",
    "functions/complete_txn_subscription_v1.sql",
    "functions/complete_txn_v1.sql",
    "functions/abort_timed_out_v1.sql",
    "functions/expire_ttl_v1.sql",
    "functions/apply_retention_v1.sql",
    "functions/check_backlog_quota_v1.sql",
    "functions/roll_entry_log_v1.sql",
    "functions/roll_ledger_v1.sql",
    "functions/entry_log_usage_v1.sql",
    "functions/entry_log_usage_inspect_v1.sql",
    "functions/compaction_v1.sql",
]

DOWNGRADE = """
DROP FUNCTION txnq.require_partition_v1(integer, integer);
DROP FUNCTION txnq.require_number_v1(text, double precision, double precision, double precision, boolean);
DROP FUNCTION txnq.require_timestamps_v1(text, timestamptz[]);
DROP FUNCTION txnq.require_properties_v1(jsonb[]);
DROP FUNCTION txnq.authorize_v1(integer, text);
DROP FUNCTION txnq.authorize_topic_name_v1(text, text);
DROP FUNCTION txnq.authorize_txn_v1(integer, bigint);
-- workers: the restored v1 bodies run as their owner again, as revision 0007 made them.
ALTER FUNCTION txnq.roll_entry_log_v1(boolean)
    SECURITY DEFINER SET search_path = pg_catalog, txnq, pg_temp;
ALTER FUNCTION txnq.compaction_begin_v1(integer)
    SECURITY DEFINER SET search_path = pg_catalog, txnq, pg_temp;
DROP FUNCTION txnq.finish_txn_v2(integer, bigint);
DROP FUNCTION txnq.complete_txn_v2(integer, bigint);
DROP FUNCTION txnq.complete_txn_partition_v2(integer, bigint, integer, integer);
DROP FUNCTION txnq.complete_txn_subscription_v2(integer, bigint, integer, integer, bigint);
DROP FUNCTION txnq.abort_timed_out_v2(integer);
DROP FUNCTION txnq.expire_ttl_v2(integer);
DROP FUNCTION txnq.apply_retention_v2(integer);
DROP FUNCTION txnq.check_backlog_quota_v2(integer);
DROP FUNCTION txnq.roll_entry_log_v2(boolean);
DROP FUNCTION txnq.roll_ledger_v2(integer, integer, bigint);
DROP FUNCTION txnq.entry_log_usage_inspect_v2(integer);
DROP FUNCTION txnq.entry_log_usage_v2(integer);
DROP FUNCTION txnq.compaction_begin_v2(integer);
DROP FUNCTION txnq.compaction_last_key_v2(integer);
DROP FUNCTION txnq.compaction_copy_v2(integer, integer, integer, bigint, integer, bigint);
DROP FUNCTION txnq.compaction_catch_up_v2(integer);
DROP FUNCTION txnq.compaction_swap_v2(integer, bigint, text);
DROP FUNCTION txnq.compaction_abandon_v2(integer);
DROP FUNCTION txnq.compaction_tables_v2(integer);
ALTER TABLE txnq.entry_logs DROP COLUMN compaction_source_rows;
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), RESTORE_FILES)
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
