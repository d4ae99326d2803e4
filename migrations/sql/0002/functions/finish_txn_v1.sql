-- txnq.finish_txn_v1: protocol step 7: COMMITTING -> COMMITTED, ABORTING -> ABORTED,
-- once the marker phase is done on every partition and subscription.
--
-- Parameters: (tc_id, txn_seq).
-- Returns the state after the call: COMMITTED/ABORTED, or the decided state
--   unchanged while a step of the marker phase is still missing. Idempotent.
-- Locks: the transaction row.
-- Errors: TQ014 unknown transaction, TQ005 not decided yet.
CREATE OR REPLACE FUNCTION txnq.finish_txn_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_reason text;
BEGIN
    SELECT t.state, t.reason INTO v_state, v_reason FROM txnq.transactions t
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s does not exist', p_tc_id, p_txn_seq);
    END IF;
    IF v_state = 'OPEN' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transaction %s:%s is open: decide it first (end_txn_v1)', p_tc_id, p_txn_seq);
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
