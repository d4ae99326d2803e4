-- txnq.publish_staged_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.publish_staged_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_produce.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.publish_staged_v1()
RETURNS TABLE (stage_id bigint, topic_id integer, partition integer, entry_offset bigint,
               first_batch_index integer)
LANGUAGE sql AS $$
    SELECT p.stage_id, p.topic_id, p.partition, p.entry_offset, p.first_batch_index FROM txnq.publish_staged_v2() p
$$;
