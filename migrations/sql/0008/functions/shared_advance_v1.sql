-- txnq.shared_advance_v1: bring a shared/key_shared cursor up to date on one
-- partition: follow a seek or an external move of the mark-delete offset (TTL,
-- backlog-quota eviction, a committed transaction's acks), then move the
-- mark-delete offset up to just below the lowest claim (or to the dispatch
-- offset when nothing is outstanding), as Pulsar's mark-delete position follows
-- the individually deleted ranges.
--
-- Parameters: (topic_id, partition), subscription_id.
-- Returns the mark-delete offset, or NULL when the cursor does not exist.
-- Locks: the caller holds the cursor row (FOR UPDATE); claim rows below the
--   mark-delete offset are deleted (after a TTL or eviction moved it), so the
--   claims table holds only what is outstanding.
-- Invariants: the mark-delete offset never passes a claim (an unacknowledged
--   message); after a seek (the cursor's generation changed) the dispatch
--   restarts at the mark-delete offset and the old claims go, except the ones
--   a transaction holds (their pending acks stay, as with fetch_v2).
CREATE OR REPLACE FUNCTION txnq.shared_advance_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_cursor record;
    v_lowest bigint;
    v_target bigint;
BEGIN
    SELECT c.mark_delete_offset, c.dispatch_offset, c.generation, c.dispatch_generation INTO v_cursor
      FROM txnq.cursors c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF v_cursor.dispatch_offset IS NULL OR v_cursor.dispatch_generation IS DISTINCT FROM v_cursor.generation THEN
        -- First shared use, or a seek: dispatch again from the mark-delete offset.
        DELETE FROM txnq.claims c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition
           AND c.subscription_id = p_subscription_id AND c.txn_tc IS NULL;
        UPDATE txnq.cursors c
           SET dispatch_offset = v_cursor.mark_delete_offset, dispatch_generation = v_cursor.generation
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
        v_cursor.dispatch_offset := v_cursor.mark_delete_offset;
    ELSIF v_cursor.mark_delete_offset > v_cursor.dispatch_offset THEN
        -- Moved forward from outside (TTL, eviction): what it passed is acknowledged.
        DELETE FROM txnq.claims c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition
           AND c.subscription_id = p_subscription_id AND c.entry_offset <= v_cursor.mark_delete_offset;
        UPDATE txnq.cursors c SET dispatch_offset = v_cursor.mark_delete_offset
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
        v_cursor.dispatch_offset := v_cursor.mark_delete_offset;
    END IF;
    SELECT c.entry_offset INTO v_lowest FROM txnq.claims c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
     ORDER BY c.entry_offset LIMIT 1;
    v_target := coalesce(v_lowest - 1, v_cursor.dispatch_offset);
    IF v_target > v_cursor.mark_delete_offset THEN
        UPDATE txnq.cursors c SET mark_delete_offset = v_target, updated_at = now()
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
        -- A committed transaction's acks go through apply_acks_v1, which may leave
        -- individual acks above the old position: they are behind the cursor now.
        DELETE FROM txnq.individual_acks a
         WHERE a.topic_id = p_topic_id AND a.partition = p_partition
           AND a.subscription_id = p_subscription_id AND a.entry_offset <= v_target;
        RETURN v_target;
    END IF;
    IF v_lowest IS NOT NULL AND v_lowest <= v_cursor.mark_delete_offset THEN
        -- Claims below the cursor (it moved from outside): acknowledged by that move.
        DELETE FROM txnq.claims c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
           AND c.entry_offset <= v_cursor.mark_delete_offset AND c.txn_tc IS NULL;
    END IF;
    RETURN v_cursor.mark_delete_offset;
END;
$$;
