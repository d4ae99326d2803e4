-- txnq.sink_forget_v1: a sink forgets a transaction it settled. Revision 0015.
--
-- Parameters: transactional_id, (tc_id, txn_seq).
-- Returns nothing. Locks: the row it deletes.
-- Errors: TQ018 for another role's transaction.
CREATE OR REPLACE FUNCTION txnq.sink_forget_v1(p_transactional_id text, p_tc_id integer, p_txn_seq bigint)
RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    DELETE FROM txnq.sink_transactions
     WHERE transactional_id = p_transactional_id AND tc_id = p_tc_id AND txn_seq = p_txn_seq;
$$;
