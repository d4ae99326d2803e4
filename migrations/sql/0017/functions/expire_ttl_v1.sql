-- txnq.expire_ttl_v1: superseded; kept for the clients of earlier revisions as
-- a thin wrapper of txnq.expire_ttl_v2 (same signature and result). Made by
-- revision 0015 (functions/superseded_0015_workers.sql); revision 0017 moved
-- it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.expire_ttl_v1(p_topic_id integer)
RETURNS TABLE (partition integer, subscription_id bigint, mark_delete_before bigint,
               mark_delete_after bigint)
LANGUAGE sql AS $$
    SELECT e.partition, e.subscription_id, e.mark_delete_before, e.mark_delete_after
      FROM txnq.expire_ttl_v2(p_topic_id) e
$$;
