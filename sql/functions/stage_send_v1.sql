-- txnq.stage_send_v1: superseded; kept for the clients of earlier revisions as
-- a thin wrapper of txnq.stage_send_v2 (same signature and result). Made by
-- revision 0015 (functions/superseded_0015_produce.sql); revision 0017 moved
-- it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.stage_send_v1(
    p_topic_id integer,
    p_partition integer,
    p_payloads bytea[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.stage_send_v2(p_topic_id, p_partition, p_payloads, p_keys, p_properties, p_event_times)
$$;
