-- txnq.sink_pending_v1: the transactions a sink (transactional id) has not
-- settled, with their state in txnq, for recovery: those the caller may end
-- (it opened them, or it is trusted; opened before revision 0015). Revision 0015.
--
-- Parameters: transactional_id.
-- Returns rows (tc_id, txn_seq, state, checkpoint_id, txn_state, txn_reason).
-- Locks: none. Errors: none.
CREATE OR REPLACE FUNCTION txnq.sink_pending_v1(p_transactional_id text)
RETURNS TABLE (tc_id integer, txn_seq bigint, state text, checkpoint_id bigint, txn_state text,
               txn_reason text)
LANGUAGE sql STABLE AS $$
    SELECT s.tc_id, s.txn_seq, s.state, s.checkpoint_id, t.state, t.reason
      FROM txnq.sink_transactions s
      LEFT JOIN txnq.transactions t ON t.tc_id = s.tc_id AND t.txn_seq = s.txn_seq
     WHERE s.transactional_id = p_transactional_id
       AND (t.opened_by IS NULL OR txnq.caller_is_trusted_v1(txnq.caller_v1())
            OR pg_catalog.pg_has_role(txnq.caller_v1(), t.opened_by, 'USAGE'))
     ORDER BY s.checkpoint_id NULLS LAST, s.tc_id, s.txn_seq;
$$;
