-- txnq.ack_shared_v1: individual acknowledgements on a shared or key_shared
-- subscription, directly or inside a transaction. (Cumulative acks do not
-- exist here, as in Pulsar: the client refuses them.)
--
-- Parameters: (topic_id, partition), subscription_id; offsets[i] and
--   batch_indexes[i] name message i (batch_index -1: every message of the
--   entry); txn_tc/txn_seq: the transaction, or NULL.
-- Returns how many outstanding messages the call acknowledged (or, in a
--   transaction, made pending). Acknowledging a message again is not an error
--   outside a transaction (acks are idempotent; it may have been redelivered
--   and acknowledged by another consumer).
-- Outside a transaction: the claims are deleted, then the mark-delete offset
--   follows (txnq.shared_advance_v1) if the cursor row is free (SKIP LOCKED:
--   an ack never waits for a claim; the next claim moves the cursor anyway).
-- Inside a transaction: the claims stay, marked with the transaction and
--   never visible again while it is open (no redelivery, whatever the ack
--   timeout or the consumer's lease); pending acks and the transaction-log
--   row are written as ack_v2 does. The commit deletes the claims, an abort
--   makes them deliverable at once (trigger on txnq.pending_acks, installed by
--   revision 0008), and a timed-out transaction is aborted by the system.
-- Locks: the claim rows; in a transaction first the transaction row FOR SHARE.
-- Errors: TQ006 unknown subscription, TQ005 bad arguments, TQ012 a message
--   pending in another transaction (invariant 4) or, in a transaction, not
--   outstanding (acknowledged already), and txn_require_open_v1's.
CREATE OR REPLACE FUNCTION txnq.ack_shared_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL
) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_type text;
    v_conflict record;
    v_missing record;
    v_count integer;
    v_offsets bigint[];
    v_indexes integer[];
    v_sizes integer[];
