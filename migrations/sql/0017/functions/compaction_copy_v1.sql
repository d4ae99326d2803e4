-- txnq.compaction_copy_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.compaction_copy_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.compaction_copy_v1(
    p_target integer,
    p_after_topic integer,
    p_after_partition integer,
    p_after_offset bigint,
    p_max_rows integer,
    p_max_bytes bigint,
    OUT rows bigint,
    OUT bytes bigint,
    OUT last_topic integer,
    OUT last_partition integer,
    OUT last_offset bigint
)
LANGUAGE sql AS $$
    SELECT c.rows, c.bytes, c.last_topic, c.last_partition, c.last_offset
      FROM txnq.compaction_copy_v2(p_target, p_after_topic, p_after_partition, p_after_offset,
                                   p_max_rows, p_max_bytes) c
$$;
