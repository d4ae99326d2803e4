-- txnq.compaction_last_key_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.compaction_last_key_v2 (same signature
-- and result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.compaction_last_key_v1(
    p_target integer, OUT topic_id integer, OUT partition integer, OUT entry_offset bigint
)
RETURNS SETOF record
LANGUAGE sql STABLE AS $$
    SELECT k.topic_id, k.partition, k.entry_offset FROM txnq.compaction_last_key_v2(p_target) k
$$;
