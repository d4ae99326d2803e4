-- txnq.ack_shared_v3: individual acknowledgements on a shared or key_shared
-- subscription, directly or inside a transaction. Revision 0013; replaces
-- ack_shared_v2 (same behaviour, same locks and errors) because v2 found the
-- named claims with `(entry_offset, batch_index) IN (SELECT ... unnest(...))`:
-- in the cached generic plan PostgreSQL chose a nested-loop semi join with the
-- claims outside and the unnest inside, comparing every claim with every
-- named message (an ack of 1000 messages: 500,000 comparisons, ~175 ms). Here
-- every lookup walks the named messages (deduplicated, in key order) and
-- finds each by its primary key (a LATERAL subquery, so no statistics can
-- turn the join around), and the rows found and locked are then deleted or
-- updated by their tuple id.
-- (Cumulative acks do not exist here, as in Pulsar: the client refuses them.)
--
-- Parameters: (topic_id, partition), subscription_id; offsets[i] and
--   batch_indexes[i] name message i (batch_index -1: every message of the
--   entry); txn_tc/txn_seq: the transaction, or NULL.
-- Returns how many outstanding messages the call acknowledged (or, in a
--   transaction, made pending). Acknowledging a message again is not an error
--   outside a transaction (acks are idempotent; it may have been redelivered
--   and acknowledged by another consumer).
-- Outside a transaction: the claims are locked (key order) and deleted, except
--   one a transaction marked meanwhile (re-checked under the row lock and left
--   alone), then the mark-delete offset follows (txnq.shared_advance_v1) if
--   the cursor row is free (SKIP LOCKED: an ack never waits for a claim; the
--   next claim moves the cursor anyway).
-- Inside a transaction: the claims stay, marked with the transaction and
--   never visible again while it is open (no redelivery, whatever the ack
--   timeout or the consumer's lease); pending acks and the transaction-log
--   row are written as ack_v2 does. The commit deletes the claims, an abort
--   makes them deliverable at once (trigger on txnq.pending_acks, installed by
--   revision 0008), and a timed-out transaction is aborted by the system.
-- Locks: the claim rows (key order); in a transaction first the transaction
--   row FOR SHARE.
-- Errors: TQ006 unknown subscription, TQ005 bad arguments, TQ012 a message
--   pending in another transaction (invariant 4) or, in a transaction, not
--   outstanding (acknowledged already), and txn_require_open_v1's.
CREATE OR REPLACE FUNCTION txnq.ack_shared_v3(
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
    v_tids tid[];
    v_named integer;
BEGIN
    p_offsets := coalesce(p_offsets, '{}');
    p_batch_indexes := coalesce(p_batch_indexes, '{}');
    IF cardinality(p_batch_indexes) <> cardinality(p_offsets) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'ack_shared_v3: offsets and batch_indexes must have the same length';
    END IF;
    IF (p_txn_tc IS NULL) <> (p_txn_seq IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'ack_shared_v3: txn_tc and txn_seq go together';
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
            MESSAGE = format('ack_shared_v3 serves shared and key_shared subscriptions; this one is %s', v_type),
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
            SELECT w.o, w.i
              FROM (SELECT DISTINCT u.o FROM unnest(p_offsets, p_batch_indexes) AS u(o, i) WHERE u.i < 0) AS e
             CROSS JOIN LATERAL (
                   SELECT c.entry_offset AS o, c.batch_index AS i FROM txnq.claims c
                    WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                      AND c.subscription_id = p_subscription_id AND c.entry_offset = e.o
                   UNION ALL
                   SELECT e.o, 0 WHERE NOT EXISTS (
                          SELECT 1 FROM txnq.claims c
                           WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                             AND c.subscription_id = p_subscription_id AND c.entry_offset = e.o)) AS w) AS x;
    END IF;
    -- The messages named, once each, in key order (the order rows are locked in).
    SELECT coalesce(array_agg(x.o ORDER BY x.o, x.i), '{}'), coalesce(array_agg(x.i ORDER BY x.o, x.i), '{}')
      INTO p_offsets, p_batch_indexes
      FROM (SELECT DISTINCT u.o, u.i FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)) AS x;
    v_named := cardinality(p_offsets);

    -- In a transaction: lock the claims first (key order), so the conflict
    -- check below sees a transaction that marked one of them meanwhile.
    IF p_txn_tc IS NOT NULL THEN
        SELECT coalesce(array_agg(x.o ORDER BY u.n), '{}'), coalesce(array_agg(x.i ORDER BY u.n), '{}'),
               coalesce(array_agg(x.size ORDER BY u.n), '{}'), coalesce(array_agg(x.t ORDER BY u.n), '{}')
          INTO v_offsets, v_indexes, v_sizes, v_tids
          FROM unnest(p_offsets, p_batch_indexes) WITH ORDINALITY AS u(o, i, n)
         CROSS JOIN LATERAL (
               SELECT c.entry_offset AS o, c.batch_index AS i, c.batch_size AS size, c.ctid AS t
                 FROM txnq.claims c
                WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                  AND c.subscription_id = p_subscription_id AND c.entry_offset = u.o AND c.batch_index = u.i
                  FOR UPDATE) AS x;
    END IF;

    -- Pending in another transaction: a conflict (invariant 4); in a
    -- transaction read after the row locks.
    SELECT x.held_tc, x.held_seq, x.o INTO v_conflict
      FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
     CROSS JOIN LATERAL (
           SELECT c.txn_tc AS held_tc, c.txn_seq AS held_seq, c.entry_offset AS o
             FROM txnq.claims c
            WHERE c.topic_id = p_topic_id AND c.partition = p_partition
              AND c.subscription_id = p_subscription_id AND c.entry_offset = u.o AND c.batch_index = u.i
              AND c.txn_tc IS NOT NULL
              AND (p_txn_tc IS NULL OR c.txn_tc <> p_txn_tc OR c.txn_seq <> p_txn_seq)
           OFFSET 0) AS x
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
        -- Lock what is still outstanding (a claim a transaction took meanwhile
        -- is re-checked after the row lock and left alone), then delete those
        -- rows by tuple id: locked, they cannot change in between.
        -- (txn_tc is tested on the locked row, outside the subquery: inside,
        -- it would let the partial claims_by_visibility index serve the lookup.)
        SELECT coalesce(array_agg(x.t), '{}') INTO v_tids
          FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
         CROSS JOIN LATERAL (
               SELECT c.ctid AS t, c.txn_tc AS held
                 FROM txnq.claims c
                WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                  AND c.subscription_id = p_subscription_id AND c.entry_offset = u.o AND c.batch_index = u.i
               OFFSET 0
                  FOR UPDATE) AS x
         WHERE x.held IS NULL;
        DELETE FROM txnq.claims c WHERE c.ctid = ANY (v_tids);
        GET DIAGNOSTICS v_count = ROW_COUNT;
        PERFORM 1 FROM txnq.cursors c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
           FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            PERFORM txnq.shared_advance_v1(p_topic_id, p_partition, p_subscription_id);
        END IF;
        RETURN v_count;
    END IF;

    -- Each message named must be outstanding (not acknowledged before), then
    -- hold them for the transaction.
    IF cardinality(v_offsets) < v_named THEN
        SELECT u.o, u.i INTO v_missing FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
         WHERE NOT EXISTS (SELECT 1 FROM unnest(v_offsets, v_indexes) AS t(o, i) WHERE t.o = u.o AND t.i = u.i)
         LIMIT 1;
        RAISE EXCEPTION USING ERRCODE = 'TQ012',
            MESSAGE = format('transaction %s:%s acknowledges message %s:%s of partition %s, which is not '
                             'outstanding on this subscription (acknowledged already, or never delivered)',
                             p_txn_tc, p_txn_seq, v_missing.o, v_missing.i, p_partition),
            HINT = 'the message was consumed before (a redelivery): abort this transaction so its '
                   'output is not written twice';
    END IF;
    -- (Locked above: updated by tuple id.)
    UPDATE txnq.claims c SET txn_tc = p_txn_tc, txn_seq = p_txn_seq, visible_at = 'infinity'
     WHERE c.ctid = ANY (v_tids) AND c.txn_tc IS NULL;
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
