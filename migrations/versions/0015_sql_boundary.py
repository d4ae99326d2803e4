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

Consume side (group consume): ack_v3, stage_ack_v2 and ack_shared_v4 check
every message id against its entry (before, a batch index past the batch or
a batch size smaller than the entry's acknowledged the whole entry: messages
never delivered were lost); fetch_v4 (fetch_v2 and fetch_v3 call it),
claim_v3, nack_shared_v2, release_claims_v2, subscribe_v2, unsubscribe_v2,
register_consumer_v2, heartbeat_consumer_v2, seek_v2, earliest_offset_v2 and
subscription_backlog_v2 check their arguments. The versions they replace
(fetch_v2/v3, ack_v2, stage_ack_v1, ack_shared_v1..v3, claim_v1/v2, ...)
become wrappers of them (superseded_0015_consume.sql), so older clients keep
working and get the checks (fetch_v1 and ack_v1 stay wrappers of fetch_v2
and ack_v2).

Worker side (group workers): the functions of the coordinator workers and
the scheduler (finish_txn, complete_txn, complete_txn_partition,
complete_txn_subscription, abort_timed_out, expire_ttl, apply_retention,
check_backlog_quota, roll_entry_log, roll_ledger, entry_log_usage,
entry_log_usage_inspect, compaction_*) get a v2 that checks its arguments;
their v1 become wrappers (superseded_0015_workers.sql). A compaction target
records the source row count of its catch-up
(entry_logs.compaction_source_rows), which the swap requires.

Permissions (group permissions, docs/security.md): per-topic grants
(txnq.topic_permissions, the view txnq.topic_grants), the authorization hooks
filled in, the client's direct table reads and writes moved behind
functions, and grant_roles_v2: every public function runs as its owner with
a pinned search_path, application roles hold no privilege on any table, the
coordinator and the scheduler (txnq_scheduler) only what they run.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0015/functions/require_partition_v1.sql",
    "0015/functions/require_number_v1.sql",
    "0015/functions/require_timestamps_v1.sql",
    "0015/functions/require_properties_v1.sql",
    "0015/functions/authorize_v1.sql",
    "0015/functions/authorize_topic_name_v1.sql",
    "0015/functions/authorize_txn_v1.sql",
    # --- group produce: topics, producing, transactions, application transactions.
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
    "0015/functions/superseded_0015_produce.sql",
    # --- end of group produce.
    # --- group workers: the coordinator workers' and the scheduler's functions
    # (marker phase, timeouts, TTL, retention, backlog quota, ledger and entry-log
    # rollover, entry-log usage and compaction); a compaction target records its
    # catch-up's count.
    "0015/schema/0015_compaction_catch_up.sql",
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
    "0015/functions/superseded_0015_workers.sql",
    # --- end of group workers.
    # --- group consume: subscriptions, cursors, acks, shared claims. ack_v3,
    # ack_shared_v4 and stage_ack_v2 check every message id against its entry.
    "0015/functions/require_subscription_v1.sql",
    "0015/functions/require_acks_v1.sql",
    "0015/functions/require_claimed_messages_v1.sql",
    "0015/functions/fetch_v4.sql",
    "0015/functions/ack_v3.sql",
    "0015/functions/stage_ack_v2.sql",
    "0015/functions/ack_shared_v4.sql",
    "0015/functions/claim_v3.sql",
    "0015/functions/nack_shared_v2.sql",
    "0015/functions/release_claims_v2.sql",
    "0015/functions/earliest_offset_v2.sql",
    "0015/functions/subscribe_v2.sql",
    "0015/functions/unsubscribe_v2.sql",
    "0015/functions/register_consumer_v2.sql",
    "0015/functions/heartbeat_consumer_v2.sql",
    "0015/functions/seek_v2.sql",
    "0015/functions/subscription_backlog_v2.sql",
    "0015/functions/superseded_0015_consume.sql",
    # --- end of group consume.
    # --- group permissions (issue 17 item 3, docs/security.md): who the caller is, the
    # grants table, the hooks above filled in, the functions the client's
    # direct reads and writes moved behind, and grant_roles_v2.
    "0015/functions/caller_v1.sql",
    "0015/functions/caller_role_v1.sql",
    "0015/functions/caller_is_trusted_v1.sql",
    "0015/functions/caller_is_admin_v1.sql",
    "0015/schema/0015_permissions.sql",
    "0015/functions/permission_granted_v1.sql",
    "0015/functions/permission_denied_v1.sql",
    "0015/functions/topic_visible_v1.sql",
    "0015/functions/authorize_use_v1.sql",
    "0015/functions/require_permission_args_v1.sql",
    "0015/functions/grant_topic_permission_v1.sql",
    "0015/functions/revoke_topic_permission_v1.sql",
    "0015/functions/topic_permissions_v1.sql",
    "0015/views/topic_grants.sql",
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
    "0015/functions/superseded_0015_permissions.sql",
    # --- end of group permissions.
    # Last: grant_roles_v2 gives every function above its role and security
    # (`txnq migrate` runs the newest grant_roles_vN after every upgrade too).
    "0015/functions/grant_roles_v2.sql",
]

