"""One live version of each SQL function (issue 18, sql/README.md).

Revision 0014 installed a second body under the name claimed_messages_v1
(revision 0013 had installed another), and claim_v1.sql and other files of
shipped revisions were edited in place: a database migrated last week could
run different code from a fresh one. From this revision on every revision
runs frozen copies of its SQL (migrations/sql/<revision>/, checksummed in
migrations/sql/SHA256SUMS) and sql/ holds only what head runs.

- claimed_messages_v2: revision 0014's body under a name of its own;
  claimed_messages_v1 becomes a thin wrapper of it.
- claim_v4: claim_v3's body (same parameters, result, checks, locks and plans),
  calling claimed_messages_v2 and dead_letter_v2 (what dead_letter_v1 wraps).
  claim_v1, claim_v2 and claim_v3 become thin wrappers of it, so every
  database runs the same claim whatever path it took (claim_v1 was edited in
  place after revision 0008 shipped).
- Every other superseded version was already a thin wrapper of a newer one at
  revision 0016 (revisions 0002, 0006 and 0015 made them; the full bodies that
  sql/functions/ still carried, ack_shared_v1 with the race revision 0011
  fixed among them, were what replaying old revisions installed, never what
  head ran). Each is reinstalled from a file of its own, unchanged, as are the
  functions that lived inside schema files (grant_roles_v1, the triggers'
  claims_forget_cursors_v1 and delayed_entries_forget_topic_v1) and revision
  0004's compaction_columns_v1.
- Every other function and view of head is re-applied from the frozen copy
  of the revision that installed it: files of revisions 0001, 0002, 0004,
  0005, 0007, 0008, 0013 and 0015 changed after those revisions had reached
  main (sql/README.md, "History"), so databases migrated in between may run
  older text; after this revision all run the text a fresh database runs.
- Nothing is dropped: every superseded version is callable by a client of
  some released revision (claimed_messages_v1 is internal, but stays as the
  wrapper the rule asks for). grant_roles_v1 and grant_roles_v2 keep their
  bodies: each grant_roles_vN runs the one before it and adds its own rules.

The permissions of revision 0015 hold for what this revision installs:
grant_roles_v3 runs at the end, in this transaction (CREATE OR REPLACE resets
SECURITY DEFINER and the pinned search_path; `txnq migrate` runs it again).

Downgrade: claim_v3 and claimed_messages_v1 get revision 0015's and 0014's
bodies back, claim_v1 and claim_v2 wrap claim_v3 again, claim_v4 and
claimed_messages_v2 go. The other bodies are the ones revision 0016 ran.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

SQL_FILES = [
    # claimed_messages_v2 and claim_v4: new names for what claimed_messages_v1 and
    # claim_v3 ran; the old names become wrappers of them.
    "0017/functions/claimed_messages_v2.sql",
    "0017/functions/claim_v4.sql",
    "0017/functions/claimed_messages_v1.sql",
    "0017/functions/claim_v3.sql",
    "0017/functions/claim_v2.sql",
    "0017/functions/claim_v1.sql",
    # Every other superseded version, one file each: the wrappers revisions 0002,
    # 0006 and 0015 wrote in shared files, and the live functions of revision
    # 0004's compaction_v1.sql and of schema files (unchanged bodies).
    "0017/functions/abort_timed_out_v1.sql",
    "0017/functions/ack_shared_v1.sql",
    "0017/functions/ack_shared_v2.sql",
    "0017/functions/ack_shared_v3.sql",
    "0017/functions/ack_v1.sql",
    "0017/functions/ack_v2.sql",
    "0017/functions/add_partitions_v1.sql",
    "0017/functions/append_delayed_v1.sql",
    "0017/functions/append_v1.sql",
    "0017/functions/append_v2.sql",
    "0017/functions/append_v3.sql",
    "0017/functions/apply_retention_v1.sql",
    "0017/functions/bind_txn_v1.sql",
    "0017/functions/check_backlog_quota_v1.sql",
    "0017/functions/claims_forget_cursors_v1.sql",
    "0017/functions/compaction_abandon_v1.sql",
    "0017/functions/compaction_begin_v1.sql",
    "0017/functions/compaction_catch_up_v1.sql",
    "0017/functions/compaction_columns_v1.sql",
    "0017/functions/compaction_copy_v1.sql",
    "0017/functions/compaction_last_key_v1.sql",
    "0017/functions/compaction_swap_v1.sql",
    "0017/functions/compaction_tables_v1.sql",
    "0017/functions/complete_txn_partition_v1.sql",
    "0017/functions/complete_txn_subscription_v1.sql",
    "0017/functions/complete_txn_v1.sql",
    "0017/functions/create_topic_v1.sql",
    "0017/functions/dead_letter_v1.sql",
    "0017/functions/delayed_entries_forget_topic_v1.sql",
    "0017/functions/delete_topic_v1.sql",
    "0017/functions/earliest_offset_v1.sql",
    "0017/functions/end_txn_v1.sql",
    "0017/functions/entry_log_usage_inspect_v1.sql",
    "0017/functions/entry_log_usage_v1.sql",
    "0017/functions/expire_ttl_v1.sql",
    "0017/functions/fetch_v1.sql",
    "0017/functions/fetch_v2.sql",
    "0017/functions/fetch_v3.sql",
    "0017/functions/finish_txn_v1.sql",
    "0017/functions/grant_roles_v1.sql",
    "0017/functions/heartbeat_consumer_v1.sql",
    "0017/functions/init_transactional_id_v1.sql",
    "0017/functions/nack_shared_v1.sql",
    "0017/functions/open_txn_v1.sql",
    "0017/functions/partition_for_key_v1.sql",
    "0017/functions/publish_staged_at_commit_v1.sql",
    "0017/functions/publish_staged_v1.sql",
    "0017/functions/register_consumer_v1.sql",
    "0017/functions/register_producer_v1.sql",
    "0017/functions/release_claims_v1.sql",
    "0017/functions/roll_entry_log_v1.sql",
    "0017/functions/roll_ledger_v1.sql",
    "0017/functions/seek_v1.sql",
    "0017/functions/send_at_commit_v1.sql",
    "0017/functions/stage_ack_v1.sql",
    "0017/functions/stage_send_v1.sql",
    "0017/functions/subscribe_v1.sql",
    "0017/functions/subscription_backlog_v1.sql",
    "0017/functions/unsubscribe_v1.sql",
    # The rest of head's functions and views, re-applied from the frozen copy of
    # the revision that installed them (the text a fresh database runs).
    "0001/functions/entry_log_needs_roll_v1.sql",
    "0001/functions/find_duplicate_v1.sql",
    "0002/functions/txn_require_open_v1.sql",
    "0002/functions/apply_acks_v1.sql",
    "0008/functions/key_hash_v1.sql",
    "0008/functions/shared_advance_v1.sql",
    "0008/functions/dispatch_shared_v1.sql",
    "0008/functions/claims_after_pending_acks_v1.sql",
    "0010/functions/check_ack_once_v1.sql",
    "0015/functions/require_partition_v1.sql",
    "0015/functions/require_number_v1.sql",
    "0015/functions/require_timestamps_v1.sql",
    "0015/functions/require_properties_v1.sql",
    "0015/functions/authorize_v1.sql",
    "0015/functions/authorize_topic_name_v1.sql",
    "0015/functions/authorize_txn_v1.sql",
    "0015/functions/append_v4.sql",
    "0015/functions/append_delayed_v2.sql",
    "0015/functions/create_topic_v2.sql",
    "0015/functions/delete_topic_v2.sql",
    "0015/functions/add_partitions_v2.sql",
    "0015/functions/register_producer_v2.sql",
    "0015/functions/init_transactional_id_v2.sql",
    "0015/functions/partition_for_key_v2.sql",
    "0015/functions/open_txn_v2.sql",
    "0015/functions/end_txn_v2.sql",
    "0015/functions/bind_txn_v2.sql",
    "0015/functions/stage_send_v2.sql",
    "0015/functions/send_at_commit_v2.sql",
    "0015/functions/publish_staged_v2.sql",
    "0015/functions/dead_letter_v2.sql",
    "0015/functions/finish_txn_v2.sql",
    "0015/functions/complete_txn_partition_v2.sql",
    "0015/functions/complete_txn_subscription_v2.sql",
    "0015/functions/complete_txn_v2.sql",
    "0015/functions/abort_timed_out_v2.sql",
    "0015/functions/expire_ttl_v2.sql",
    "0015/functions/apply_retention_v2.sql",
    "0015/functions/check_backlog_quota_v2.sql",
    "0015/functions/roll_entry_log_v2.sql",
    "0015/functions/roll_ledger_v2.sql",
    "0015/functions/entry_log_usage_v2.sql",
    "0015/functions/entry_log_usage_inspect_v2.sql",
    "0015/functions/compaction_v2.sql",
    "0015/functions/require_subscription_v1.sql",
    "0015/functions/require_acks_v1.sql",
    "0015/functions/require_claimed_messages_v1.sql",
    "0015/functions/fetch_v4.sql",
    "0015/functions/ack_v3.sql",
    "0015/functions/stage_ack_v2.sql",
    "0015/functions/ack_shared_v4.sql",
    "0015/functions/nack_shared_v2.sql",
    "0015/functions/release_claims_v2.sql",
    "0015/functions/earliest_offset_v2.sql",
    "0015/functions/subscribe_v2.sql",
    "0015/functions/unsubscribe_v2.sql",
    "0015/functions/register_consumer_v2.sql",
    "0015/functions/heartbeat_consumer_v2.sql",
    "0015/functions/seek_v2.sql",
    "0015/functions/subscription_backlog_v2.sql",
    "0015/functions/caller_v1.sql",
    "0015/functions/caller_role_v1.sql",
    "0015/functions/caller_is_trusted_v1.sql",
    "0015/functions/caller_is_admin_v1.sql",
    "0015/functions/permission_granted_v1.sql",
    "0015/functions/permission_denied_v1.sql",
    "0015/functions/topic_visible_v1.sql",
    "0015/functions/authorize_use_v1.sql",
    "0015/functions/require_permission_args_v1.sql",
    "0015/functions/grant_topic_permission_v1.sql",
    "0015/functions/revoke_topic_permission_v1.sql",
    "0015/functions/topic_permissions_v1.sql",
    "0015/functions/schema_revision_v1.sql",
    "0015/functions/cursor_generation_v1.sql",
    "0015/functions/cursor_positions_v1.sql",
    "0015/functions/close_consumer_v1.sql",
    "0015/functions/register_waiters_v1.sql",
    "0015/functions/txn_limits_v1.sql",
    "0015/functions/txn_state_v1.sql",
    "0015/functions/txn_list_v1.sql",
    "0015/functions/txn_describe_v1.sql",
    "0015/functions/txn_describe_partitions_v1.sql",
    "0015/functions/txn_describe_subscriptions_v1.sql",
    "0015/functions/txn_history_v1.sql",
    "0015/functions/txn_find_hanging_v1.sql",
    "0015/functions/next_visible_claim_v1.sql",
    "0015/functions/topic_by_name_v1.sql",
    "0015/functions/topic_partition_count_v1.sql",
    "0015/functions/list_topics_v1.sql",
    "0015/functions/topic_partitions_v1.sql",
    "0015/functions/list_subscriptions_v1.sql",
    "0015/functions/subscription_by_name_v1.sql",
    "0015/functions/subscription_cursors_v1.sql",
    "0015/functions/subscription_consumers_v1.sql",
    "0015/functions/set_topic_policy_v1.sql",
    "0015/functions/set_backlog_quota_v1.sql",
    "0015/functions/backlog_quota_info_v1.sql",
    "0015/functions/discard_staged_v1.sql",
    "0015/functions/spark_partition_bounds_v1.sql",
    "0015/functions/spark_first_offset_at_v1.sql",
    "0015/functions/read_committed_v1.sql",
    "0015/functions/spark_ingestion_get_v1.sql",
    "0015/functions/spark_ingestion_list_v1.sql",
    "0015/functions/spark_ingestion_create_v1.sql",
    "0015/functions/spark_ingestion_plan_v1.sql",
    "0015/functions/spark_ingestion_commit_v1.sql",
    "0015/functions/spark_ingestion_delete_v1.sql",
    "0015/functions/sink_begin_v1.sql",
    "0015/functions/sink_prepare_v1.sql",
    "0015/functions/sink_forget_v1.sql",
    "0015/functions/sink_pending_v1.sql",
    "0015/functions/sink_session_epoch_v1.sql",
    "0015/functions/sink_session_lock_v1.sql",
    "0015/functions/coordinator_decided_v1.sql",
    "0015/functions/coordinator_record_owner_v1.sql",
    "0015/functions/gc_drop_entry_log_v1.sql",
    "0015/functions/grant_roles_v2.sql",
    "0016/functions/grant_roles_v3.sql",
    "0001/views/messages.sql",
    "0005/views/partition_status.sql",
    "0005/views/topic_status.sql",
    "0005/views/subscription_status.sql",
    "0005/views/transaction_status_v2.sql",
    "0005/views/ledger_status.sql",
    "0005/views/entry_log_status.sql",
    "0009/views/committed_messages.sql",
    "0015/views/topic_grants.sql",
    "0016/views/gc_history_v2.sql",
    "0016/views/job_failure_status.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v3()"

DOWNGRADE_REINSTALL = [
    "0014/functions/claimed_messages_v1.sql",
    "0015/functions/claim_v3.sql",
    "0015/functions/superseded_0015_consume.sql",
]

DOWNGRADE = """
DROP FUNCTION txnq.claim_v4(integer, bigint, bigint, integer, double precision, integer, integer);
DROP FUNCTION txnq.claimed_messages_v2(
    integer, integer[], bigint[], integer[], integer[], integer[]);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), DOWNGRADE_REINSTALL)
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    driver_connection.execute(GRANT_ROLES)
