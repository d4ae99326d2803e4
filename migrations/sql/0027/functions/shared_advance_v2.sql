-- txnq.shared_advance_v2: bring a shared/key_shared cursor up to date on one
-- partition: follow a seek or an external move of the mark-delete offset (TTL,
-- backlog-quota eviction, a committed transaction's acks), then move the
-- mark-delete offset up to just below the lowest claim or claim range (or to
-- the dispatch offset when nothing is outstanding), as Pulsar's mark-delete
-- position follows the individually deleted ranges. Revision 0027; replaces
-- shared_advance_v1 (same parameters, result and locks), which knew claim
-- rows only: claim ranges (txnq.claim_ranges) are outstanding too. A range
-- holds the mark-delete offset at its first entry until it is acknowledged
-- in full (its acknowledged part is an individually deleted range above the
-- mark-delete position, as in Pulsar).
--
-- Parameters: (topic_id, partition), subscription_id.
-- Returns the mark-delete offset, or NULL when the cursor does not exist.
-- Locks: the caller holds the cursor row (FOR UPDATE); claim rows below the
--   mark-delete offset are deleted (after a TTL or eviction moved it), claim
--   ranges below it too, and one that straddles it unfolds into claim rows
--   first (txnq.unfold_claim_ranges_v1), so only what is outstanding stays.
-- Invariants: the mark-delete offset never passes a claim or a claim range
--   (an unacknowledged message); after a seek (the cursor's generation
--   changed) the dispatch restarts at the mark-delete offset and the old
--   claims and claim ranges go, except the claims a transaction holds (their
--   pending acks stay, as with fetch_v2; a range never holds one).
CREATE OR REPLACE FUNCTION txnq.shared_advance_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_cursor record;
    v_lowest bigint;
    v_target bigint;
    v_straddling bigint[];
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
        DELETE FROM txnq.claim_ranges r
         WHERE r.topic_id = p_topic_id AND r.partition = p_partition AND r.subscription_id = p_subscription_id;
        UPDATE txnq.cursors c
           SET dispatch_offset = v_cursor.mark_delete_offset, dispatch_generation = v_cursor.generation
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
        v_cursor.dispatch_offset := v_cursor.mark_delete_offset;
    ELSIF v_cursor.mark_delete_offset > v_cursor.dispatch_offset THEN
        -- Moved forward from outside (TTL, eviction): what it passed is acknowledged.
        DELETE FROM txnq.claims c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition
           AND c.subscription_id = p_subscription_id AND c.entry_offset <= v_cursor.mark_delete_offset;
        DELETE FROM txnq.claim_ranges r
         WHERE r.topic_id = p_topic_id AND r.partition = p_partition AND r.subscription_id = p_subscription_id;
        UPDATE txnq.cursors c SET dispatch_offset = v_cursor.mark_delete_offset
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
        v_cursor.dispatch_offset := v_cursor.mark_delete_offset;
    END IF;
    SELECT least((SELECT c.entry_offset FROM txnq.claims c
                   WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                     AND c.subscription_id = p_subscription_id
                   ORDER BY c.entry_offset LIMIT 1),
                 (SELECT r.first_offset FROM txnq.claim_ranges r
                   WHERE r.topic_id = p_topic_id AND r.partition = p_partition
                     AND r.subscription_id = p_subscription_id
                   ORDER BY r.first_offset LIMIT 1))
      INTO v_lowest;
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
        -- Claims below the cursor (it moved from outside): acknowledged by that
        -- move; a range across it unfolds first, so its later messages stay.
        SELECT coalesce(array_agg(r.first_offset), '{}') INTO v_straddling FROM txnq.claim_ranges r
         WHERE r.topic_id = p_topic_id AND r.partition = p_partition AND r.subscription_id = p_subscription_id
           AND r.first_offset <= v_cursor.mark_delete_offset;
        IF cardinality(v_straddling) > 0 THEN
            PERFORM txnq.unfold_claim_ranges_v1(p_topic_id, p_partition, p_subscription_id, v_straddling);
        END IF;
        DELETE FROM txnq.claims c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
           AND c.entry_offset <= v_cursor.mark_delete_offset AND c.txn_tc IS NULL;
    END IF;
    RETURN v_cursor.mark_delete_offset;
END;
$$;
