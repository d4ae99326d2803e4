-- Revision 0002: append_v1, fetch_v1 and ack_v1 become thin wrappers of their
-- v2 versions, with the same signatures, so clients of revision 0001 keep
-- working during an upgrade and still honour the transaction buffer (their
-- appends never move the max read offset past an ongoing transaction) and the
-- pending acks. (The bodies of revision 0001 stay in append_v1.sql etc., which
-- replaying revision 0001 installs; this file replaces them.)

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

CREATE OR REPLACE FUNCTION txnq.fetch_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_after_offset bigint,
    p_max_entries integer DEFAULT 100,
    p_max_bytes bigint DEFAULT 8388608
) RETURNS TABLE (
    entry_offset bigint,
    publish_time timestamptz,
    producer_id bigint,
    first_sequence bigint,
    message_count integer,
    payloads bytea[],
    keys bytea[],
    properties jsonb[],
    event_times timestamptz[],
    acked_batch_indexes integer[]
)
LANGUAGE sql STABLE AS $$
    SELECT * FROM txnq.fetch_v2(p_topic_id, p_partition, p_subscription_id, p_after_offset,
                                p_max_entries, p_max_bytes)
$$;

CREATE OR REPLACE FUNCTION txnq.ack_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_cumulative_offset bigint,
    p_offsets bigint[] DEFAULT '{}',
    p_batch_indexes integer[] DEFAULT '{}',
    p_batch_sizes integer[] DEFAULT '{}',
    p_cumulative_batch_index integer DEFAULT NULL,
    p_cumulative_batch_size integer DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.ack_v2(p_topic_id, p_partition, p_subscription_id, p_cumulative_offset, p_offsets,
                       p_batch_indexes, p_batch_sizes, p_cumulative_batch_index, p_cumulative_batch_size)
$$;
