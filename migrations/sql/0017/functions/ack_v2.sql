-- txnq.ack_v2: superseded; kept for the clients of earlier revisions as a thin
-- wrapper of txnq.ack_v3 (same signature and result). Made by revision 0015
-- (functions/superseded_0015_consume.sql); revision 0017 moved it to a file of
-- its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.ack_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_cumulative_offset bigint,
    p_offsets bigint[] DEFAULT '{}',
    p_batch_indexes integer[] DEFAULT '{}',
    p_batch_sizes integer[] DEFAULT '{}',
    p_cumulative_batch_index integer DEFAULT NULL,
    p_cumulative_batch_size integer DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.ack_v3(p_topic_id, p_partition, p_subscription_id, p_cumulative_offset, p_offsets,
                       p_batch_indexes, p_batch_sizes, p_cumulative_batch_index, p_cumulative_batch_size,
                       p_txn_tc, p_txn_seq)
$$;
