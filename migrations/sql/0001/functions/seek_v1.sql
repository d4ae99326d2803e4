-- txnq.seek_v1: move a subscription's cursor on one partition so that the next
-- delivered entry is at p_offset, or the first entry published at or after p_time.
--
-- Parameters: (topic_id, partition), subscription_id, and exactly one of
--   p_offset / p_time. Offsets are clamped to [earliest retained, high watermark + 1].
-- Returns the new mark-delete offset.
-- Locks: the cursor row. Individual acks are cleared (as Pulsar's seek resets
--   the cursor) and the cursor generation grows, so live consumers rewind.
-- Errors: TQ006 unknown subscription/cursor, TQ005 bad arguments.
CREATE OR REPLACE FUNCTION txnq.seek_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offset bigint DEFAULT NULL,
    p_time timestamptz DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_next bigint;
    v_high_watermark bigint;
    v_earliest bigint;
    v_mark_delete bigint;
BEGIN
    IF (p_offset IS NULL) = (p_time IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'seek_v1: give exactly one of offset and time';
    END IF;
    SELECT h.next_offset - 1 INTO v_high_watermark
      FROM txnq.partitions h WHERE h.topic_id = p_topic_id AND h.partition = p_partition;
    v_earliest := txnq.earliest_offset_v1(p_topic_id, p_partition);
    IF p_time IS NOT NULL THEN
        SELECT min(e.entry_offset) INTO v_next
          FROM txnq.entries e
         WHERE e.topic_id = p_topic_id AND e.partition = p_partition
           AND e.publish_time >= p_time AND e.entry_offset >= v_earliest;
        v_next := coalesce(v_next, v_high_watermark + 1);
    ELSE
        v_next := least(greatest(p_offset, v_earliest), v_high_watermark + 1);
    END IF;
    v_mark_delete := v_next - 1;
    UPDATE txnq.cursors c
       SET mark_delete_offset = v_mark_delete, generation = c.generation + 1, updated_at = now()
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s has no cursor on partition %s', p_subscription_id, p_partition);
    END IF;
    DELETE FROM txnq.individual_acks a
     WHERE a.topic_id = p_topic_id AND a.partition = p_partition AND a.subscription_id = p_subscription_id;
    RETURN v_mark_delete;
END;
$$;
