-- txnq.seek_v2: move a subscription's cursor on one partition so that the next
-- delivered entry is at p_offset, or the first entry published at or after p_time.
-- Revision 0015; replaces seek_v1 (same parameters, result, locks and
-- behaviour for valid input), which called an unknown topic or partition, or
-- a subscription of another topic, "no cursor" and took +-infinity and
-- times outside what Python and Spark can represent.
--
-- Parameters: (topic_id, partition), subscription_id, and exactly one of
--   p_offset / p_time (0001-01-01 .. 9999-12-31 UTC). Offsets are clamped to
--   [earliest retained, high watermark + 1] (the Python client seeks to the
--   ends with -2^62 and 2^62).
-- Returns the new mark-delete offset.
-- Locks: the cursor row. Individual acks are cleared (as Pulsar's seek resets
--   the cursor) and the cursor generation grows, so live consumers rewind.
-- Errors (nothing is changed): TQ001 unknown topic or partition, TQ006
--   unknown subscription, one of another topic, or no cursor, TQ005 bad
--   arguments; authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.seek_v2(
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
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'seek_v2: give exactly one of offset and time',
            HINT = 'pass an offset (the next entry to deliver) or a publish time, the other NULL';
    END IF;
    PERFORM txnq.require_timestamps_v1('seek_v2: time', ARRAY[p_time]);
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    SELECT r.high_watermark INTO v_high_watermark
      FROM txnq.require_subscription_v1(p_topic_id, p_partition, p_subscription_id) AS r;
    v_earliest := txnq.earliest_offset_v2(p_topic_id, p_partition);
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
