-- txnq.shared_advance_v1: revision 0027 made it a thin wrapper of
-- txnq.shared_advance_v2 (same parameters, result and locks), which counts
-- claim ranges as outstanding too.
CREATE OR REPLACE FUNCTION txnq.shared_advance_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.shared_advance_v2(p_topic_id, p_partition, p_subscription_id);
$$;
