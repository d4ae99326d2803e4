-- txnq.release_claims_v2: revision 0027 made it a thin wrapper of
-- txnq.release_claims_v3 (same parameters, result and errors), which
-- releases claim ranges too.
CREATE OR REPLACE FUNCTION txnq.release_claims_v2(p_subscription_id bigint, p_consumer_id bigint)
RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.release_claims_v3(p_subscription_id, p_consumer_id);
$$;
