-- txnq.compaction_begin_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.compaction_begin_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.compaction_begin_v1(p_source integer)
RETURNS integer
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
    SELECT txnq.compaction_begin_v2(p_source)
$$;
