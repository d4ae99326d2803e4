-- txnq.expire_ttl_v2: the TTL policy of one topic (Pulsar's message expiry):
-- on behalf of each subscription, acknowledge the messages published more than
-- the topic's TTL ago. Cursors move; nothing is deleted (retention does that).
-- Revision 0015: expire_ttl_v1 with its argument checked (an unknown topic
-- was silently nothing to do) and a TTL longer than the calendar (older than
-- 0001-01-01: nothing can have expired) answered without the interval overflow
-- it raised; expire_ttl_v1 is a wrapper of it.
--
-- Parameters: topic_id.
-- Returns one row per cursor that moved: partition, subscription_id, the
--   mark-delete offset before and after.
-- Rules: only what read_committed consumers can read expires (at most the
--   partition's max read offset, so an ongoing transaction's entries wait for
--   its end); a cursor never moves past a message pending in an open
--   transaction's acks (that transaction decides its fate); markers and entries
--   of aborted transactions directly above are folded in as for any ack.
-- Locks: each cursor row while it moves (txnq.apply_acks_v1), one at a time.
-- Errors: TQ001 unknown topic (the scheduler skips a topic deleted since it
--   listed them).
CREATE OR REPLACE FUNCTION txnq.expire_ttl_v2(p_topic_id integer)
RETURNS TABLE (partition integer, subscription_id bigint, mark_delete_before bigint,
               mark_delete_after bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_ttl double precision;
    v_cutoff timestamptz;
    v_expired bigint;
    v_target bigint;
    h record;
    c record;
BEGIN
    SELECT t.ttl_seconds INTO v_ttl FROM txnq.topics t WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name (txnq.topics); it may have been deleted';
    END IF;
    -- No TTL, or one no publish time can be older than (NaN compares above all).
    IF v_ttl IS NULL OR v_ttl <= 0
       OR v_ttl >= extract(epoch FROM now() - '0001-01-01 00:00:00+00'::timestamptz) THEN
        RETURN;
    END IF;
    v_cutoff := now() - make_interval(secs => v_ttl);
    FOR h IN SELECT p.partition, p.max_read_offset FROM txnq.partitions p
              WHERE p.topic_id = p_topic_id ORDER BY p.partition LOOP
        -- Publish times never go backwards within a partition (append_v2), so
        -- the expired entries are a prefix: the newest of them bounds it.
        SELECT max(e.entry_offset) INTO v_expired FROM txnq.entries e
         WHERE e.topic_id = p_topic_id AND e.partition = h.partition
           AND e.entry_offset <= h.max_read_offset AND e.publish_time <= v_cutoff;
        CONTINUE WHEN v_expired IS NULL;
        FOR c IN SELECT cu.subscription_id, cu.mark_delete_offset FROM txnq.cursors cu
                  WHERE cu.topic_id = p_topic_id AND cu.partition = h.partition
                    AND cu.mark_delete_offset < v_expired
                  ORDER BY cu.subscription_id LOOP
            SELECT least(v_expired, min(pa.entry_offset) - 1) INTO v_target FROM txnq.pending_acks pa
             WHERE pa.topic_id = p_topic_id AND pa.partition = h.partition
               AND pa.subscription_id = c.subscription_id;
            v_target := coalesce(v_target, v_expired);
            CONTINUE WHEN v_target <= c.mark_delete_offset;
            partition := h.partition;
            subscription_id := c.subscription_id;
            mark_delete_before := c.mark_delete_offset;
            mark_delete_after := txnq.apply_acks_v1(p_topic_id, h.partition, c.subscription_id, v_target,
                                                    '{}', '{}', '{}');
            RETURN NEXT;
        END LOOP;
    END LOOP;
END;
$$;
