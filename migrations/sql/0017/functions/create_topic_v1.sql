-- txnq.create_topic_v1: superseded; kept for the clients of earlier revisions
-- as a thin wrapper of txnq.create_topic_v2 (same signature and result). Made
-- by revision 0015 (functions/superseded_0015_produce.sql); revision 0017
-- moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.create_topic_v1(
    p_name text,
    p_partitions integer,
    p_retention_seconds double precision,
    p_retention_bytes bigint,
    p_ttl_seconds double precision,
    p_max_message_bytes integer
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.create_topic_v2(p_name, p_partitions, p_retention_seconds, p_retention_bytes, p_ttl_seconds,
                                p_max_message_bytes)
$$;
