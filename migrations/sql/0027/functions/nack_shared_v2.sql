-- txnq.nack_shared_v2: revision 0027 made it a thin wrapper of
-- txnq.nack_shared_v3 (same parameters, result and errors), which unfolds
-- a claim range covering a nacked message first.
CREATE OR REPLACE FUNCTION txnq.nack_shared_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_delays double precision[]
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.nack_shared_v3(p_topic_id, p_partition, p_subscription_id, p_consumer_id, p_offsets, p_batch_indexes, p_delays);
$$;
