-- txnq.send_at_commit_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.send_at_commit_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_produce.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.send_at_commit_v1(
    p_topic text,
    p_payload bytea,
    p_key bytea DEFAULT NULL,
    p_properties jsonb DEFAULT NULL,
    p_partition integer DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.send_at_commit_v2(p_topic, p_payload, p_key, p_properties, p_partition)
$$;
