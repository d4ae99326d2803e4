-- txnq.subscription_backlog_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.subscription_backlog_v2 (same signature
-- and result). Made by revision 0015 (functions/superseded_0015_consume.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.subscription_backlog_v1(p_topic_id integer)
RETURNS TABLE (subscription_id bigint, name text, backlog_entries bigint, backlog_bytes bigint,
               oldest_publish_time timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT * FROM txnq.subscription_backlog_v2(p_topic_id)
$$;
