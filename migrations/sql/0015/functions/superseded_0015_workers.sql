-- Revision 0015 (workers): the worker-side functions that got a v2 with their
-- arguments checked become thin wrappers of it, with the same signatures, so
-- coordinators, schedulers and clients of earlier revisions keep working
-- during an upgrade and get the checks too. (Their bodies stay in their v1
-- files, which replaying the earlier revisions installs and downgrading 0015
-- reinstalls; this file replaces them.) The ones that ran as their owner
-- still do: CREATE OR REPLACE would otherwise make them SECURITY INVOKER.

CREATE OR REPLACE FUNCTION txnq.finish_txn_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE sql AS $$
    SELECT txnq.finish_txn_v2(p_tc_id, p_txn_seq)
$$;

CREATE OR REPLACE FUNCTION txnq.complete_txn_partition_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_topic_id integer,
    p_partition integer
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.complete_txn_partition_v2(p_tc_id, p_txn_seq, p_topic_id, p_partition)
$$;

CREATE OR REPLACE FUNCTION txnq.complete_txn_subscription_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint
) RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.complete_txn_subscription_v2(p_tc_id, p_txn_seq, p_topic_id, p_partition, p_subscription_id)
$$;

CREATE OR REPLACE FUNCTION txnq.complete_txn_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE sql AS $$
    SELECT txnq.complete_txn_v2(p_tc_id, p_txn_seq)
$$;

CREATE OR REPLACE FUNCTION txnq.abort_timed_out_v1(p_max_count integer DEFAULT 1000)
RETURNS TABLE (tc_id integer, txn_seq bigint)
LANGUAGE sql AS $$
    SELECT a.tc_id, a.txn_seq FROM txnq.abort_timed_out_v2(p_max_count) a
$$;

CREATE OR REPLACE FUNCTION txnq.expire_ttl_v1(p_topic_id integer)
RETURNS TABLE (partition integer, subscription_id bigint, mark_delete_before bigint,
               mark_delete_after bigint)
LANGUAGE sql AS $$
    SELECT e.partition, e.subscription_id, e.mark_delete_before, e.mark_delete_after
      FROM txnq.expire_ttl_v2(p_topic_id) e
$$;

CREATE OR REPLACE FUNCTION txnq.apply_retention_v1(p_topic_id integer)
RETURNS TABLE (partition integer, ledger_id bigint, first_offset bigint, last_offset bigint,
               size_bytes bigint)
LANGUAGE sql AS $$
    SELECT r.partition, r.ledger_id, r.first_offset, r.last_offset, r.size_bytes
      FROM txnq.apply_retention_v2(p_topic_id) r
$$;

CREATE OR REPLACE FUNCTION txnq.check_backlog_quota_v1(p_topic_id integer)
RETURNS TABLE (subscription_id bigint, subscription text, over_size boolean, over_age boolean,
               backlog_bytes bigint, backlog_seconds double precision, limit_bytes bigint,
               limit_seconds double precision, policy text, evicted_entries bigint)
LANGUAGE sql AS $$
    SELECT q.subscription_id, q.subscription, q.over_size, q.over_age, q.backlog_bytes,
           q.backlog_seconds, q.limit_bytes, q.limit_seconds, q.policy, q.evicted_entries
      FROM txnq.check_backlog_quota_v2(p_topic_id) q
$$;

CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v1(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
    SELECT txnq.roll_entry_log_v2(p_force)
$$;

CREATE OR REPLACE FUNCTION txnq.roll_ledger_v1(p_topic_id integer, p_partition integer, p_last_offset bigint)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.roll_ledger_v2(p_topic_id, p_partition, p_last_offset)
$$;

CREATE OR REPLACE FUNCTION txnq.entry_log_usage_v1(
    p_entry_log_id integer,
    OUT entries bigint,
    OUT bytes bigint,
    OUT live_entries bigint,
    OUT live_bytes bigint
)
LANGUAGE sql STABLE AS $$
    SELECT u.entries, u.bytes, u.live_entries, u.live_bytes FROM txnq.entry_log_usage_v2(p_entry_log_id) u
$$;

CREATE OR REPLACE FUNCTION txnq.entry_log_usage_inspect_v1(
    p_entry_log_id integer,
    OUT entries bigint,
    OUT bytes bigint,
    OUT live_entries bigint,
    OUT live_bytes bigint
)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
    SELECT u.entries, u.bytes, u.live_entries, u.live_bytes
      FROM txnq.entry_log_usage_inspect_v2(p_entry_log_id) u
$$;

CREATE OR REPLACE FUNCTION txnq.compaction_begin_v1(p_source integer)
RETURNS integer
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
    SELECT txnq.compaction_begin_v2(p_source)
$$;

CREATE OR REPLACE FUNCTION txnq.compaction_tables_v1(
    p_target integer, OUT source_id integer, OUT source_table text, OUT target_table text
)
LANGUAGE sql STABLE AS $$
    SELECT t.source_id, t.source_table, t.target_table FROM txnq.compaction_tables_v2(p_target) t
$$;

CREATE OR REPLACE FUNCTION txnq.compaction_last_key_v1(
    p_target integer, OUT topic_id integer, OUT partition integer, OUT entry_offset bigint
)
RETURNS SETOF record
LANGUAGE sql STABLE AS $$
    SELECT k.topic_id, k.partition, k.entry_offset FROM txnq.compaction_last_key_v2(p_target) k
$$;

CREATE OR REPLACE FUNCTION txnq.compaction_copy_v1(
    p_target integer,
    p_after_topic integer,
    p_after_partition integer,
    p_after_offset bigint,
    p_max_rows integer,
    p_max_bytes bigint,
    OUT rows bigint,
    OUT bytes bigint,
    OUT last_topic integer,
    OUT last_partition integer,
    OUT last_offset bigint
)
LANGUAGE sql AS $$
    SELECT c.rows, c.bytes, c.last_topic, c.last_partition, c.last_offset
      FROM txnq.compaction_copy_v2(p_target, p_after_topic, p_after_partition, p_after_offset,
                                   p_max_rows, p_max_bytes) c
$$;

CREATE OR REPLACE FUNCTION txnq.compaction_catch_up_v1(
    p_target integer, OUT copied bigint, OUT source_rows bigint
)
LANGUAGE sql AS $$
    SELECT c.copied, c.source_rows FROM txnq.compaction_catch_up_v2(p_target) c
$$;

CREATE OR REPLACE FUNCTION txnq.compaction_swap_v1(
    p_target integer, p_source_rows bigint, p_lock_timeout text DEFAULT '2s'
)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.compaction_swap_v2(p_target, p_source_rows, p_lock_timeout)
$$;

CREATE OR REPLACE FUNCTION txnq.compaction_abandon_v1(p_target integer)
RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.compaction_abandon_v2(p_target)
$$;
