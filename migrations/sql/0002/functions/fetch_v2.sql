-- txnq.fetch_v2: the next deliverable entries of one partition for a subscription.
--
-- Parameters: (topic_id, partition), subscription_id, after_offset (the
--   consumer's read position: entries above it are returned), max_entries,
--   max_bytes (stops after the entry that crosses it; at least one entry).
-- Returns entries in offset order with acked_batch_indexes: the messages of a
--   batch entry that are acknowledged individually or pending in a transaction
--   (skip them); entries that are acknowledged or pending as a whole are left out.
-- Locks: none (an MVCC read of the head row and the entries).
-- Invariants: read_committed subscriptions see nothing above the partition's
--   max read offset (invariant 2), read_uncommitted ones up to the high
--   watermark; markers and entries of aborted transactions are never returned,
--   whatever the isolation; messages pending-acked by an open transaction are
--   not delivered while pending (they come back if it aborts).
-- Errors: TQ006 unknown subscription.
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
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_isolation text;
    v_limit bigint;
    v_bytes bigint := 0;
    v_pending boolean;
    v_pending_cumulative bigint;
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
    -- Pending acks are rare and short-lived: look at them only when there are some.
    SELECT true, max(pa.entry_offset) FILTER (WHERE pa.cumulative) INTO v_pending, v_pending_cumulative
      FROM txnq.pending_acks pa
     WHERE pa.topic_id = p_topic_id AND pa.partition = p_partition AND pa.subscription_id = p_subscription_id
    HAVING count(*) > 0;
    v_pending := coalesce(v_pending, false);
    FOR r IN
        SELECT e.entry_offset, e.publish_time, e.producer_id, e.first_sequence, e.message_count,
               e.payload_bytes, e.payloads, e.keys, e.properties, e.event_times,
               CASE WHEN v_pending THEN
                   (SELECT array_agg(DISTINCT x ORDER BY x) FROM (
                        SELECT unnest(a.acked_batch_indexes)
                        UNION ALL
                        SELECT pa.batch_index FROM txnq.pending_acks pa
                         WHERE pa.topic_id = p_topic_id AND pa.partition = p_partition
                           AND pa.subscription_id = p_subscription_id AND pa.entry_offset = e.entry_offset
                    ) AS merged(x))
               ELSE a.acked_batch_indexes END AS skip_indexes
          FROM txnq.entries e
          LEFT JOIN txnq.individual_acks a
            ON a.topic_id = e.topic_id AND a.partition = e.partition
           AND a.subscription_id = p_subscription_id AND a.entry_offset = e.entry_offset
         WHERE e.topic_id = p_topic_id AND e.partition = p_partition
           AND e.entry_offset > p_after_offset AND e.entry_offset <= v_limit
           AND e.marker IS NULL
           AND (a.entry_offset IS NULL OR a.acked_batch_indexes IS NOT NULL)
           AND (e.txn_tc IS NULL OR NOT EXISTS (
                    SELECT 1 FROM txnq.aborted_txns x
                     WHERE x.topic_id = p_topic_id AND x.partition = p_partition
                       AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq))
           AND (NOT v_pending OR (
                    e.entry_offset > coalesce(v_pending_cumulative, -1)
                    AND NOT EXISTS (
                        SELECT 1 FROM txnq.pending_acks pa
                         WHERE pa.topic_id = p_topic_id AND pa.partition = p_partition
                           AND pa.subscription_id = p_subscription_id
                           AND pa.entry_offset = e.entry_offset AND pa.batch_index = -1)))
         ORDER BY e.entry_offset
         LIMIT p_max_entries
    LOOP
        IF r.skip_indexes IS NOT NULL AND cardinality(r.skip_indexes) >= r.message_count THEN
            CONTINUE;  -- every message of the batch is acknowledged or pending
        END IF;
        entry_offset := r.entry_offset;
        publish_time := r.publish_time;
        producer_id := r.producer_id;
        first_sequence := r.first_sequence;
        message_count := r.message_count;
        payloads := r.payloads;
        keys := r.keys;
        properties := r.properties;
        event_times := r.event_times;
        acked_batch_indexes := r.skip_indexes;
        RETURN NEXT;
        v_bytes := v_bytes + r.payload_bytes;
        EXIT WHEN v_bytes >= p_max_bytes;
    END LOOP;
END;
$$;
