-- txnq.append_v3: superseded; kept for the clients of earlier revisions as a
-- thin wrapper of txnq.append_v4 (same signature and result). Made by revision
-- 0015 (functions/superseded_0015_produce.sql); revision 0017 moved it to a
-- file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.append_v3(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_producer_epoch integer,
    p_first_sequence bigint,
    p_payloads bytea[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL,
    OUT entry_offset bigint,
    OUT publish_time timestamptz,
    OUT duplicate boolean,
    OUT roll_entry_log boolean
)
LANGUAGE sql AS $$
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      FROM txnq.append_v4(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq) a
$$;
