-- txnq.unsubscribe_v1: superseded; kept for the clients of earlier revisions
-- as a thin wrapper of txnq.unsubscribe_v2 (same signature and result). Made
-- by revision 0015 (functions/superseded_0015_consume.sql); revision 0017
-- moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.unsubscribe_v1(
    p_subscription_id bigint,
    p_except_consumer_id bigint DEFAULT NULL,
    p_force boolean DEFAULT false
) RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.unsubscribe_v2(p_subscription_id, p_except_consumer_id, p_force)
$$;