# Downgrading: the superseded versions get their own bodies back (the files
# of the revisions that shipped them; publish_staged_v1.sql also points the
# commit triggers back at publish_staged_at_commit_v1), before the new
# versions are dropped.
DOWNGRADE_REINSTALL = [
    # --- group produce.
    "0006/functions/append_v3.sql",
    "0008/functions/append_delayed_v1.sql",
    "0001/functions/add_partitions_v1.sql",
    "0001/functions/create_topic_v1.sql",
    "0001/functions/delete_topic_v1.sql",
    "0001/functions/register_producer_v1.sql",
    "0002/functions/init_transactional_id_v1.sql",
    "0010/functions/partition_for_key_v1.sql",
    "0002/functions/open_txn_v1.sql",
    "0002/functions/end_txn_v1.sql",
    "0002/functions/bind_txn_v1.sql",
    "0010/functions/stage_send_v1.sql",
    "0010/functions/send_at_commit_v1.sql",
    "0010/functions/publish_staged_v1.sql",
    "0008/functions/dead_letter_v1.sql",
    # --- end of group produce.
    # --- group workers.
    "0002/functions/finish_txn_v1.sql",
    "0002/functions/complete_txn_partition_v1.sql",
    "0002/functions/complete_txn_subscription_v1.sql",
    "0002/functions/complete_txn_v1.sql",
    "0002/functions/abort_timed_out_v1.sql",
    "0003/functions/expire_ttl_v1.sql",
    "0003/functions/apply_retention_v1.sql",
    "0006/functions/check_backlog_quota_v1.sql",
    "0001/functions/roll_entry_log_v1.sql",
    "0001/functions/roll_ledger_v1.sql",
    "0003/functions/entry_log_usage_v1.sql",
    "0005/functions/entry_log_usage_inspect_v1.sql",
    "0004/functions/compaction_v1.sql",
    # --- end of group workers.
    # --- group consume.
    "0002/functions/fetch_v2.sql",
    "0012/functions/fetch_v3.sql",
    "0002/functions/ack_v2.sql",
    "0010/functions/stage_ack_v1.sql",
    "0008/functions/ack_shared_v1.sql",
    "0011/functions/ack_shared_v2.sql",
    "0013/functions/ack_shared_v3.sql",
    "0008/functions/claim_v1.sql",
    "0013/functions/claim_v2.sql",
    "0008/functions/nack_shared_v1.sql",
    "0008/functions/release_claims_v1.sql",
    "0001/functions/earliest_offset_v1.sql",
    "0001/functions/subscribe_v1.sql",
    "0001/functions/unsubscribe_v1.sql",
    "0001/functions/register_consumer_v1.sql",
    "0001/functions/heartbeat_consumer_v1.sql",
    "0001/functions/seek_v1.sql",
    "0006/functions/subscription_backlog_v1.sql",
    # --- end of group consume.
]

