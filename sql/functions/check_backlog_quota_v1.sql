-- txnq.check_backlog_quota_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.check_backlog_quota_v2 (same signature
-- and result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.check_backlog_quota_v1(p_topic_id integer)
RETURNS TABLE (subscription_id bigint, subscription text, over_size boolean, over_age boolean,
               backlog_bytes bigint, backlog_seconds double precision, limit_bytes bigint,
               limit_seconds double precision, policy text, evicted_entries bigint)
LANGUAGE sql AS $$
    SELECT q.subscription_id, q.subscription, q.over_size, q.over_age, q.backlog_bytes,
           q.backlog_seconds, q.limit_bytes, q.limit_seconds, q.policy, q.evicted_entries
      FROM txnq.check_backlog_quota_v2(p_topic_id) q
$$;
