-- txnq.partition_for_key_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.partition_for_key_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_produce.sql);
-- revision 0017 moved it to a file of its own, unchanged.
--
-- No longer STRICT: a NULL partition count reaches v2 and is refused there.
CREATE OR REPLACE FUNCTION txnq.partition_for_key_v1(p_key bytea, p_partitions integer)
RETURNS integer
LANGUAGE sql IMMUTABLE CALLED ON NULL INPUT AS $$
    SELECT txnq.partition_for_key_v2(p_key, p_partitions)
$$;
