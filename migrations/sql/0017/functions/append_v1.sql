-- txnq.append_v1: superseded; kept for the clients of earlier revisions as a
-- thin wrapper of txnq.append_v2 (same signature and result). Made by revision
-- 0002 (functions/v1_over_v2.sql); revision 0017 moved it to a file of its
-- own, unchanged.
CREATE OR REPLACE FUNCTION txnq.append_v1(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_producer_epoch integer,
    p_first_sequence bigint,
    p_payloads bytea[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL,
    OUT entry_offset bigint,
    OUT publish_time timestamptz,
    OUT duplicate boolean,
    OUT roll_entry_log boolean
)
LANGUAGE sql AS $$
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      FROM txnq.append_v2(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times) a
$$;
