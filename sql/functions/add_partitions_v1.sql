-- txnq.add_partitions_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.add_partitions_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_produce.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.add_partitions_v1(p_topic_id integer, p_partitions integer)
RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.add_partitions_v2(p_topic_id, p_partitions)
$$;
