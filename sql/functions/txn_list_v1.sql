-- txnq.txn_list_v1: transactions of txnq.transaction_status, newest first:
-- trusted callers (admins, workers) see all, any other role the ones it
-- opened (transactions.opened_by; those opened before revision 0015 are
-- shown to everyone, as they are open to everyone). Revision 0015.
--
-- Parameters: state (NULL: every state), older_than seconds (0: all), limit.
-- Returns rows of txnq.transaction_status.
-- Locks: none. Errors: none.
CREATE OR REPLACE FUNCTION txnq.txn_list_v1(p_state text, p_older_than double precision, p_limit integer)
RETURNS SETOF txnq.transaction_status
LANGUAGE sql STABLE AS $$
    SELECT s.* FROM txnq.transaction_status s
      JOIN txnq.transactions t ON t.tc_id = s.tc_id AND t.txn_seq = s.txn_seq
     WHERE (p_state IS NULL OR s.state = p_state)
       AND s.opened_at <= now() - make_interval(secs => p_older_than)
       AND (t.opened_by IS NULL OR txnq.caller_is_trusted_v1(txnq.caller_v1())
            OR pg_catalog.pg_has_role(txnq.caller_v1(), t.opened_by, 'USAGE'))
     ORDER BY s.opened_at DESC, s.tc_id, s.txn_seq
     LIMIT p_limit;
$$;
