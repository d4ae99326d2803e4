-- txnq.sink_prepare_v1: a sink's transaction is prepared for a checkpoint;
-- only a transaction this sink began and that is still open. Revision 0015.
--
-- Parameters: transactional_id, (tc_id, txn_seq), checkpoint_id (not NULL:
--   recovery compares it with the engine's last completed checkpoint).
-- Returns 'PREPARED', none when the transaction is not this sink's or not open.
-- Locks: the sink row.
-- Errors: TQ005 a NULL checkpoint id; TQ018 for another role's transaction.
CREATE OR REPLACE FUNCTION txnq.sink_prepare_v1(
    p_transactional_id text, p_tc_id integer, p_txn_seq bigint, p_checkpoint_id bigint
)
RETURNS SETOF text
LANGUAGE plpgsql AS $$
BEGIN
    IF p_checkpoint_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'sink_prepare_v1: checkpoint_id must not be NULL',
            HINT = 'pass the id of the engine checkpoint the transaction is prepared for';
    END IF;
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    RETURN QUERY
    UPDATE txnq.sink_transactions s
       SET state = 'PREPARED', checkpoint_id = p_checkpoint_id, prepared_at = now()
      FROM txnq.transactions t
     WHERE s.transactional_id = p_transactional_id AND s.tc_id = p_tc_id AND s.txn_seq = p_txn_seq
       AND t.tc_id = s.tc_id AND t.txn_seq = s.txn_seq AND t.state = 'OPEN'
    RETURNING s.state;
END;
$$;
