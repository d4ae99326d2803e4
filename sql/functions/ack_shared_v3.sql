-- txnq.ack_shared_v3: superseded; kept for the clients of earlier revisions as
-- a thin wrapper of txnq.ack_shared_v4 (same signature and result). Made by
-- revision 0015 (functions/superseded_0015_consume.sql); revision 0017 moved
-- it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.ack_shared_v3(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.ack_shared_v4(p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes,
                              p_txn_tc, p_txn_seq)
$$;
