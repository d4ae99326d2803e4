-- txnq.txn_history_v1: a transaction's states over time (txnq.txn_log), for
-- its own role. Revision 0015.
--
-- Parameters: (tc_id, txn_seq). Returns rows (at, state, reason, detail).
-- Locks: none. Errors: TQ018 for another role's transaction.
CREATE OR REPLACE FUNCTION txnq.txn_history_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (at timestamptz, state text, reason text, detail text)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    SELECT l.at, l.state, l.reason, l.detail FROM txnq.txn_log l
     WHERE l.tc_id = p_tc_id AND l.txn_seq = p_txn_seq
     ORDER BY l.at;
$$;
