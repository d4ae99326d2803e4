-- txnq.abort_timed_out_v2: decide ABORTING (reason timeout) for open
-- transactions past their timeout (invariant 5). Run by the scheduler every
-- second; coordinator workers then run the marker phase.
-- Revision 0015: abort_timed_out_v1 with its argument checked (a NULL count
-- aborted every transaction due at once, a negative one failed with a raw
-- LIMIT error); abort_timed_out_v1 is a wrapper of it.
--
-- Parameters: max_count (at least 1: at most this many per call; call again
--   while it returns that many).
-- Returns the transactions aborted: (tc_id, txn_seq).
-- Locks: the rows it aborts, skipping rows locked by an append, an ack or a
--   decision in flight (the next run takes them).
-- Errors: TQ005 max_count NULL or below 1.
CREATE OR REPLACE FUNCTION txnq.abort_timed_out_v2(p_max_count integer DEFAULT 1000)
RETURNS TABLE (tc_id integer, txn_seq bigint)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_max_count IS NULL OR p_max_count < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('abort_timed_out_v2: max_count must be at least 1, not %s',
                             coalesce(p_max_count::text, 'NULL')),
            HINT = 'pass how many transactions one call may abort (the scheduler passes 1000)';
    END IF;
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
