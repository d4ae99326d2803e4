-- txnq.coordinator_decided_v1: decided transactions of the given
-- coordinators, oldest decision first: the coordinator worker's work queue
-- (workers/coordinator.py). A client runs the marker phase of its own commit
-- inline, so the scan leaves fresh decisions alone for a grace period. SKIP
-- LOCKED passes over a transaction whose marker phase someone runs right now.
-- Replaces the worker's direct SELECT ... FOR NO KEY UPDATE (which needed
-- UPDATE on txnq.transactions). Revision 0015.
--
-- Parameters: tc_ids, grace_seconds, limit.
-- Returns rows (tc_id, txn_seq, state).
-- Locks: the rows returned, FOR NO KEY UPDATE, until the caller's statement
--   (the worker runs in autocommit) or transaction ends.
-- Errors: none.
CREATE OR REPLACE FUNCTION txnq.coordinator_decided_v1(
    p_tc_ids integer[], p_grace_seconds double precision, p_limit integer
)
RETURNS TABLE (tc_id integer, txn_seq bigint, state text)
LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY
    SELECT t.tc_id, t.txn_seq, t.state FROM txnq.transactions t
     WHERE t.state IN ('COMMITTING', 'ABORTING') AND t.tc_id = ANY (p_tc_ids)
       AND t.decided_at <= now() - make_interval(secs => p_grace_seconds)
     ORDER BY t.decided_at
     LIMIT p_limit
       FOR NO KEY UPDATE OF t SKIP LOCKED;
END;
$$;
