-- txnq.fetch_v1: the next deliverable entries of one partition for a subscription.
--
-- Parameters: (topic_id, partition), subscription_id, after_offset (the
--   consumer's read position: entries above it are returned), max_entries,
--   max_bytes (stops after the entry that crosses it; at least one entry).
-- Returns entries in offset order with acked_batch_indexes: the messages of a
--   batch entry that were acknowledged individually (skip them); entries that
--   are acknowledged as a whole are left out.
-- Locks: none (an MVCC read of the head row and the entries).
-- Invariants: read_committed subscriptions see nothing above the partition's
--   max read offset (invariant 2); control entries (markers) are never returned.
-- Errors: TQ006 unknown subscription.
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
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_isolation text;
    v_limit bigint;
    v_bytes bigint := 0;
    r record;
BEGIN
    SELECT s.isolation INTO v_isolation FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s does not exist', p_subscription_id),
            HINT = 'it was unsubscribed or its topic deleted; subscribe again';
    END IF;
    SELECT CASE WHEN v_isolation = 'read_uncommitted' THEN h.next_offset - 1 ELSE h.max_read_offset END
      INTO v_limit
      FROM txnq.partitions h WHERE h.topic_id = p_topic_id AND h.partition = p_partition;
    IF v_limit IS NULL OR v_limit <= p_after_offset THEN
        RETURN;
    END IF;
    FOR r IN
        SELECT e.entry_offset, e.publish_time, e.producer_id, e.first_sequence, e.message_count,
               e.payload_bytes, e.payloads, e.keys, e.properties, e.event_times, a.acked_batch_indexes,
               a.entry_offset IS NOT NULL AS has_ack
          FROM txnq.entries e
          LEFT JOIN txnq.individual_acks a
            ON a.topic_id = e.topic_id AND a.partition = e.partition
           AND a.subscription_id = p_subscription_id AND a.entry_offset = e.entry_offset
         WHERE e.topic_id = p_topic_id AND e.partition = p_partition
           AND e.entry_offset > p_after_offset AND e.entry_offset <= v_limit
           AND e.marker IS NULL
           AND (a.entry_offset IS NULL OR a.acked_batch_indexes IS NOT NULL)
         ORDER BY e.entry_offset
         LIMIT p_max_entries
    LOOP
        entry_offset := r.entry_offset;
        publish_time := r.publish_time;
        producer_id := r.producer_id;
        first_sequence := r.first_sequence;
        message_count := r.message_count;
        payloads := r.payloads;
        keys := r.keys;
        properties := r.properties;
        event_times := r.event_times;
        acked_batch_indexes := r.acked_batch_indexes;
        RETURN NEXT;
        v_bytes := v_bytes + r.payload_bytes;
        EXIT WHEN v_bytes >= p_max_bytes;
    END LOOP;
END;
$$;