# Downgrading, in this order: the superseded versions get their own bodies
# back (DOWNGRADE_REINSTALL), functions run as their caller again and lose
# the permissions' objects (DOWNGRADE_PERMISSIONS), the new versions go
# (DOWNGRADE), and revision 0007's grants are made again (DOWNGRADE_GRANTS).
DOWNGRADE_PERMISSIONS = """
-- permissions: functions run as their caller again (but the three that ran
-- as their owner before: roll_entry_log_v1, compaction_begin_v1,
-- entry_log_usage_inspect_v1), EXECUTE back to PUBLIC, then grant_roles_v1's
-- rules (rows for txnq_client and txnq_worker); txnq_scheduler loses what it
-- was granted here (the role stays: it belongs to the cluster).
DO $$
DECLARE
    r record;
BEGIN
    FOR r IN SELECT p.oid::regprocedure AS fn FROM pg_catalog.pg_proc p
              WHERE p.pronamespace = 'txnq'::regnamespace AND p.prosecdef
                AND p.proname NOT IN ('roll_entry_log_v1', 'compaction_begin_v1',
                                      'entry_log_usage_inspect_v1')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER RESET search_path', r.fn);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS fn FROM pg_catalog.pg_proc p
              WHERE p.pronamespace = 'txnq'::regnamespace AND NOT p.prosecdef
                AND p.proname !~ '^grant_roles_v'
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', r.fn);
    END LOOP;
    IF pg_catalog.to_regrole('txnq_scheduler') IS NOT NULL THEN
        REVOKE ALL ON ALL TABLES IN SCHEMA txnq FROM txnq_scheduler;
        REVOKE ALL ON ALL SEQUENCES IN SCHEMA txnq FROM txnq_scheduler;
        REVOKE ALL ON ALL FUNCTIONS IN SCHEMA txnq FROM txnq_scheduler;
        REVOKE ALL ON SCHEMA txnq FROM txnq_scheduler;
    END IF;
END $$;
DROP VIEW txnq.topic_grants;
ALTER TABLE txnq.transactions DROP COLUMN opened_by;
DROP TABLE txnq.topic_permissions;
DROP FUNCTION txnq.grant_roles_v2();
DROP FUNCTION txnq.gc_drop_entry_log_v1(integer, text);
DROP FUNCTION txnq.authorize_use_v1(integer);
DROP FUNCTION txnq.backlog_quota_info_v1(integer);
DROP FUNCTION txnq.caller_is_admin_v1(name);
DROP FUNCTION txnq.caller_is_trusted_v1(name);
DROP FUNCTION txnq.caller_v1();
DROP FUNCTION txnq.caller_role_v1();
DROP FUNCTION txnq.close_consumer_v1(integer,bigint);
DROP FUNCTION txnq.coordinator_decided_v1(integer[],double precision,integer);
DROP FUNCTION txnq.coordinator_record_owner_v1(text,integer[]);
DROP FUNCTION txnq.cursor_generation_v1(integer,integer,bigint);
DROP FUNCTION txnq.cursor_positions_v1(integer,bigint);
DROP FUNCTION txnq.discard_staged_v1();
DROP FUNCTION txnq.grant_topic_permission_v1(text,text,boolean,text[]);
DROP FUNCTION txnq.list_subscriptions_v1(integer);
DROP FUNCTION txnq.list_topics_v1();
DROP FUNCTION txnq.next_visible_claim_v1(bigint);
DROP FUNCTION txnq.permission_denied_v1(name,text,text,boolean,text);
DROP FUNCTION txnq.permission_granted_v1(name,text,text,boolean);
DROP FUNCTION txnq.read_committed_v1(integer,integer,bigint,bigint);
DROP FUNCTION txnq.register_waiters_v1(integer,bigint,integer[]);
DROP FUNCTION txnq.require_permission_args_v1(text,text,boolean,text[],boolean);
DROP FUNCTION txnq.revoke_topic_permission_v1(text,text,boolean,text[]);
DROP FUNCTION txnq.schema_revision_v1();
DROP FUNCTION txnq.set_backlog_quota_v1(integer, boolean, bigint, boolean, double precision,
                                        boolean, text);
DROP FUNCTION txnq.set_topic_policy_v1(integer,double precision,bigint,double precision,boolean);
DROP FUNCTION txnq.sink_begin_v1(text,integer,bigint);
DROP FUNCTION txnq.sink_forget_v1(text,integer,bigint);
DROP FUNCTION txnq.sink_pending_v1(text);
DROP FUNCTION txnq.sink_prepare_v1(text,integer,bigint,bigint);
DROP FUNCTION txnq.sink_session_epoch_v1(text);
DROP FUNCTION txnq.sink_session_lock_v1(text);
DROP FUNCTION txnq.spark_first_offset_at_v1(integer,timestamp with time zone);
DROP FUNCTION txnq.spark_ingestion_commit_v1(text,bigint);
DROP FUNCTION txnq.spark_ingestion_create_v1(text,integer);
DROP FUNCTION txnq.spark_ingestion_delete_v1(text);
DROP FUNCTION txnq.spark_ingestion_get_v1(text);
DROP FUNCTION txnq.spark_ingestion_list_v1();
DROP FUNCTION txnq.spark_ingestion_plan_v1(text,bigint[]);
DROP FUNCTION txnq.spark_partition_bounds_v1(integer);
DROP FUNCTION txnq.subscription_by_name_v1(integer,text);
DROP FUNCTION txnq.subscription_consumers_v1(bigint);
DROP FUNCTION txnq.subscription_cursors_v1(integer,bigint);
DROP FUNCTION txnq.topic_by_name_v1(text);
DROP FUNCTION txnq.topic_partition_count_v1(integer);
DROP FUNCTION txnq.topic_partitions_v1(integer);
DROP FUNCTION txnq.topic_permissions_v1(text,text);
DROP FUNCTION txnq.topic_visible_v1(name,text);
DROP FUNCTION txnq.txn_describe_partitions_v1(integer,bigint);
DROP FUNCTION txnq.txn_describe_subscriptions_v1(integer,bigint);
DROP FUNCTION txnq.txn_describe_v1(integer,bigint);
DROP FUNCTION txnq.txn_find_hanging_v1(double precision);
DROP FUNCTION txnq.txn_history_v1(integer,bigint);
DROP FUNCTION txnq.txn_limits_v1();
DROP FUNCTION txnq.txn_list_v1(text,double precision,integer);
DROP FUNCTION txnq.txn_state_v1(integer,bigint);
"""

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
-- group consume
DROP FUNCTION txnq.require_subscription_v1(integer, integer, bigint);
DROP FUNCTION txnq.require_acks_v1(text, integer, integer, bigint, bigint[], integer[], integer[]);
DROP FUNCTION txnq.require_claimed_messages_v1(integer, integer, bigint, bigint[], integer[]);
DROP FUNCTION txnq.fetch_v4(integer, integer, bigint, bigint, integer, bigint, boolean);
DROP FUNCTION txnq.ack_v3(integer, integer, bigint, bigint, bigint[], integer[], integer[],
                          integer, integer, integer, bigint);
