-- txnq.next_visible_claim_v1: revision 0027 made it a thin wrapper of
-- txnq.next_visible_claim_v2 (same parameters and result), which counts
-- claim ranges' deadlines too.
CREATE OR REPLACE FUNCTION txnq.next_visible_claim_v1(p_subscription_id bigint)
RETURNS double precision
LANGUAGE sql STABLE AS $$
    SELECT txnq.next_visible_claim_v2(p_subscription_id);
$$;
