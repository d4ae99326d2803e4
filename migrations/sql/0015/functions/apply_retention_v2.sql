-- txnq.apply_retention_v2: the retention policy of one topic: delete the closed
-- ledgers that every subscription has consumed and that retention no longer
-- keeps (state DELETED, deleted_at). Ledgers are the unit, as in Pulsar; their
-- entries leave storage when entry-log GC drops or compacts their entry log.
-- Revision 0015: apply_retention_v1 with its argument checked (an unknown
-- topic was silently nothing to do) and a retention time longer than the
-- calendar (keeps every ledger by time) answered without the interval
-- overflow it raised; apply_retention_v1 is a wrapper of it.
--
-- Parameters: topic_id.
-- Returns one row per ledger deleted: partition, ledger_id, first_offset,
--   last_offset, size_bytes.
-- Which ledgers: CLOSED (the open ledger never goes), every entry at or below
--   every cursor's mark-delete offset (with no subscription: at or below the
--   max read offset), below the max read offset and below the first offset of
--   every ongoing transaction (a transaction's entries stay until it ends).
--   Retention (topic's retention_seconds T, retention_bytes S; -1 = infinite,
--   0 = not set): T = 0 and S = 0 deletes a ledger as soon as it is consumed;
--   otherwise a consumed ledger goes when it closed more than T ago (T > 0), or,
--   oldest first, while the consumed ledgers newer than it still add up to at
--   least S (S > 0: at least S bytes of consumed data stay, as Pulsar's
--   retention size).
--   T = -1 and S <= 0, or S = -1 and T <= 0: kept forever.
-- Locks: the ledger rows it deletes; never a head row, so appends go on. A
--   subscription reset concurrently to the earliest offset may still read a
--   ledger deleted by this call until GC drops its entry log.
-- Errors: TQ001 unknown topic (the scheduler skips a topic deleted since it
--   listed them).
CREATE OR REPLACE FUNCTION txnq.apply_retention_v2(p_topic_id integer)
RETURNS TABLE (partition integer, ledger_id bigint, first_offset bigint, last_offset bigint,
               size_bytes bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_time double precision;
    v_size bigint;
    v_closed_before timestamptz;  -- a ledger closed before it is past the retention time
    v_limit bigint;
    v_kept bigint;
    h record;
    l record;
BEGIN
    SELECT t.retention_seconds, t.retention_bytes INTO v_time, v_size
      FROM txnq.topics t WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name (txnq.topics); it may have been deleted';
    END IF;
    IF (v_time < 0 AND v_size <= 0) OR (v_size < 0 AND v_time <= 0) THEN
        RETURN;
    END IF;
    -- A time no ledger can have closed that long ago (NaN compares above all)
    -- keeps every ledger by time.
    IF v_time > 0 AND v_time < extract(epoch FROM now() - '0001-01-01 00:00:00+00'::timestamptz) THEN
        v_closed_before := now() - make_interval(secs => v_time);
    END IF;
    FOR h IN SELECT p.partition, p.max_read_offset FROM txnq.partitions p
              WHERE p.topic_id = p_topic_id ORDER BY p.partition LOOP
        -- The highest offset every reader has consumed.
        SELECT least(h.max_read_offset,
                     coalesce(min(cu.mark_delete_offset), h.max_read_offset),
                     coalesce((SELECT min(o.first_offset) - 1 FROM txnq.txn_buffer_ongoing o
                                WHERE o.topic_id = p_topic_id AND o.partition = h.partition),
                              h.max_read_offset))
          INTO v_limit
          FROM txnq.cursors cu WHERE cu.topic_id = p_topic_id AND cu.partition = h.partition;
        -- What the consumed, closed ledgers of the partition hold.
        SELECT coalesce(sum(cl.size_bytes), 0) INTO v_kept FROM txnq.ledgers cl
         WHERE cl.topic_id = p_topic_id AND cl.partition = h.partition
           AND cl.state = 'CLOSED' AND cl.last_offset <= v_limit;
        FOR l IN SELECT cl.ledger_id, cl.first_offset, cl.last_offset, coalesce(cl.size_bytes, 0) AS size_bytes,
                        cl.closed_at
                   FROM txnq.ledgers cl
                  WHERE cl.topic_id = p_topic_id AND cl.partition = h.partition
                    AND cl.state = 'CLOSED' AND cl.last_offset <= v_limit
                  ORDER BY cl.ledger_id
                    FOR UPDATE LOOP
            EXIT WHEN NOT (
                (v_time = 0 AND v_size = 0)
                OR coalesce(l.closed_at <= v_closed_before, false)
                OR (v_size > 0 AND v_kept - l.size_bytes >= v_size));
            UPDATE txnq.ledgers dl SET state = 'DELETED', deleted_at = now()
             WHERE dl.topic_id = p_topic_id AND dl.partition = h.partition AND dl.ledger_id = l.ledger_id;
            v_kept := v_kept - l.size_bytes;
            partition := h.partition;
            ledger_id := l.ledger_id;
            first_offset := l.first_offset;
            last_offset := l.last_offset;
            size_bytes := l.size_bytes;
            RETURN NEXT;
        END LOOP;
    END LOOP;
END;
$$;
