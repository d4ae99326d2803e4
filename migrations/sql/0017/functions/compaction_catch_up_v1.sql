-- txnq.compaction_catch_up_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.compaction_catch_up_v2 (same signature
-- and result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.compaction_catch_up_v1(
    p_target integer, OUT copied bigint, OUT source_rows bigint
)
LANGUAGE sql AS $$
    SELECT c.copied, c.source_rows FROM txnq.compaction_catch_up_v2(p_target) c
$$;
