-- txnq.fetch_v4: the next deliverable entries of one partition for an
-- exclusive or failover subscription. Revision 0015; replaces fetch_v3 (same
-- parameters, result and behaviour for valid input) with the argument checks:
-- fetch_v3 (and fetch_v2) read any subscription's acks against any topic's
-- entries, took a NULL or negative max_entries for no limit or failed with a
-- raw LIMIT error, and returned nothing for an unknown topic or partition.
-- fetch_v3 and fetch_v2 are wrappers of it (the optional from_mark_delete
-- keeps fetch_v2's reading from after_offset alone). PL/pgSQL, called
-- directly by the client: no SQL wrapper to plan on the hot path.
--
-- Parameters: (topic_id, partition), subscription_id, after_offset (the
--   consumer's read position, -1 .. the high watermark: entries above it are
--   returned), max_entries (1 or more), max_bytes (1 or more: stops after the
--   entry that crosses it; at least one entry), from_mark_delete (true, the
--   default, as fetch_v3 since revision 0012: start above the greater of
--   after_offset and the subscription's mark-delete offset, read in the same
--   snapshot, so a read position that another transaction's acknowledgement
--   overtook does not deliver those entries again; false, as fetch_v2: above
--   after_offset, acknowledged entries below the cursor included).
-- Returns entries in offset order with acked_batch_indexes: the messages of a
--   batch entry that are acknowledged individually or pending in a transaction
--   (skip them); entries that are acknowledged or pending as a whole are left out.
-- Locks: none (an MVCC read of the head row and the entries).
-- Invariants: read_committed subscriptions see nothing above the partition's
--   max read offset (invariant 2), read_uncommitted ones up to the high
--   watermark; markers and entries of aborted transactions are never returned,
--   whatever the isolation; messages pending-acked by an open transaction are
--   not delivered while pending (they come back if it aborts).
-- Errors (a read: nothing changes anyway): TQ001 unknown topic or partition;
--   TQ006 unknown subscription, one of another topic, or no cursor; TQ005
--   after_offset NULL, below -1 or above the high watermark, max_entries or
--   max_bytes NULL or below 1, from_mark_delete NULL; authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.fetch_v4(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_after_offset bigint,
    p_max_entries integer DEFAULT 100,
    p_max_bytes bigint DEFAULT 8388608,
    p_from_mark_delete boolean DEFAULT true
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
    v_target record;
    v_limit bigint;
    v_from bigint;
    v_bytes bigint := 0;
    v_pending boolean;
    v_pending_cumulative bigint;
    r record;
BEGIN
    IF p_max_entries IS NULL OR p_max_entries < 1 OR p_max_bytes IS NULL OR p_max_bytes < 1
       OR p_from_mark_delete IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('fetch: max_entries (%s) and max_bytes (%s) must be 1 or more, from_mark_delete '
                             '(%s) true or false', coalesce(p_max_entries::text, 'NULL'),
                             coalesce(p_max_bytes::text, 'NULL'), coalesce(p_from_mark_delete::text, 'NULL')),
            HINT = 'pass how many entries and bytes one call may return at most (e.g. 100 and 8388608)';
    END IF;
    IF p_after_offset IS NULL OR p_after_offset < -1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('fetch: after_offset %s is not a read position (-1 or more)',
                             coalesce(p_after_offset::text, 'NULL')),
            HINT = 'start at the cursor''s mark_delete_offset (txnq.cursors), then pass the last offset fetched';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    SELECT * INTO v_target FROM txnq.require_subscription_v1(p_topic_id, p_partition, p_subscription_id);
    IF p_after_offset > v_target.high_watermark THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('fetch: after_offset %s is beyond the end of partition %s (its last offset is %s)',
                             p_after_offset, p_partition, v_target.high_watermark),
            HINT = 'pass the last offset fetched, or the cursor''s mark_delete_offset to start';
    END IF;
    v_from := p_after_offset;
    IF p_from_mark_delete THEN
        -- A read position older than the cursor (another transaction or
        -- consumer acknowledged past it) does not deliver those entries again.
        SELECT greatest(p_after_offset, c.mark_delete_offset) INTO v_from FROM txnq.cursors c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ006',
                MESSAGE = format('subscription id %s has no cursor on partition %s of topic id %s',
                                 p_subscription_id, p_partition, p_topic_id),
                HINT = 'it was unsubscribed or its topic deleted; subscribe again';
        END IF;
    END IF;
    v_limit := v_target.readable_offset;
    IF v_limit IS NULL OR v_limit <= v_from THEN
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
           AND e.entry_offset > v_from AND e.entry_offset <= v_limit
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
