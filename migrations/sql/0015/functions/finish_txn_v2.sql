-- txnq.finish_txn_v2: protocol step 7: COMMITTING -> COMMITTED, ABORTING -> ABORTED,
-- once the marker phase is done on every partition and subscription.
-- Revision 0015: finish_txn_v1 with its arguments checked (a NULL id is an
-- invalid argument, not an unknown transaction), and messages that say what
-- to do; finish_txn_v1 is a wrapper of it.
--
-- Parameters: (tc_id, txn_seq).
-- Returns the state after the call: COMMITTED/ABORTED, or the decided state
--   unchanged while a step of the marker phase is still missing. Idempotent.
-- Locks: the transaction row.
-- Errors: TQ005 an id is NULL, or the transaction is not decided yet;
--   TQ014 unknown transaction.
CREATE OR REPLACE FUNCTION txnq.finish_txn_v2(p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_reason text;
BEGIN
    IF p_tc_id IS NULL OR p_txn_seq IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('finish_txn_v2: a transaction id (tc_id %s, txn_seq %s) has no NULL part',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL')),
            HINT = 'pass the tc_id and txn_seq that open_txn_v1 returned';
    END IF;
    SELECT t.state, t.reason INTO v_state, v_reason FROM txnq.transactions t
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s does not exist', p_tc_id, p_txn_seq),
            HINT = 'pass the tc_id and txn_seq that open_txn_v1 returned (txnq.transactions lists them)';
    END IF;
    IF v_state = 'OPEN' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transaction %s:%s is open: it has no decision to finish', p_tc_id, p_txn_seq),
            HINT = 'decide it first (txnq.end_txn_v1), then run its marker phase';
    END IF;
    IF v_state IN ('COMMITTED', 'ABORTED')
       OR EXISTS (SELECT 1 FROM txnq.txn_partitions tp
                   WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq AND tp.marker_offset IS NULL)
       OR EXISTS (SELECT 1 FROM txnq.txn_subscriptions ts
                   WHERE ts.tc_id = p_tc_id AND ts.txn_seq = p_txn_seq AND NOT ts.done) THEN
        RETURN v_state;
    END IF;
    v_state := CASE WHEN v_state = 'COMMITTING' THEN 'COMMITTED' ELSE 'ABORTED' END;
    UPDATE txnq.transactions t SET state = v_state, completed_at = now()
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    INSERT INTO txnq.txn_log (tc_id, txn_seq, state, reason) VALUES (p_tc_id, p_txn_seq, v_state, v_reason);
    RETURN v_state;
END;
$$;
