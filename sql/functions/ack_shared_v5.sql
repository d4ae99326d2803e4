-- txnq.ack_shared_v5: individual acknowledgements on a shared or key_shared
-- subscription, directly or inside a transaction. Revision 0027; replaces
-- ack_shared_v4 (same parameters, result, locks and errors) for claim ranges
-- (txnq.claim_ranges, issue 23): outside a transaction the named messages a
-- range covers are acknowledged in the range row -- appended to its
-- acknowledged messages once per call, the row deleted when all of its
-- messages are acknowledged -- instead of deleting a claim row per message;
-- what no range covers goes on as in ack_shared_v4 (claim rows: redelivered
-- messages, key_shared's). Inside a transaction a range that covers a named
-- message unfolds into claim rows first (txnq.unfold_claim_ranges_v1):
-- pending acks are tracked message by message, as Pulsar's are.
-- Revision 0015's ack_shared_v4 replaced
-- ack_shared_v3 (same parameters, result, locks, plans and behaviour for
-- valid input) with the argument checks: ack_shared_v3 ignored the partition
-- (an unknown one acknowledged nothing and reported no error), took NULL
-- elements, batch indexes below -1 and offsets of no entry for messages
-- acknowledged already, and answered a message id that names no message
-- inside a transaction with TQ012 ("acknowledged already"). A message id
-- that matches no claim or range is checked against its entry (by primary
-- key; only then, so the usual acknowledgement reads no entry).
-- (Cumulative acks do not exist here, as in Pulsar: the client refuses them.)
--
-- Parameters: (topic_id, partition), subscription_id; offsets[i] and
--   batch_indexes[i] name message i (batch_index -1: every message of the
--   entry; else 0 .. batch size - 1), at most 100,000; txn_tc/txn_seq: the
--   transaction, or NULL.
-- Returns how many outstanding messages the call acknowledged (or, in a
--   transaction, made pending). Acknowledging a message again is not an error
--   outside a transaction (acks are idempotent; it may have been redelivered
--   and acknowledged by another consumer).
-- Outside a transaction: the claim ranges that cover a named message are
--   locked (in order) and updated or deleted; then the claims of the rest are locked (key order) and deleted, except
--   one a transaction marked meanwhile (re-checked under the row lock and left
--   alone), then the mark-delete offset follows (txnq.shared_advance_v1) if
--   the cursor row is free (SKIP LOCKED: an ack never waits for a claim; the
--   next claim moves the cursor anyway).
-- Inside a transaction: the claims stay, marked with the transaction and
--   never visible again while it is open (no redelivery, whatever the ack
--   timeout or the consumer's lease); pending acks and the transaction-log
--   row are written as ack_v3 does. The commit deletes the claims, an abort
--   makes them deliverable at once (trigger on txnq.pending_acks, installed by
--   revision 0008), and a timed-out transaction is aborted by the system.
-- Plan: every lookup walks the named messages (deduplicated, in key order)
--   and finds each claim by its primary key (a LATERAL subquery, so no
--   statistics can turn the join around); the rows found and locked are then
--   deleted or updated by their tuple id (see ack_shared_v3.sql, revision 0013).
-- Locks: the claim range rows (in order), then the claim rows (key order); in
--   a transaction first the transaction row FOR SHARE.
-- Errors (nothing is changed): TQ001 unknown topic or partition; TQ006
--   unknown subscription or one of another topic; TQ005 arrays of different
--   lengths or over 100,000, a NULL element, an offset below 0 or above what
--   the subscription can read, a batch index below -1 or past its entry's
--   messages, a marker or missing entry named, an exclusive or failover
--   subscription, txn_tc without txn_seq; TQ012 a message pending in another
--   transaction (invariant 4) or, in a transaction, not outstanding
--   (acknowledged already); txn_require_open_v1's (TQ014 unknown transaction
--   ...); authorize_v1's and authorize_txn_v1's.
CREATE OR REPLACE FUNCTION txnq.ack_shared_v5(
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
    v_target record;
    v_max bigint;
    v_conflict record;
    v_missing record;
    v_count integer;
    v_offsets bigint[];
    v_indexes integer[];
    v_sizes integer[];
    v_tids tid[];
    v_named integer;
    v_in_ranges integer := 0;
    v_fresh_o bigint[];
    v_fresh_i integer[];
    v_served_o bigint[] := '{}';
    v_served_i integer[] := '{}';
    v_unfold bigint[];
    v_whole boolean;
    g record;
BEGIN
    p_offsets := coalesce(p_offsets, '{}');
    p_batch_indexes := coalesce(p_batch_indexes, '{}');
    IF cardinality(p_batch_indexes) <> cardinality(p_offsets) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ack_shared_v4: offsets and batch_indexes must have the same length (got %s and %s)',
                             cardinality(p_offsets), cardinality(p_batch_indexes)),
            HINT = 'pass one batch index per offset; nothing was acknowledged';
    END IF;
    IF cardinality(p_offsets) > 100000 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ack_shared_v4: %s acknowledgements in one call; at most 100000', cardinality(p_offsets)),
            HINT = 'split the acknowledgement into several calls; nothing was acknowledged';
    END IF;
    -- Malformed message ids (array operators: no pass over the arrays unless
    -- one is found).
    IF array_position(p_offsets, NULL) IS NOT NULL OR array_position(p_batch_indexes, NULL) IS NOT NULL
       OR 0 > ANY (p_offsets) OR -1 > ANY (p_batch_indexes) THEN
        SELECT u.n, u.o, u.i INTO v_missing
          FROM unnest(p_offsets, p_batch_indexes) WITH ORDINALITY AS u(o, i, n)
         WHERE u.o IS NULL OR u.o < 0 OR u.i IS NULL OR u.i < -1
         ORDER BY u.n LIMIT 1;
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ack_shared_v4: acknowledgement %s (offset %s, batch index %s) is not a message id: '
                             'an offset is 0 or more, a batch index -1 (the whole entry) or 0 or more',
                             v_missing.n, coalesce(v_missing.o::text, 'NULL'), coalesce(v_missing.i::text, 'NULL')),
            HINT = 'acknowledge the message ids that claim returned; nothing was acknowledged';
    END IF;
    IF (p_txn_tc IS NULL) <> (p_txn_seq IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'ack_shared_v4: txn_tc and txn_seq go together',
            HINT = 'pass both parts of the transaction id, or neither';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    SELECT * INTO v_target FROM txnq.require_subscription_v1(p_topic_id, p_partition, p_subscription_id);
    IF v_target.subscription_type NOT IN ('shared', 'key_shared') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ack_shared_v4 serves shared and key_shared subscriptions; this one is %s',
                             v_target.subscription_type),
            HINT = 'exclusive and failover subscriptions acknowledge with txnq.ack_v3';
    END IF;
    IF v_target.readable_offset < ANY (p_offsets) THEN
        SELECT max(o) INTO v_max FROM unnest(p_offsets) AS o;
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = CASE WHEN v_max > v_target.high_watermark
                           THEN format('cannot acknowledge beyond offset %s of partition %s: nothing was '
                                       'written there', v_target.high_watermark, p_partition)
                           ELSE format('cannot acknowledge beyond offset %s of partition %s: the entries '
                                       'after it belong to a transaction still open (or come after one), '
                                       'and were never delivered', v_target.readable_offset, p_partition) END,
            HINT = 'acknowledge only messages that claim returned; nothing was acknowledged';
    END IF;
    IF p_txn_tc IS NOT NULL THEN
        PERFORM txnq.authorize_txn_v1(p_txn_tc, p_txn_seq);
        PERFORM txnq.txn_require_open_v1(p_txn_tc, p_txn_seq);
    END IF;
    IF p_txn_tc IS NOT NULL AND cardinality(p_offsets) > 0 THEN
        -- Pending acks are per message: the ranges covering a named message
        -- unfold into claim rows (locked first, in order).
        SELECT coalesce(array_agg(x.f ORDER BY x.f), '{}') INTO v_unfold
          FROM (SELECT r.first_offset AS f FROM txnq.claim_ranges r
                 WHERE r.topic_id = p_topic_id AND r.partition = p_partition
                   AND r.subscription_id = p_subscription_id
                   AND r.first_offset <= (SELECT max(o) FROM unnest(p_offsets) AS o)
                   AND r.last_offset >= (SELECT min(o) FROM unnest(p_offsets) AS o)
                   AND EXISTS (SELECT 1 FROM unnest(p_offsets) AS o WHERE o BETWEEN r.first_offset AND r.last_offset)
                 ORDER BY r.first_offset
                   FOR UPDATE) AS x;
        IF cardinality(v_unfold) > 0 THEN
            PERFORM txnq.unfold_claim_ranges_v1(p_topic_id, p_partition, p_subscription_id, v_unfold);
        END IF;
    ELSIF cardinality(p_offsets) > 0 THEN
        v_whole := -1 = ANY (p_batch_indexes);
        -- The claim ranges that cover a named message, locked in order: each
        -- takes the messages it covers and has not had acknowledged, in one
        -- update (or its delete, once all of its messages are).
        FOR g IN
            SELECT r.first_offset AS f, r.last_offset AS l, r.batch_sizes AS sizes, r.message_count AS total,
                   r.acked_count AS done, r.acked_offsets AS done_o, r.acked_indexes AS done_i
              FROM txnq.claim_ranges r
             WHERE r.topic_id = p_topic_id AND r.partition = p_partition AND r.subscription_id = p_subscription_id
               AND r.first_offset <= (SELECT max(o) FROM unnest(p_offsets) AS o)
               AND r.last_offset >= (SELECT min(o) FROM unnest(p_offsets) AS o)
             ORDER BY r.first_offset
               FOR UPDATE
        LOOP
            IF v_whole OR cardinality(g.done_o) > 0 THEN
                SELECT coalesce(array_agg(n.o), '{}'), coalesce(array_agg(n.i), '{}') INTO v_fresh_o, v_fresh_i
                  FROM (SELECT DISTINCT u.o, x.i
                          FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
                         CROSS JOIN LATERAL generate_series(greatest(u.i, 0),
                                                            CASE WHEN u.i < 0 THEN g.sizes[u.o - g.f + 1] - 1
                                                                 ELSE u.i END) AS x(i)
                         WHERE u.o BETWEEN g.f AND g.l AND u.i < g.sizes[u.o - g.f + 1]) AS n
                  LEFT JOIN unnest(g.done_o, g.done_i) AS a(o, i) ON a.o = n.o AND a.i = n.i
                 WHERE a.o IS NULL;
            ELSE
                -- The usual case: message ids only, none acknowledged in the range yet.
                SELECT coalesce(array_agg(n.o), '{}'), coalesce(array_agg(n.i), '{}') INTO v_fresh_o, v_fresh_i
                  FROM (SELECT DISTINCT u.o, u.i
                          FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
                         WHERE u.o BETWEEN g.f AND g.l AND u.i < g.sizes[u.o - g.f + 1]) AS n;
            END IF;
            CONTINUE WHEN cardinality(v_fresh_o) = 0;
            IF g.done + cardinality(v_fresh_o) >= g.total THEN
                DELETE FROM txnq.claim_ranges r
                 WHERE r.topic_id = p_topic_id AND r.partition = p_partition
                   AND r.subscription_id = p_subscription_id AND r.first_offset = g.f;
            ELSE
                UPDATE txnq.claim_ranges r
                   SET acked_count = r.acked_count + cardinality(v_fresh_o),
                       acked_offsets = r.acked_offsets || v_fresh_o, acked_indexes = r.acked_indexes || v_fresh_i
                 WHERE r.topic_id = p_topic_id AND r.partition = p_partition
                   AND r.subscription_id = p_subscription_id AND r.first_offset = g.f;
            END IF;
            v_in_ranges := v_in_ranges + cardinality(v_fresh_o);
            v_served_o := v_served_o || v_fresh_o;
            v_served_i := v_served_i || v_fresh_i;
        END LOOP;
        IF v_in_ranges = cardinality(p_offsets) AND NOT v_whole THEN
            -- Every message id named, each once, was a range's: nothing more to check.
            p_offsets := '{}';
        ELSIF v_in_ranges > 0 THEN
            -- What the ranges took is done; the rest (claim rows, messages
            -- acknowledged before, ids to check) goes on below. A whole-entry
            -- id (-1) goes on too: the entry may have claim rows as well.
            SELECT coalesce(array_agg(u.o), '{}'), coalesce(array_agg(u.i), '{}')
              INTO p_offsets, p_batch_indexes
              FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
              LEFT JOIN (SELECT DISTINCT s.o, s.i FROM unnest(v_served_o, v_served_i) AS s(o, i)) AS s
                ON s.o = u.o AND s.i = u.i
             WHERE s.o IS NULL;
        END IF;
        IF v_in_ranges > 0 AND cardinality(p_offsets) = 0 THEN
            PERFORM 1 FROM txnq.cursors c
             WHERE c.topic_id = p_topic_id AND c.partition = p_partition
               AND c.subscription_id = p_subscription_id
               FOR UPDATE SKIP LOCKED;
            IF FOUND THEN
                PERFORM txnq.shared_advance_v2(p_topic_id, p_partition, p_subscription_id);
            END IF;
            RETURN v_in_ranges;
        END IF;
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
        IF cardinality(v_tids) < v_named THEN
            PERFORM txnq.require_claimed_messages_v1(p_topic_id, p_partition, p_subscription_id,
                                                     p_offsets, p_batch_indexes);
        END IF;
        DELETE FROM txnq.claims c WHERE c.ctid = ANY (v_tids);
        GET DIAGNOSTICS v_count = ROW_COUNT;
        v_count := v_count + v_in_ranges;
        PERFORM 1 FROM txnq.cursors c
         WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
           FOR UPDATE SKIP LOCKED;
        IF FOUND THEN
            PERFORM txnq.shared_advance_v2(p_topic_id, p_partition, p_subscription_id);
        END IF;
        RETURN v_count;
    END IF;

    -- Each message named must be outstanding (not acknowledged before), then
    -- hold them for the transaction.
    IF cardinality(v_offsets) < v_named THEN
        PERFORM txnq.require_claimed_messages_v1(p_topic_id, p_partition, p_subscription_id,
                                                 p_offsets, p_batch_indexes);
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
