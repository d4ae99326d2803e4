-- txnq.apply_acks_v2: move a cursor: the shared core of ack_v3 (acks outside a
-- transaction), of the commit of pending acks (complete_txn_subscription_v2),
-- of TTL (expire_ttl_v2), of the backlog quota (check_backlog_quota_v2) and
-- of publish_staged_v2. Revision 0025; replaces apply_acks_v1 (same
-- parameters, result, locks and behaviour), which is its thin wrapper.
-- apply_acks_v1 walked up from the mark-delete offset over every entry of the
-- partition above it: PL/pgSQL plans a FOR loop's query for its whole result,
-- so it read and sorted the partition's whole backlog (7,000 one-message
-- entries: 2.5 ms) to look at the first entry or two. Here the walk reads
-- FOLD_CHUNK (64) entries at a time, in offset order by the primary key, and
-- goes on only while all of them were passed.
--
-- Parameters: (topic_id, partition), subscription_id; cumulative_offset (every
--   entry at or below it is acknowledged; NULL for none); offsets[i],
--   batch_indexes[i] (-1: the whole entry), batch_sizes[i]: individual acks.
--   The caller has validated them (ack_v3 checks the high watermark).
-- Returns the mark-delete offset after the call, or NULL when the subscription
--   has no cursor on the partition (it was deleted).
-- Locks: the cursor row (serialises everything that moves one cursor).
-- Invariants: the mark-delete offset never moves backwards; individually acked
--   entries directly above it are folded in, together with the entries no
--   consumer is ever given (markers, entries of aborted transactions), so a
--   transaction's marker never holds a cursor back; acks at or below the
--   mark-delete offset are deleted (the table stays small).
CREATE OR REPLACE FUNCTION txnq.apply_acks_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_cumulative_offset bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_batch_sizes integer[]
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_mark_delete bigint;
    v_folded bigint;
    v_chunk_from bigint;
    r record;
BEGIN
    UPDATE txnq.cursors c
       SET mark_delete_offset = greatest(c.mark_delete_offset, coalesce(p_cumulative_offset, c.mark_delete_offset)),
           updated_at = now()
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
    RETURNING c.mark_delete_offset INTO v_mark_delete;
    IF NOT FOUND THEN
        RETURN NULL;
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

    -- Fold: walk up from the mark-delete offset while each entry is acknowledged
    -- as a whole, a marker, or part of an aborted transaction. The walk stops at
    -- the first entry a consumer still has to acknowledge, usually the first one;
    -- it reads the entries 64 at a time (the header says why), and reads on
    -- only when all 64 were passed (offsets are gapless: each passed entry is
    -- one more than the last).
    v_folded := v_mark_delete;
    LOOP
        v_chunk_from := v_folded;
        FOR r IN
            SELECT e.entry_offset,
                   (a.entry_offset IS NOT NULL AND a.acked_batch_indexes IS NULL)
                   OR e.marker IS NOT NULL
                   OR (e.txn_tc IS NOT NULL AND EXISTS (
                           SELECT 1 FROM txnq.aborted_txns x
                            WHERE x.topic_id = p_topic_id AND x.partition = p_partition
                              AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq)) AS passed
              FROM txnq.entries e
              LEFT JOIN txnq.individual_acks a
                ON a.topic_id = e.topic_id AND a.partition = e.partition
               AND a.subscription_id = p_subscription_id AND a.entry_offset = e.entry_offset
             WHERE e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset > v_chunk_from
             ORDER BY e.entry_offset
             LIMIT 64
        LOOP
            EXIT WHEN NOT r.passed OR r.entry_offset <> v_folded + 1;
            v_folded := r.entry_offset;
        END LOOP;
        EXIT WHEN v_folded - v_chunk_from < 64;
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
