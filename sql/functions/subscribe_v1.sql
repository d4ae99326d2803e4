-- txnq.subscribe_v1: superseded; kept for the clients of earlier revisions as
-- a thin wrapper of txnq.subscribe_v2 (same signature and result). Made by
-- revision 0015 (functions/superseded_0015_consume.sql); revision 0017 moved
-- it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.subscribe_v1(
    p_topic_id integer,
    p_name text,
    p_subscription_type text,
    p_isolation text,
    p_initial_position text
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.subscribe_v2(p_topic_id, p_name, p_subscription_type, p_isolation, p_initial_position)
$$;
