-- txnq.coordinator_decided_v1: decided transactions of the given
-- coordinators, oldest decision first: the coordinator worker's work queue
-- (workers/coordinator.py). A client runs the marker phase of its own commit
-- inline, so the scan leaves fresh decisions alone for a grace period. SKIP
-- LOCKED passes over a transaction whose marker phase someone runs right now.
-- Replaces the worker's direct SELECT ... FOR NO KEY UPDATE (which needed
-- UPDATE on txnq.transactions). Revision 0015.
--
-- Parameters: tc_ids (not NULL; ids that are no coordinator match nothing),
--   grace_seconds (a finite number from 0 to 3155760000, 100 years), limit
--   (at least 0: a NULL limit would lock every decided transaction).
-- Returns rows (tc_id, txn_seq, state).
-- Locks: the rows returned, FOR NO KEY UPDATE, until the caller's statement
--   (the worker runs in autocommit) or transaction ends.
-- Errors: TQ005 for a NULL tc_ids, a grace period or limit out of range.
CREATE OR REPLACE FUNCTION txnq.coordinator_decided_v1(
    p_tc_ids integer[], p_grace_seconds double precision, p_limit integer
)
RETURNS TABLE (tc_id integer, txn_seq bigint, state text)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_tc_ids IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'coordinator_decided_v1: tc_ids must not be NULL',
            HINT = 'pass the ids of the coordinators this worker owns';
    END IF;
    PERFORM txnq.require_number_v1('coordinator_decided_v1: grace_seconds', p_grace_seconds, 0, 3155760000);
    IF p_limit IS NULL OR p_limit < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('coordinator_decided_v1: limit must be 0 or more, not %s',
                             coalesce(p_limit::text, 'NULL')),
            HINT = 'pass how many decided transactions to claim at most';
    END IF;
    RETURN QUERY
    SELECT t.tc_id, t.txn_seq, t.state FROM txnq.transactions t
     WHERE t.state IN ('COMMITTING', 'ABORTING') AND t.tc_id = ANY (p_tc_ids)
       AND t.decided_at <= now() - make_interval(secs => p_grace_seconds)
     ORDER BY t.decided_at
     LIMIT p_limit
       FOR NO KEY UPDATE OF t SKIP LOCKED;
END;
$$;
