-- txnq.abort_timed_out_v1: decide ABORTING (reason timeout) for open
-- transactions past their timeout (invariant 5). Run by the scheduler every
-- second; coordinator workers then run the marker phase.
--
-- Parameters: max_count (at most this many per call; call again while it returns that many).
-- Returns the transactions aborted: (tc_id, txn_seq).
-- Locks: the rows it aborts, skipping rows locked by an append, an ack or a
--   decision in flight (the next run takes them).
CREATE OR REPLACE FUNCTION txnq.abort_timed_out_v1(p_max_count integer DEFAULT 1000)
RETURNS TABLE (tc_id integer, txn_seq bigint)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    WITH due AS (
        SELECT t.tc_id, t.txn_seq FROM txnq.transactions t
         WHERE t.state = 'OPEN' AND t.timeout_at <= now()
         ORDER BY t.timeout_at
         LIMIT p_max_count
           FOR UPDATE SKIP LOCKED
    ), aborted AS (
        UPDATE txnq.transactions t SET state = 'ABORTING', reason = 'timeout', decided_at = now()
          FROM due WHERE t.tc_id = due.tc_id AND t.txn_seq = due.txn_seq
        RETURNING t.tc_id, t.txn_seq
    ), logged AS (
        INSERT INTO txnq.txn_log (tc_id, txn_seq, state, reason)
        SELECT a.tc_id, a.txn_seq, 'ABORTING', 'timeout' FROM aborted a
        RETURNING txn_log.tc_id, txn_log.txn_seq
    )
    SELECT l.tc_id, l.txn_seq FROM logged l;
    IF FOUND THEN
        PERFORM pg_notify('txnq_coordinator', 'timeout');
    END IF;
END;
$$;
