-- Revision 0015 (the SQL boundary), consume side: the versions that the
-- checked ones replace become thin wrappers of them, with the same
-- signatures, so clients of earlier revisions keep working and get the
-- argument checks too (a message id that names no message of its entry is
-- refused instead of acknowledging the whole entry). fetch_v1 and ack_v1 stay
-- wrappers of fetch_v2 and ack_v2 (v1_over_v2.sql). The bodies of the earlier
-- revisions stay in their files, which replaying those revisions installs and
-- downgrading 0015 reinstalls; this file replaces them.

-- fetch_v2 reads from after_offset, below the mark-delete offset too; fetch_v3
-- (revision 0012) and fetch_v4 from the greater of the two.
CREATE OR REPLACE FUNCTION txnq.fetch_v2(
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
    SELECT * FROM txnq.fetch_v4(p_topic_id, p_partition, p_subscription_id, p_after_offset,
                                        p_max_entries, p_max_bytes, false)
$$;

CREATE OR REPLACE FUNCTION txnq.fetch_v3(
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
    SELECT * FROM txnq.fetch_v4(p_topic_id, p_partition, p_subscription_id, p_after_offset,
                                        p_max_entries, p_max_bytes, true)
$$;

CREATE OR REPLACE FUNCTION txnq.ack_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_cumulative_offset bigint,
    p_offsets bigint[] DEFAULT '{}',
    p_batch_indexes integer[] DEFAULT '{}',
    p_batch_sizes integer[] DEFAULT '{}',
    p_cumulative_batch_index integer DEFAULT NULL,
    p_cumulative_batch_size integer DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.ack_v3(p_topic_id, p_partition, p_subscription_id, p_cumulative_offset, p_offsets,
                       p_batch_indexes, p_batch_sizes, p_cumulative_batch_index, p_cumulative_batch_size,
                       p_txn_tc, p_txn_seq)
$$;

CREATE OR REPLACE FUNCTION txnq.stage_ack_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[] DEFAULT NULL,
    p_batch_sizes integer[] DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.stage_ack_v2(p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes,
                             p_batch_sizes)
$$;

CREATE OR REPLACE FUNCTION txnq.ack_shared_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.ack_shared_v4(p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes,
                              p_txn_tc, p_txn_seq)
$$;

CREATE OR REPLACE FUNCTION txnq.ack_shared_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.ack_shared_v4(p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes,
                              p_txn_tc, p_txn_seq)
$$;

CREATE OR REPLACE FUNCTION txnq.ack_shared_v3(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.ack_shared_v4(p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes,
                              p_txn_tc, p_txn_seq)
$$;

CREATE OR REPLACE FUNCTION txnq.claim_v1(
    p_topic_id integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_max_messages integer,
    p_ack_timeout_seconds double precision DEFAULT NULL,
    p_max_redeliver_count integer DEFAULT NULL,
    p_dead_letter_topic_id integer DEFAULT NULL
) RETURNS TABLE (
    partition integer,
    entry_offset bigint,
    batch_index integer,
    batch_size integer,
    publish_time timestamptz,
    producer_id bigint,
    sequence bigint,
    payload bytea,
    key bytea,
    properties jsonb,
    event_time timestamptz,
    redelivery_count integer
)
LANGUAGE sql AS $$
    SELECT * FROM txnq.claim_v3(p_topic_id, p_subscription_id, p_consumer_id, p_max_messages,
                                p_ack_timeout_seconds, p_max_redeliver_count, p_dead_letter_topic_id)
$$;

CREATE OR REPLACE FUNCTION txnq.claim_v2(
    p_topic_id integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_max_messages integer,
    p_ack_timeout_seconds double precision DEFAULT NULL,
    p_max_redeliver_count integer DEFAULT NULL,
    p_dead_letter_topic_id integer DEFAULT NULL
) RETURNS TABLE (
    partition integer,
    entry_offset bigint,
    batch_index integer,
    batch_size integer,
    publish_time timestamptz,
    producer_id bigint,
    sequence bigint,
    payload bytea,
    key bytea,
    properties jsonb,
    event_time timestamptz,
    redelivery_count integer
)
LANGUAGE sql AS $$
    SELECT * FROM txnq.claim_v3(p_topic_id, p_subscription_id, p_consumer_id, p_max_messages,
                                p_ack_timeout_seconds, p_max_redeliver_count, p_dead_letter_topic_id)
$$;

CREATE OR REPLACE FUNCTION txnq.nack_shared_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_delays double precision[]
) RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.nack_shared_v2(p_topic_id, p_partition, p_subscription_id, p_consumer_id, p_offsets,
                               p_batch_indexes, p_delays)
$$;

CREATE OR REPLACE FUNCTION txnq.release_claims_v1(p_subscription_id bigint, p_consumer_id bigint)
RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.release_claims_v2(p_subscription_id, p_consumer_id)
$$;

CREATE OR REPLACE FUNCTION txnq.subscribe_v1(
    p_topic_id integer,
    p_name text,
    p_subscription_type text,
    p_isolation text,
    p_initial_position text
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.subscribe_v2(p_topic_id, p_name, p_subscription_type, p_isolation, p_initial_position)
$$;

CREATE OR REPLACE FUNCTION txnq.unsubscribe_v1(
    p_subscription_id bigint,
    p_except_consumer_id bigint DEFAULT NULL,
    p_force boolean DEFAULT false
) RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.unsubscribe_v2(p_subscription_id, p_except_consumer_id, p_force)
$$;

CREATE OR REPLACE FUNCTION txnq.register_consumer_v1(
    p_subscription_id bigint,
    p_name text,
    p_priority integer,
    p_lease_seconds double precision
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.register_consumer_v2(p_subscription_id, p_name, p_priority, p_lease_seconds)
$$;

CREATE OR REPLACE FUNCTION txnq.heartbeat_consumer_v1(p_consumer_id bigint, p_lease_seconds double precision)
RETURNS TABLE (consumer_id bigint, name text, priority integer)
LANGUAGE sql AS $$
    SELECT * FROM txnq.heartbeat_consumer_v2(p_consumer_id, p_lease_seconds)
$$;

CREATE OR REPLACE FUNCTION txnq.seek_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offset bigint DEFAULT NULL,
    p_time timestamptz DEFAULT NULL
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.seek_v2(p_topic_id, p_partition, p_subscription_id, p_offset, p_time)
$$;

CREATE OR REPLACE FUNCTION txnq.earliest_offset_v1(p_topic_id integer, p_partition integer)
RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT txnq.earliest_offset_v2(p_topic_id, p_partition)
$$;

CREATE OR REPLACE FUNCTION txnq.subscription_backlog_v1(p_topic_id integer)
RETURNS TABLE (subscription_id bigint, name text, backlog_entries bigint, backlog_bytes bigint,
               oldest_publish_time timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT * FROM txnq.subscription_backlog_v2(p_topic_id)
$$;
