-- txnq.txn_describe_subscriptions_v1: the subscriptions a transaction
-- acknowledged on, with its pending acks (`txnq txn describe`), for its own
-- role. Revision 0015.
--
-- Parameters: (tc_id, txn_seq).
-- Returns rows (topic, partition, subscription, done, pending_acks).
-- Locks: none. Errors: TQ018 for another role's transaction.
CREATE OR REPLACE FUNCTION txnq.txn_describe_subscriptions_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (topic text, partition integer, subscription text, done boolean, pending_acks bigint)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    SELECT t.name, ts.partition, s.name, ts.done,
           (SELECT count(*) FROM txnq.pending_acks pa
             WHERE pa.topic_id = ts.topic_id AND pa.partition = ts.partition
               AND pa.subscription_id = ts.subscription_id
               AND pa.tc_id = ts.tc_id AND pa.txn_seq = ts.txn_seq)
      FROM txnq.txn_subscriptions ts
      LEFT JOIN txnq.topics t USING (topic_id)
      LEFT JOIN txnq.subscriptions s USING (subscription_id)
     WHERE ts.tc_id = p_tc_id AND ts.txn_seq = p_txn_seq
     ORDER BY t.name, ts.partition, s.name;
$$;
