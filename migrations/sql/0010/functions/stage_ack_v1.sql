-- txnq.stage_ack_v1: acknowledge messages of one partition for a subscription
-- as part of the caller's own PostgreSQL transaction (the exactly-once
-- processor). The acks are staged under the caller's transaction id and applied
-- when it commits (txnq.publish_staged_v1): the cursor moves with the
-- application's own writes, or not at all.
--
-- Parameters: (topic_id, partition), subscription_id; offsets[i],
--   batch_indexes[i] (-1 or NULL: the whole entry), batch_sizes[i] (NULL:
--   looked up in the entry); the last two may be NULL as a whole.
-- Returns the stage id.
-- Exactly once: a message that is acknowledged already, or pending-acked by an
--   open txnq transaction, fails here (TQ012) and again at commit, under the
--   cursor row lock, if another transaction acknowledged it meanwhile: the
--   caller's transaction, with its own writes, can then only roll back.
-- Locks: none (reads the cursor; the lock is taken at commit).
-- Errors: TQ005 invalid argument or an offset beyond the high watermark,
--   TQ006 unknown subscription/cursor, TQ012 acknowledged already or pending.
CREATE OR REPLACE FUNCTION txnq.stage_ack_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[] DEFAULT NULL,
    p_batch_sizes integer[] DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer := coalesce(cardinality(p_offsets), 0);
    v_high_watermark bigint;
    v_stage_id bigint;
BEGIN
    IF v_count = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'stage_ack_v1: give at least one offset';
    END IF;
    p_batch_indexes := coalesce(p_batch_indexes, array_fill(-1, ARRAY[v_count]));
    p_batch_sizes := coalesce(p_batch_sizes, array_fill(NULL::integer, ARRAY[v_count]));
    IF cardinality(p_batch_indexes) <> v_count OR cardinality(p_batch_sizes) <> v_count THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'stage_ack_v1: offsets, batch_indexes and batch_sizes must have the same length';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM txnq.cursors c WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                                                  AND c.subscription_id = p_subscription_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s has no cursor on partition %s of topic id %s',
                             p_subscription_id, p_partition, p_topic_id),
            HINT = 'it was unsubscribed or its topic deleted; subscribe again';
    END IF;
    SELECT h.next_offset - 1 INTO v_high_watermark
      FROM txnq.partitions h WHERE h.topic_id = p_topic_id AND h.partition = p_partition;
    IF (SELECT max(o) FROM unnest(p_offsets) AS o) > v_high_watermark OR
       EXISTS (SELECT 1 FROM unnest(p_offsets) AS o WHERE o IS NULL OR o < 0) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('cannot acknowledge beyond offset %s of partition %s: nothing was written there',
                             v_high_watermark, p_partition);
    END IF;
    -- Sizes from the entries; a one-message entry is acknowledged as a whole.
    SELECT array_agg(coalesce(u.s, e.message_count, 1) ORDER BY u.n),
           array_agg(CASE WHEN u.i IS NULL OR u.i < 0 OR coalesce(u.s, e.message_count, 1) <= 1 THEN -1
                          ELSE u.i END ORDER BY u.n)
      INTO p_batch_sizes, p_batch_indexes
      FROM unnest(p_offsets, p_batch_indexes, p_batch_sizes) WITH ORDINALITY AS u(o, i, s, n)
      LEFT JOIN txnq.entries e
        ON e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset = u.o;
    PERFORM txnq.check_ack_once_v1(p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes);
    INSERT INTO txnq.staged_acks (topic_id, partition, subscription_id, offsets, batch_indexes, batch_sizes)
    VALUES (p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes, p_batch_sizes)
    RETURNING stage_id INTO v_stage_id;
    RETURN v_stage_id;
END;
$$;
