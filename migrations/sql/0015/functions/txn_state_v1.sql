-- txnq.txn_state_v1: a transaction's state and reason, for its own role.
-- Replaces the client's direct read of txnq.transactions. Revision 0015.
--
-- Parameters: (tc_id, txn_seq).
-- Returns one row (state, reason), none for an unknown transaction.
-- Locks: none. Errors: TQ018 for another role's transaction (authorize_txn_v1).
CREATE OR REPLACE FUNCTION txnq.txn_state_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (state text, reason text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    RETURN QUERY SELECT t.state, t.reason FROM txnq.transactions t
                  WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
END;
$$;
