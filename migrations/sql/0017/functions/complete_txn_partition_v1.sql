-- txnq.complete_txn_partition_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.complete_txn_partition_v2 (same
-- signature and result). Made by revision 0015
-- (functions/superseded_0015_workers.sql); revision 0017 moved it to a file of
-- its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.complete_txn_partition_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_topic_id integer,
    p_partition integer
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.complete_txn_partition_v2(p_tc_id, p_txn_seq, p_topic_id, p_partition)
$$;
