-- txnq.register_consumer_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.register_consumer_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_consume.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.register_consumer_v1(
    p_subscription_id bigint,
    p_name text,
    p_priority integer,
    p_lease_seconds double precision
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.register_consumer_v2(p_subscription_id, p_name, p_priority, p_lease_seconds)
$$;
