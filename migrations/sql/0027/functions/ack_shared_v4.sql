-- txnq.ack_shared_v4: revision 0027 made it a thin wrapper of
-- txnq.ack_shared_v5 (same parameters, result, locks and errors), which
-- acknowledges the messages of a claim range in the range row.
CREATE OR REPLACE FUNCTION txnq.ack_shared_v4(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.ack_shared_v5(p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes, p_txn_tc, p_txn_seq);
$$;
