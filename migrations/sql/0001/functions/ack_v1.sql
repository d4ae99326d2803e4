-- txnq.ack_v1: acknowledge messages of one partition for a subscription.
--
-- Parameters: (topic_id, partition), subscription_id; cumulative_offset (every
--   entry at or below it is acknowledged; NULL for none) and, when the
--   cumulative ack ends inside a batch entry, cumulative_batch_index and
--   cumulative_batch_size (messages 0..index of that entry are acknowledged,
--   the entries before it as a whole); offsets[i],
--   batch_indexes[i], batch_sizes[i]: individual acks, batch_index -1 meaning
--   the whole entry, otherwise one message of a batch of batch_sizes[i].
-- Returns the cursor's mark-delete offset after the call.
-- Locks: the cursor row (serialises acks of one subscription on one partition).
-- Invariants: the mark-delete offset never moves backwards and never passes
--   the high watermark; individually acked entries directly above it are folded
--   in, and acks at or below it are deleted (the table stays small).
-- Errors: TQ006 unknown subscription/cursor, TQ005 ack beyond the high watermark.
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
LANGUAGE plpgsql AS $$
DECLARE
    v_high_watermark bigint;
    v_mark_delete bigint;
    v_folded bigint;
    r record;
BEGIN
    IF p_cumulative_batch_index IS NOT NULL AND p_cumulative_batch_index < p_cumulative_batch_size - 1 THEN
        -- A cumulative ack inside a batch: the entries before it as a whole, and
        -- the batch's messages up to the index individually.
        p_offsets := p_offsets || array_fill(p_cumulative_offset, ARRAY[p_cumulative_batch_index + 1]);
        p_batch_indexes := p_batch_indexes || ARRAY(SELECT generate_series(0, p_cumulative_batch_index));
        p_batch_sizes := p_batch_sizes || array_fill(p_cumulative_batch_size, ARRAY[p_cumulative_batch_index + 1]);
        p_cumulative_offset := p_cumulative_offset - 1;
    END IF;
    SELECT h.next_offset - 1 INTO v_high_watermark
      FROM txnq.partitions h WHERE h.topic_id = p_topic_id AND h.partition = p_partition;
    IF greatest(p_cumulative_offset, (SELECT max(o) FROM unnest(p_offsets) AS o)) > v_high_watermark THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('cannot acknowledge beyond offset %s of partition %s: nothing was written there',
                             v_high_watermark, p_partition);
    END IF;

    UPDATE txnq.cursors c
       SET mark_delete_offset = greatest(c.mark_delete_offset, coalesce(p_cumulative_offset, c.mark_delete_offset)),
           updated_at = now()
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
    RETURNING c.mark_delete_offset INTO v_mark_delete;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s has no cursor on partition %s of topic id %s',
                             p_subscription_id, p_partition, p_topic_id),
            HINT = 'it was unsubscribed or its topic deleted; subscribe again';
    END IF;

    IF cardinality(p_offsets) > 0 THEN
        INSERT INTO txnq.individual_acks AS a
               (topic_id, partition, subscription_id, entry_offset, batch_size, acked_batch_indexes)
        SELECT p_topic_id, p_partition, p_subscription_id, u.o, max(u.s),
               CASE WHEN bool_or(u.i < 0) OR count(DISTINCT u.i) >= max(u.s) THEN NULL
                    ELSE array_agg(DISTINCT u.i ORDER BY u.i) END
          FROM unnest(p_offsets, p_batch_indexes, p_batch_sizes) AS u(o, i, s)
         WHERE u.o > v_mark_delete
         GROUP BY u.o
        ON CONFLICT (topic_id, partition, subscription_id, entry_offset) DO UPDATE
           SET acked_batch_indexes = CASE
                   WHEN a.acked_batch_indexes IS NULL OR excluded.acked_batch_indexes IS NULL THEN NULL
                   WHEN (SELECT count(DISTINCT x) FROM unnest(a.acked_batch_indexes || excluded.acked_batch_indexes) x)
                        >= a.batch_size THEN NULL
                   ELSE ARRAY(SELECT DISTINCT x FROM unnest(a.acked_batch_indexes || excluded.acked_batch_indexes) x ORDER BY x)
               END;
    END IF;

    -- Fold contiguous whole-entry acks into the mark-delete offset.
    v_folded := v_mark_delete;
    FOR r IN
        SELECT a.entry_offset FROM txnq.individual_acks a
         WHERE a.topic_id = p_topic_id AND a.partition = p_partition AND a.subscription_id = p_subscription_id
           AND a.entry_offset > v_mark_delete AND a.acked_batch_indexes IS NULL
         ORDER BY a.entry_offset
    LOOP
        EXIT WHEN r.entry_offset <> v_folded + 1;
        v_folded := r.entry_offset;
    END LOOP;
    IF v_folded > v_mark_delete THEN
        UPDATE txnq.cursors c SET mark_delete_offset = v_folded
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
        v_mark_delete := v_folded;
    END IF;
    DELETE FROM txnq.individual_acks a
     WHERE a.topic_id = p_topic_id AND a.partition = p_partition AND a.subscription_id = p_subscription_id
       AND a.entry_offset <= v_mark_delete;
    RETURN v_mark_delete;
END;
$$;
