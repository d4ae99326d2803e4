-- txnq.compaction_tables_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.compaction_tables_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.compaction_tables_v1(
    p_target integer, OUT source_id integer, OUT source_table text, OUT target_table text
)
LANGUAGE sql STABLE AS $$
    SELECT t.source_id, t.source_table, t.target_table FROM txnq.compaction_tables_v2(p_target) t
$$;
