-- txnq.abort_timed_out_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.abort_timed_out_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.abort_timed_out_v1(p_max_count integer DEFAULT 1000)
RETURNS TABLE (tc_id integer, txn_seq bigint)
LANGUAGE sql AS $$
    SELECT a.tc_id, a.txn_seq FROM txnq.abort_timed_out_v2(p_max_count) a
$$;
