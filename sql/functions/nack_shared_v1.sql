-- txnq.nack_shared_v1: superseded; kept for the clients of earlier revisions
-- as a thin wrapper of txnq.nack_shared_v2 (same signature and result). Made
-- by revision 0015 (functions/superseded_0015_consume.sql); revision 0017
-- moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.nack_shared_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_delays double precision[]
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.nack_shared_v2(p_topic_id, p_partition, p_subscription_id, p_consumer_id, p_offsets,
                               p_batch_indexes, p_delays)
$$;
