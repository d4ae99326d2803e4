-- txnq.txn_require_open_v1: the guard every write into a transaction passes.
--
-- Parameters: (tc_id, txn_seq) of the transaction.
-- Returns nothing; raises unless the transaction is OPEN and within its timeout.
-- Locks: the transaction row FOR SHARE, held until the caller's statement
--   commits. Deciding (end_txn_v1) updates that row, so it waits for every
--   append and ack in flight, and an append or ack that arrives after the
--   decision sees the new state and is rejected (invariant 7): a write can
--   never slip in after the marker phase enumerated the transaction's partitions.
-- Errors: TQ014 unknown transaction, TQ002 fenced by a newer transactional
--   producer, TQ015 timed out, TQ013 ended (committed or aborted).
CREATE OR REPLACE FUNCTION txnq.txn_require_open_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_reason text;
    v_timeout_at timestamptz;
BEGIN
    SELECT t.state, t.reason, t.timeout_at INTO v_state, v_reason, v_timeout_at
      FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq
       FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s does not exist', p_tc_id, p_txn_seq),
            HINT = 'open transactions with client.new_transaction() or txnq.open_txn_v1';
    END IF;
    IF v_state = 'OPEN' AND v_timeout_at > now() THEN
        RETURN;
    END IF;
    IF v_reason = 'fenced' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ002',
            MESSAGE = format('transaction %s:%s was aborted because a newer producer with the same '
                             'transactional id took over', p_tc_id, p_txn_seq),
            HINT = 'this producer is fenced: close it; only the newest session of a transactional id may write';
    END IF;
    IF v_state = 'OPEN' OR v_reason = 'timeout' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ015',
            MESSAGE = format('transaction %s:%s passed its timeout at %s and is aborted',
                             p_tc_id, p_txn_seq, v_timeout_at),
            HINT = 'open a new transaction, with a longer timeout if the work needs it';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'TQ013',
        MESSAGE = format('transaction %s:%s has ended (%s%s)', p_tc_id, p_txn_seq, lower(v_state),
                         CASE WHEN v_reason IS NULL THEN '' ELSE ', reason ' || v_reason END),
        HINT = 'open a new transaction';
END;
$$;
