-- txnq.ack_v3: acknowledge messages of one partition for a subscription
-- (exclusive and failover ones; shared ones acknowledge with ack_shared_v4),
-- directly or inside a transaction. Revision 0015;
-- replaces ack_v2 (same parameters, result, locks and behaviour for valid
-- input) because ack_v2 trusted the message ids it was given: a batch index
-- past the entry's batch (or a batch size smaller than the entry's) was taken
-- for the whole entry, or counted towards it, so messages never delivered were
-- marked consumed and lost. Here every argument is checked first, and every
-- message named is checked against its entry, found by primary key (the
-- lookup ack_v2 already made for unknown batch sizes).
--
-- Parameters: (topic_id, partition), subscription_id; cumulative_offset (every
--   entry at or below it is acknowledged; NULL for none; -1 acknowledges
--   nothing) and, when the cumulative ack ends inside a batch entry,
--   cumulative_batch_index (0 .. batch size - 1: messages 0..index of that
--   entry are acknowledged, the entries before it as a whole) and
--   cumulative_batch_size (NULL: looked up); offsets[i], batch_indexes[i],
--   batch_sizes[i]: individual acks, batch_index -1 meaning the whole entry,
--   otherwise message batch_index (0 .. batch size - 1) of the entry, whose
--   size batch_sizes[i] is the entry's message_count or NULL (looked up);
--   at most 100,000 acks per call; txn_tc/txn_seq: the transaction, or NULL.
-- Returns the cursor's mark-delete offset after the call.
-- Outside a transaction: the cursor moves now (txnq.apply_acks_v1). Acking a
--   message at or below the mark-delete offset again changes nothing.
-- Inside a transaction: nothing moves; the acks are written as pending acks
--   (applied by the commit, released by an abort) and the subscription is
--   registered in the transaction log. As Pulsar: an ack of a message that is
--   already acknowledged is a conflict, so a redelivered message cannot be
--   consumed twice by two committed transactions.
-- Locks: the transaction row FOR SHARE (txn_require_open_v1), then the cursor
--   row (serialises acks, conflict checks and commits on one subscription and
--   partition).
-- Invariants: a message pending-acked by one open transaction cannot be acked
--   by another transaction nor outside one (invariant 4): TQ012 names both.
--   Nothing above what the subscription can read (read_committed: the max read
--   offset; read_uncommitted: the high watermark) is acknowledged: those
--   messages were never delivered.
-- Errors (nothing is changed): TQ001 unknown topic or partition; TQ006
--   unknown subscription, one of another topic, or no cursor; TQ005 invalid
--   argument: arrays of different lengths or over 100,000, NULL elements, an
--   offset below 0 or above what the subscription can read, a batch index
--   outside -1 .. size - 1, a batch size other than the entry's, a marker or
--   missing entry named, a cumulative batch index without a cumulative offset,
--   txn_tc without txn_seq; TQ012 conflict; txn_require_open_v1's (TQ014
--   unknown transaction, TQ013, TQ015, TQ002); authorize_v1's and
--   authorize_txn_v1's.
CREATE OR REPLACE FUNCTION txnq.ack_v3(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_cumulative_offset bigint,
    p_offsets bigint[] DEFAULT '{}',
    p_batch_indexes integer[] DEFAULT '{}',
    p_batch_sizes integer[] DEFAULT '{}',
    p_cumulative_batch_index integer DEFAULT NULL,
    p_cumulative_batch_size integer DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_target record;
    v_high_watermark bigint;
    v_limit bigint;
    v_mark_delete bigint;
    v_conflict record;
    v_split boolean := false;
    v_split_offset bigint;
    v_acked integer[];
    v_entry record;
BEGIN
    p_offsets := coalesce(p_offsets, '{}');
    p_batch_indexes := coalesce(p_batch_indexes, '{}');
    p_batch_sizes := coalesce(p_batch_sizes, '{}');
    IF (p_txn_tc IS NULL) <> (p_txn_seq IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'ack_v3: txn_tc and txn_seq go together',
            HINT = 'pass both parts of the transaction id, or neither';
    END IF;
    IF p_cumulative_offset < -1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ack_v3: cumulative_offset %s is below -1', p_cumulative_offset),
            HINT = 'pass the offset of the last entry to acknowledge cumulatively, or NULL for none';
    END IF;
    IF p_cumulative_batch_index IS NOT NULL
       AND (p_cumulative_offset IS NULL OR p_cumulative_batch_index < 0) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ack_v3: cumulative_batch_index %s needs a cumulative_offset and is 0 or more',
                             p_cumulative_batch_index),
            HINT = 'pass the index of the last message of the batch entry at cumulative_offset to '
                   'acknowledge, or NULL to acknowledge the whole entry';
    END IF;
    IF p_cumulative_batch_size < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ack_v3: cumulative_batch_size %s is below 1', p_cumulative_batch_size),
            HINT = 'pass the entry''s message_count, or NULL to look it up';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    SELECT * INTO v_target FROM txnq.require_subscription_v1(p_topic_id, p_partition, p_subscription_id);
    v_high_watermark := v_target.high_watermark;
    v_limit := v_target.readable_offset;
    IF p_cumulative_offset > v_limit OR v_limit < ANY (p_offsets) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = CASE WHEN greatest(p_cumulative_offset, (SELECT max(o) FROM unnest(p_offsets) AS o))
                                > v_high_watermark
                           THEN format('cannot acknowledge beyond offset %s of partition %s: nothing was '
                                       'written there', v_high_watermark, p_partition)
                           ELSE format('cannot acknowledge beyond offset %s of partition %s: the entries '
                                       'after it belong to a transaction still open (or come after one), '
                                       'and were never delivered', v_limit, p_partition) END,
            HINT = 'acknowledge only messages that fetch returned; nothing was acknowledged';
    END IF;
    IF p_txn_tc IS NOT NULL THEN
        PERFORM txnq.authorize_txn_v1(p_txn_tc, p_txn_seq);
        PERFORM txnq.txn_require_open_v1(p_txn_tc, p_txn_seq);
    END IF;

    SELECT c.mark_delete_offset INTO v_mark_delete FROM txnq.cursors c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s has no cursor on partition %s of topic id %s',
                             p_subscription_id, p_partition, p_topic_id),
            HINT = 'it was unsubscribed or its topic deleted; subscribe again';
    END IF;

    -- Every message named against its entry (txnq.require_acks_v1); unknown
    -- batch sizes are taken from the entries, and a one-message entry is
    -- acknowledged as a whole.
    SELECT r.batch_indexes, r.batch_sizes INTO p_batch_indexes, p_batch_sizes
      FROM txnq.require_acks_v1('ack_v3', p_topic_id, p_partition, v_mark_delete,
                                p_offsets, p_batch_indexes, p_batch_sizes) AS r;
    IF p_cumulative_batch_index IS NOT NULL THEN
        SELECT e.message_count, e.marker IS NOT NULL AS marker INTO v_entry FROM txnq.entries e
         WHERE e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset = p_cumulative_offset;
        IF NOT FOUND AND p_cumulative_offset > v_mark_delete THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('offset %s of partition %s holds no entry', p_cumulative_offset, p_partition),
                HINT = 'acknowledge the message ids that fetch returned; nothing was acknowledged';
        ELSIF FOUND AND (v_entry.marker OR p_cumulative_batch_index >= v_entry.message_count
                         OR p_cumulative_batch_size <> v_entry.message_count) THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = CASE
                    WHEN v_entry.marker
                        THEN format('offset %s of partition %s is a transaction marker: it has no batch index %s',
                                    p_cumulative_offset, p_partition, p_cumulative_batch_index)
                    WHEN p_cumulative_batch_index >= v_entry.message_count
                        THEN format('the entry at offset %s of partition %s holds %s message(s): batch index %s '
                                    'does not exist (0 to %s)', p_cumulative_offset, p_partition,
                                    v_entry.message_count, p_cumulative_batch_index, v_entry.message_count - 1)
                    ELSE format('the entry at offset %s of partition %s holds %s message(s), not '
                                'cumulative_batch_size %s', p_cumulative_offset, p_partition,
                                v_entry.message_count, p_cumulative_batch_size)
                END,
                HINT = 'acknowledge the message ids that fetch returned (a NULL batch size is looked up); '
                       'nothing was acknowledged';
        END IF;
        p_cumulative_batch_size := coalesce(v_entry.message_count, p_cumulative_batch_size, 1);
    END IF;

    IF p_cumulative_batch_index IS NOT NULL AND p_cumulative_batch_index < p_cumulative_batch_size - 1 THEN
        -- A cumulative ack inside a batch: the entries before it as a whole, and
        -- the batch's messages up to the index individually.
        p_offsets := p_offsets || array_fill(p_cumulative_offset, ARRAY[p_cumulative_batch_index + 1]);
        p_batch_indexes := p_batch_indexes || ARRAY(SELECT generate_series(0, p_cumulative_batch_index));
        p_batch_sizes := p_batch_sizes || array_fill(p_cumulative_batch_size, ARRAY[p_cumulative_batch_index + 1]);
        v_split_offset := p_cumulative_offset;
        p_cumulative_offset := p_cumulative_offset - 1;
        v_split := true;
    END IF;

    -- Pending acks of other transactions that these acks would overlap.
    SELECT pa.tc_id, pa.txn_seq, pa.entry_offset INTO v_conflict
      FROM txnq.pending_acks pa
     WHERE pa.topic_id = p_topic_id AND pa.partition = p_partition AND pa.subscription_id = p_subscription_id
       AND (p_txn_tc IS NULL OR pa.tc_id <> p_txn_tc OR pa.txn_seq <> p_txn_seq)
       AND (pa.entry_offset <= p_cumulative_offset
            OR (pa.cumulative AND pa.entry_offset >= (SELECT min(o) FROM unnest(p_offsets) AS o))
            OR EXISTS (SELECT 1 FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
                        WHERE u.o = pa.entry_offset AND (u.i = pa.batch_index OR u.i < 0 OR pa.batch_index < 0)))
     ORDER BY pa.entry_offset
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ012',
            MESSAGE = format('%s conflicts with transaction %s:%s, which holds a pending ack of offset %s '
                             'on partition %s',
                             CASE WHEN p_txn_tc IS NULL THEN 'this acknowledgement'
                                  ELSE format('an acknowledgement in transaction %s:%s', p_txn_tc, p_txn_seq) END,
                             v_conflict.tc_id, v_conflict.txn_seq, v_conflict.entry_offset, p_partition),
            HINT = 'the message is being consumed by that transaction: abort this transaction, or wait '
                   'until that one ends';
    END IF;

    IF p_txn_tc IS NULL THEN
        RETURN txnq.apply_acks_v1(p_topic_id, p_partition, p_subscription_id, p_cumulative_offset,
                                  p_offsets, p_batch_indexes, p_batch_sizes);
    END IF;

    -- In a transaction: a message acknowledged before cannot be acknowledged again.
    IF v_split AND p_cumulative_offset <= v_mark_delete THEN
        p_cumulative_offset := NULL;  -- only the batch's own messages remain to acknowledge
    END IF;
    IF v_split AND v_split_offset > v_mark_delete THEN
        -- Cumulative up to a message inside a batch: its messages before the
        -- position that are acknowledged already (an earlier transaction
        -- consumed the first part of the batch) stay acknowledged; only the
        -- position itself must not be, as with a whole entry.
        SELECT a.acked_batch_indexes INTO v_acked FROM txnq.individual_acks a
         WHERE a.topic_id = p_topic_id AND a.partition = p_partition
           AND a.subscription_id = p_subscription_id AND a.entry_offset = v_split_offset;
        IF v_acked IS NOT NULL THEN
            SELECT array_agg(u.o ORDER BY u.n), array_agg(u.i ORDER BY u.n), array_agg(u.s ORDER BY u.n)
              INTO p_offsets, p_batch_indexes, p_batch_sizes
              FROM unnest(p_offsets, p_batch_indexes, p_batch_sizes) WITH ORDINALITY AS u(o, i, s, n)
             WHERE NOT (u.o = v_split_offset AND u.i <> p_cumulative_batch_index AND u.i = ANY (v_acked));
        END IF;
    END IF;
    IF p_cumulative_offset <= v_mark_delete
       OR EXISTS (SELECT 1 FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
                   WHERE u.o <= v_mark_delete
                      OR EXISTS (SELECT 1 FROM txnq.individual_acks a
                                  WHERE a.topic_id = p_topic_id AND a.partition = p_partition
                                    AND a.subscription_id = p_subscription_id AND a.entry_offset = u.o
                                    AND (a.acked_batch_indexes IS NULL OR u.i < 0
                                         OR u.i = ANY (a.acked_batch_indexes)))) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ012',
            MESSAGE = format('transaction %s:%s acknowledges a message of partition %s that is already '
                             'acknowledged (the subscription''s mark-delete offset is %s)',
                             p_txn_tc, p_txn_seq, p_partition, v_mark_delete),
            HINT = 'the message was consumed before (a redelivery): abort this transaction so its '
                   'output is not written twice';
    END IF;
    INSERT INTO txnq.txn_subscriptions (tc_id, txn_seq, topic_id, partition, subscription_id)
    VALUES (p_txn_tc, p_txn_seq, p_topic_id, p_partition, p_subscription_id)
    ON CONFLICT DO NOTHING;
    INSERT INTO txnq.pending_acks (topic_id, partition, subscription_id, entry_offset, batch_index,
                                   batch_size, cumulative, tc_id, txn_seq)
    SELECT p_topic_id, p_partition, p_subscription_id, u.o, u.i, u.s, false, p_txn_tc, p_txn_seq
      FROM unnest(p_offsets, p_batch_indexes, p_batch_sizes) AS u(o, i, s)
    ON CONFLICT DO NOTHING;
    IF p_cumulative_offset IS NOT NULL THEN
        -- A transaction keeps one cumulative position per subscription and partition: its highest.
        DELETE FROM txnq.pending_acks pa
         WHERE pa.topic_id = p_topic_id AND pa.partition = p_partition
           AND pa.subscription_id = p_subscription_id AND pa.tc_id = p_txn_tc AND pa.txn_seq = p_txn_seq
           AND pa.cumulative AND pa.entry_offset < p_cumulative_offset;
        INSERT INTO txnq.pending_acks AS pa (topic_id, partition, subscription_id, entry_offset, batch_index,
                                             batch_size, cumulative, tc_id, txn_seq)
        SELECT p_topic_id, p_partition, p_subscription_id, p_cumulative_offset, -1, 1, true, p_txn_tc, p_txn_seq
         WHERE NOT EXISTS (SELECT 1 FROM txnq.pending_acks x
                            WHERE x.topic_id = p_topic_id AND x.partition = p_partition
                              AND x.subscription_id = p_subscription_id AND x.tc_id = p_txn_tc
                              AND x.txn_seq = p_txn_seq AND x.cumulative
                              AND x.entry_offset >= p_cumulative_offset)
        ON CONFLICT (topic_id, partition, subscription_id, entry_offset, batch_index)
        DO UPDATE SET cumulative = true;
    END IF;
    RETURN v_mark_delete;
END;
$$;
