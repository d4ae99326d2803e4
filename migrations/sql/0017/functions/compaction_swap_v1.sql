-- txnq.compaction_swap_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.compaction_swap_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.compaction_swap_v1(
    p_target integer, p_source_rows bigint, p_lock_timeout text DEFAULT '2s'
)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.compaction_swap_v2(p_target, p_source_rows, p_lock_timeout)
$$;
