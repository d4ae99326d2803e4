-- txnq.txn_list_v1: transactions of txnq.transaction_status, newest first:
-- trusted callers (admins, workers) see all, any other role the ones it
-- opened (transactions.opened_by; those opened before revision 0015 are
-- shown to everyone, as they are open to everyone). Revision 0015.
--
-- Parameters: state (NULL: every state; else OPEN, COMMITTING, COMMITTED,
--   ABORTING or ABORTED), older_than seconds (0: all; a finite number from 0
--   to 3155760000, 100 years), limit (at least 1).
-- Returns rows of txnq.transaction_status.
-- Locks: none. Errors: TQ005 for an unknown state, an age or limit out of range.
CREATE OR REPLACE FUNCTION txnq.txn_list_v1(p_state text, p_older_than double precision, p_limit integer)
RETURNS SETOF txnq.transaction_status
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_state NOT IN ('OPEN', 'COMMITTING', 'COMMITTED', 'ABORTING', 'ABORTED') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('txn_list_v1: state %s is unknown: use NULL (every state), OPEN, '
                             'COMMITTING, COMMITTED, ABORTING or ABORTED', quote_literal(left(p_state, 80)));
    END IF;
    PERFORM txnq.require_number_v1('txn_list_v1: older_than', p_older_than, 0, 3155760000);
    IF p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('txn_list_v1: limit must be at least 1, not %s', coalesce(p_limit::text, 'NULL')),
            HINT = 'pass how many transactions to list at most';
    END IF;
    RETURN QUERY
    SELECT s.* FROM txnq.transaction_status s
      JOIN txnq.transactions t ON t.tc_id = s.tc_id AND t.txn_seq = s.txn_seq
     WHERE (p_state IS NULL OR s.state = p_state)
       AND s.opened_at <= now() - make_interval(secs => p_older_than)
       AND (t.opened_by IS NULL OR txnq.caller_is_trusted_v1(txnq.caller_v1())
            OR pg_catalog.pg_has_role(txnq.caller_v1(), t.opened_by, 'USAGE'))
     ORDER BY s.opened_at DESC, s.tc_id, s.txn_seq
     LIMIT p_limit;
END;
$$;