DROP FUNCTION txnq.stage_ack_v2(integer, integer, bigint, bigint[], integer[], integer[]);
DROP FUNCTION txnq.ack_shared_v4(integer, integer, bigint, bigint[], integer[], integer, bigint);
DROP FUNCTION txnq.claim_v3(integer, bigint, bigint, integer, double precision, integer, integer);
DROP FUNCTION txnq.nack_shared_v2(integer, integer, bigint, bigint, bigint[], integer[],
                                  double precision[]);
DROP FUNCTION txnq.release_claims_v2(bigint, bigint);
DROP FUNCTION txnq.earliest_offset_v2(integer, integer);
DROP FUNCTION txnq.subscribe_v2(integer, text, text, text, text);
DROP FUNCTION txnq.unsubscribe_v2(bigint, bigint, boolean);
DROP FUNCTION txnq.register_consumer_v2(bigint, text, integer, double precision);
DROP FUNCTION txnq.heartbeat_consumer_v2(bigint, double precision);
DROP FUNCTION txnq.seek_v2(integer, integer, bigint, bigint, timestamptz);
DROP FUNCTION txnq.subscription_backlog_v2(integer);
-- end of group consume
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


DOWNGRADE_GRANTS = """
REVOKE EXECUTE ON FUNCTION txnq.roll_entry_log_v1(boolean) FROM PUBLIC;
REVOKE EXECUTE ON FUNCTION txnq.compaction_begin_v1(integer) FROM PUBLIC;
SELECT txnq.grant_roles_v1();
"""


def downgrade() -> None:
    connection = op.get_bind()
    apply_sql_files(connection, DOWNGRADE_REINSTALL)
    driver_connection = connection.connection.driver_connection
    for statements in (DOWNGRADE_PERMISSIONS, DOWNGRADE, DOWNGRADE_GRANTS):
        driver_connection.execute(statements)
