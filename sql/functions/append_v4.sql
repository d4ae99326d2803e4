-- txnq.append_v4: a thin wrapper of txnq.append_v5 since revision 0019 (the
-- same arguments, result and checks; v5 reads an application role's grant
-- with the topic instead of in a statement of its own). Revision 0015 made
-- v4 the body that validates every argument and checks the caller's
-- permission; append_v3 (and through it v2, v1) wrap it.
CREATE OR REPLACE FUNCTION txnq.append_v4(
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
      FROM txnq.append_v5(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq) a
$$;
