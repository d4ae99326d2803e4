"""The SQL boundary holds (issue 17): every public txnq function validates
its arguments itself and checks the caller's permission on the topic; the
argument checks shared by many functions live in txnq.require_*_v1, the
permission checks in txnq.authorize*_v1.

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
    # permissions (issue 17 item 3, docs/security.md): who the caller is, the
    # grants table, the hooks above filled in, the functions the client's
    # direct reads and writes moved behind, and grant_roles_v2.
    "functions/caller_v1.sql",
    "functions/caller_role_v1.sql",
    "functions/caller_is_trusted_v1.sql",
    "functions/caller_is_admin_v1.sql",
    "schema/0015_permissions.sql",
    "functions/permission_granted_v1.sql",
    "functions/permission_denied_v1.sql",
    "functions/topic_visible_v1.sql",
    "functions/authorize_use_v1.sql",
    "functions/require_permission_args_v1.sql",
    "functions/grant_topic_permission_v1.sql",
    "functions/revoke_topic_permission_v1.sql",
    "functions/topic_permissions_v1.sql",
    "views/topic_grants.sql",
    "functions/schema_revision_v1.sql",
    "functions/cursor_generation_v1.sql",
    "functions/cursor_positions_v1.sql",
    "functions/close_consumer_v1.sql",
    "functions/register_waiters_v1.sql",
    "functions/txn_limits_v1.sql",
    "functions/txn_state_v1.sql",
    "functions/txn_list_v1.sql",
    "functions/txn_describe_v1.sql",
    "functions/txn_describe_partitions_v1.sql",
    "functions/txn_describe_subscriptions_v1.sql",
    "functions/txn_history_v1.sql",
    "functions/txn_find_hanging_v1.sql",
    "functions/next_visible_claim_v1.sql",
    "functions/topic_by_name_v1.sql",
    "functions/topic_partition_count_v1.sql",
    "functions/list_topics_v1.sql",
    "functions/topic_partitions_v1.sql",
    "functions/list_subscriptions_v1.sql",
    "functions/subscription_by_name_v1.sql",
    "functions/subscription_cursors_v1.sql",
    "functions/subscription_consumers_v1.sql",
    "functions/set_topic_policy_v1.sql",
    "functions/set_backlog_quota_v1.sql",
    "functions/backlog_quota_info_v1.sql",
    "functions/discard_staged_v1.sql",
    "functions/spark_partition_bounds_v1.sql",
    "functions/spark_first_offset_at_v1.sql",
    "functions/read_committed_v1.sql",
    "functions/spark_ingestion_get_v1.sql",
    "functions/spark_ingestion_list_v1.sql",
    "functions/spark_ingestion_create_v1.sql",
    "functions/spark_ingestion_plan_v1.sql",
    "functions/spark_ingestion_commit_v1.sql",
    "functions/spark_ingestion_delete_v1.sql",
    "functions/sink_begin_v1.sql",
    "functions/sink_prepare_v1.sql",
    "functions/sink_forget_v1.sql",
    "functions/sink_pending_v1.sql",
    "functions/sink_session_epoch_v1.sql",
    "functions/sink_session_lock_v1.sql",
    "functions/coordinator_decided_v1.sql",
    "functions/coordinator_record_owner_v1.sql",
    "functions/roll_entry_log_v2.sql",
    "functions/gc_drop_entry_log_v1.sql",
    "functions/superseded_0015_permissions.sql",
    "functions/grant_roles_v2.sql",
]

DOWNGRADE = """
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
DROP FUNCTION txnq.roll_entry_log_v2(boolean);
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
SELECT txnq.grant_roles_v1();
DROP FUNCTION txnq.require_partition_v1(integer, integer);
DROP FUNCTION txnq.require_number_v1(text, double precision, double precision, double precision, boolean);
DROP FUNCTION txnq.require_timestamps_v1(text, timestamptz[]);
DROP FUNCTION txnq.require_properties_v1(jsonb[]);
DROP FUNCTION txnq.authorize_v1(integer, text);
DROP FUNCTION txnq.authorize_topic_name_v1(text, text);
DROP FUNCTION txnq.authorize_txn_v1(integer, bigint);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


# permissions: roll_entry_log_v1's own body again (a wrapper of v2 in 0015),
# running as its owner as revision 0007 made it.
DOWNGRADE_AFTER_FILES = """
ALTER FUNCTION txnq.roll_entry_log_v1(boolean)
    SECURITY DEFINER SET search_path = pg_catalog, txnq, pg_temp;
REVOKE EXECUTE ON FUNCTION txnq.roll_entry_log_v1(boolean) FROM PUBLIC;
"""


def downgrade() -> None:
    connection = op.get_bind()
    # roll_entry_log_v1 first: DOWNGRADE drops roll_entry_log_v2, which the wrapper calls.
    apply_sql_files(connection, ["functions/roll_entry_log_v1.sql"])
    connection.connection.driver_connection.execute(DOWNGRADE_AFTER_FILES)
    connection.connection.driver_connection.execute(DOWNGRADE)
