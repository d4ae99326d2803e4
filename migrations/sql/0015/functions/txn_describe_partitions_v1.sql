-- txnq.txn_describe_partitions_v1: the partitions a transaction produced to
-- (`txnq txn describe`), for its own role. Revision 0015.
--
-- Parameters: (tc_id, txn_seq).
-- Returns rows (topic, partition, first_offset, marker_offset).
-- Locks: none. Errors: TQ018 for another role's transaction.
CREATE OR REPLACE FUNCTION txnq.txn_describe_partitions_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (topic text, partition integer, first_offset bigint, marker_offset bigint)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    SELECT t.name, tp.partition, tp.first_offset, tp.marker_offset
      FROM txnq.txn_partitions tp LEFT JOIN txnq.topics t USING (topic_id)
     WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq
     ORDER BY t.name, tp.partition;
$$;
