"""The SQL boundary holds (issue 17): every public txnq function validates
its arguments itself and checks the caller's permission on the topic; the
argument checks shared by many functions live in txnq.require_*_v1, the
permission checks in txnq.authorize*_v1.

Producing side (group produce): append_v4, append_delayed_v2,
create_topic_v2, delete_topic_v2, add_partitions_v2, register_producer_v2,
init_transactional_id_v2, partition_for_key_v2, open_txn_v2, end_txn_v2,
bind_txn_v2, stage_send_v2, send_at_commit_v2, publish_staged_v2 (and the
commit triggers' publish_staged_at_commit_v2) and dead_letter_v2 validate
their arguments and call the permission hooks; the versions they supersede
become wrappers of them (superseded_0015_produce.sql), so every client from
revision 0001 on gets the checks (append_v1 and append_v2 stay wrappers of
append_v3). find_duplicate_v1 and txn_require_open_v1 are internal (only
checked callers call them) and stay; key_hash_v1 accepts every key.

Worker side (group workers): the functions of the coordinator workers and
the scheduler (finish_txn, complete_txn, complete_txn_partition,
complete_txn_subscription, abort_timed_out, expire_ttl, apply_retention,
check_backlog_quota, roll_entry_log, roll_ledger, entry_log_usage,
entry_log_usage_inspect, compaction_*) get a v2 that checks its arguments;
their v1 become wrappers (superseded_0015_workers.sql). A compaction target
records the source row count of its catch-up
(entry_logs.compaction_source_rows), which the swap requires.

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
    # --- group produce: topics, producing, transactions, application transactions.
    "functions/append_v4.sql",
    "functions/append_delayed_v2.sql",
    "functions/create_topic_v2.sql",
    "functions/delete_topic_v2.sql",
    "functions/add_partitions_v2.sql",
    "functions/register_producer_v2.sql",
    "functions/init_transactional_id_v2.sql",
    "functions/partition_for_key_v2.sql",
    "functions/open_txn_v2.sql",
    "functions/end_txn_v2.sql",
    "functions/bind_txn_v2.sql",
    "functions/stage_send_v2.sql",
    "functions/send_at_commit_v2.sql",
    "functions/publish_staged_v2.sql",
    "functions/dead_letter_v2.sql",
    "functions/superseded_0015_produce.sql",
    # --- end of group produce.
    # --- group workers: the coordinator workers' and the scheduler's functions
    # (marker phase, timeouts, TTL, retention, backlog quota, ledger and entry-log
    # rollover, entry-log usage and compaction); a compaction target records its
    # catch-up's count.
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
    # --- end of group workers.
]

# Downgrading: the superseded versions get their own bodies back (the files
# of the revisions that shipped them; publish_staged_v1.sql also points the
# commit triggers back at publish_staged_at_commit_v1), before the new
# versions are dropped.
DOWNGRADE_REINSTALL = [
    # --- group produce.
    "functions/append_v3.sql",
    "functions/append_delayed_v1.sql",
    "functions/add_partitions_v1.sql",
    "functions/create_topic_v1.sql",
    "functions/delete_topic_v1.sql",
    "functions/register_producer_v1.sql",
    "functions/init_transactional_id_v1.sql",
    "functions/partition_for_key_v1.sql",
    "functions/open_txn_v1.sql",
    "functions/end_txn_v1.sql",
    "functions/bind_txn_v1.sql",
    "functions/stage_send_v1.sql",
    "functions/send_at_commit_v1.sql",
    "functions/publish_staged_v1.sql",
    "functions/dead_letter_v1.sql",
    # --- end of group produce.
    # --- group workers.
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
    # --- end of group workers.
]

DOWNGRADE = """
-- group produce
DROP FUNCTION txnq.append_v4(integer, integer, bigint, integer, bigint, bytea[], bytea[], jsonb[],
                             timestamptz[], integer, bigint);
DROP FUNCTION txnq.append_delayed_v2(integer, integer, bigint, integer, bigint, bytea[], bytea[],
                                     jsonb[], timestamptz[], integer, bigint, timestamptz);
DROP FUNCTION txnq.create_topic_v2(text, integer, double precision, bigint, double precision,
                                   integer);
DROP FUNCTION txnq.delete_topic_v2(integer, boolean);
DROP FUNCTION txnq.add_partitions_v2(integer, integer);
DROP FUNCTION txnq.register_producer_v2(integer, text);
DROP FUNCTION txnq.init_transactional_id_v2(text);
DROP FUNCTION txnq.partition_for_key_v2(bytea, integer);
DROP FUNCTION txnq.open_txn_v2(integer, double precision);
DROP FUNCTION txnq.end_txn_v2(integer, bigint, boolean, text, boolean);
DROP FUNCTION txnq.bind_txn_v2(integer, bigint, text, integer);
DROP FUNCTION txnq.send_at_commit_v2(text, bytea, bytea, jsonb, integer);
DROP FUNCTION txnq.stage_send_v2(integer, integer, bytea[], bytea[], jsonb[], timestamptz[]);
DROP FUNCTION txnq.publish_staged_at_commit_v2();
DROP FUNCTION txnq.publish_staged_v2();
DROP FUNCTION txnq.dead_letter_v2(integer, integer, bigint, bigint, integer, integer, text);
-- end of group produce
DROP FUNCTION txnq.require_partition_v1(integer, integer);
DROP FUNCTION txnq.require_number_v1(
    text, double precision, double precision, double precision, boolean);
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
    apply_sql_files(op.get_bind(), DOWNGRADE_REINSTALL)
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
