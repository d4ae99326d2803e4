-- txnq.earliest_offset_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.earliest_offset_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_consume.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.earliest_offset_v1(p_topic_id integer, p_partition integer)
RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT txnq.earliest_offset_v2(p_topic_id, p_partition)
$$;
