-- txnq.release_claims_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.release_claims_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_consume.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.release_claims_v1(p_subscription_id bigint, p_consumer_id bigint)
RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.release_claims_v2(p_subscription_id, p_consumer_id)
$$;