BEGIN
    p_offsets := coalesce(p_offsets, '{}');
    p_batch_indexes := coalesce(p_batch_indexes, '{}');
    IF cardinality(p_batch_indexes) <> cardinality(p_offsets) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'ack_shared_v1: offsets and batch_indexes must have the same length';
    END IF;
    IF (p_txn_tc IS NULL) <> (p_txn_seq IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'ack_shared_v1: txn_tc and txn_seq go together';
    END IF;
    SELECT s.subscription_type INTO v_type FROM txnq.subscriptions s
     WHERE s.subscription_id = p_subscription_id AND s.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s of topic id %s does not exist', p_subscription_id, p_topic_id),
            HINT = 'it was unsubscribed or its topic deleted; subscribe again';
    END IF;
    IF v_type NOT IN ('shared', 'key_shared') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ack_shared_v1 serves shared and key_shared subscriptions; this one is %s', v_type),
            HINT = 'exclusive and failover subscriptions acknowledge with txnq.ack_v2';
    END IF;
    IF p_txn_tc IS NOT NULL THEN
        PERFORM txnq.txn_require_open_v1(p_txn_tc, p_txn_seq);
    END IF;
    IF -1 = ANY (p_batch_indexes) THEN
        -- A whole entry: every outstanding message of it (and the entry itself,
        -- so a transaction still finds an entry that is not outstanding).
        SELECT array_agg(x.o), array_agg(x.i) INTO p_offsets, p_batch_indexes FROM (
            SELECT u.o, u.i FROM unnest(p_offsets, p_batch_indexes) AS u(o, i) WHERE u.i >= 0
            UNION
            SELECT c.entry_offset, c.batch_index FROM txnq.claims c
              JOIN unnest(p_offsets, p_batch_indexes) AS u(o, i) ON u.i < 0 AND c.entry_offset = u.o
             WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
            UNION
            SELECT u.o, 0 FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
             WHERE u.i < 0 AND NOT EXISTS (
                   SELECT 1 FROM txnq.claims c
                    WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                      AND c.subscription_id = p_subscription_id AND c.entry_offset = u.o)) AS x;
    END IF;

    -- Pending in another transaction: a conflict (invariant 4).
    SELECT c.txn_tc AS held_tc, c.txn_seq AS held_seq, c.entry_offset AS o INTO v_conflict
      FROM txnq.claims c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = ANY (p_offsets)  -- an index condition whatever the statistics say
           AND (c.entry_offset, c.batch_index) IN (SELECT u.o, u.i FROM unnest(p_offsets, p_batch_indexes) AS u(o, i))
       AND c.txn_tc IS NOT NULL
       AND (p_txn_tc IS NULL OR c.txn_tc <> p_txn_tc OR c.txn_seq <> p_txn_seq)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ012',
            MESSAGE = format('%s conflicts with transaction %s:%s, which holds a pending ack of offset %s '
                             'on partition %s',
                             CASE WHEN p_txn_tc IS NULL THEN 'this acknowledgement'
                                  ELSE format('an acknowledgement in transaction %s:%s', p_txn_tc, p_txn_seq) END,
                             v_conflict.held_tc, v_conflict.held_seq, v_conflict.o, p_partition),
            HINT = 'the message is being consumed by that transaction: abort this transaction, or wait '
                   'until that one ends';
    END IF;

    IF p_txn_tc IS NULL THEN
        -- (A claim a transaction took meanwhile is re-checked after the row
        -- lock and left alone.)
        DELETE FROM txnq.claims c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
           AND c.entry_offset = ANY (p_offsets)  -- an index condition whatever the statistics say
           AND (c.entry_offset, c.batch_index) IN (SELECT u.o, u.i FROM unnest(p_offsets, p_batch_indexes) AS u(o, i))
           AND c.txn_tc IS NULL;
        GET DIAGNOSTICS v_count = ROW_COUNT;
        PERFORM 1 FROM txnq.cursors c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
           FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            PERFORM txnq.shared_advance_v1(p_topic_id, p_partition, p_subscription_id);
        END IF;
        RETURN v_count;
    END IF;

    -- In a transaction: lock the claims (key order), each message named must be
    -- outstanding (not acknowledged before), then hold them for the transaction.
    SELECT coalesce(array_agg(x.o), '{}'), coalesce(array_agg(x.i), '{}'), coalesce(array_agg(x.size), '{}')
      INTO v_offsets, v_indexes, v_sizes
      FROM (SELECT c.entry_offset AS o, c.batch_index AS i, c.batch_size AS size
              FROM txnq.claims c
             WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
               AND c.entry_offset = ANY (p_offsets)  -- an index condition whatever the statistics say
           AND (c.entry_offset, c.batch_index) IN (SELECT u.o, u.i FROM unnest(p_offsets, p_batch_indexes) AS u(o, i))
             ORDER BY c.entry_offset, c.batch_index
               FOR UPDATE) AS x;
    SELECT u.o, u.i INTO v_missing FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
     WHERE NOT EXISTS (SELECT 1 FROM unnest(v_offsets, v_indexes) AS t(o, i) WHERE t.o = u.o AND t.i = u.i)
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ012',
            MESSAGE = format('transaction %s:%s acknowledges message %s:%s of partition %s, which is not '
                             'outstanding on this subscription (acknowledged already, or never delivered)',
                             p_txn_tc, p_txn_seq, v_missing.o, v_missing.i, p_partition),
            HINT = 'the message was consumed before (a redelivery): abort this transaction so its '
                   'output is not written twice';
    END IF;
    UPDATE txnq.claims c SET txn_tc = p_txn_tc, txn_seq = p_txn_seq, visible_at = 'infinity'
      FROM unnest(v_offsets, v_indexes) AS t(o, i)
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = t.o AND c.batch_index = t.i AND c.txn_tc IS NULL;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    INSERT INTO txnq.txn_subscriptions (tc_id, txn_seq, topic_id, partition, subscription_id)
    VALUES (p_txn_tc, p_txn_seq, p_topic_id, p_partition, p_subscription_id)
    ON CONFLICT DO NOTHING;
    INSERT INTO txnq.pending_acks (topic_id, partition, subscription_id, entry_offset, batch_index,
                                   batch_size, cumulative, tc_id, txn_seq)
    SELECT p_topic_id, p_partition, p_subscription_id, t.o, CASE WHEN t.size <= 1 THEN -1 ELSE t.i END,
           t.size, false, p_txn_tc, p_txn_seq
      FROM unnest(v_offsets, v_indexes, v_sizes) AS t(o, i, size)
    ON CONFLICT DO NOTHING;
    RETURN v_count;
END;
$$;
