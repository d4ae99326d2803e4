-- txnq.complete_txn_subscription_v2: the marker phase (protocol step 6) on one
-- subscription and partition a decided transaction acknowledged on.
-- Revision 0015: complete_txn_subscription_v1 with its arguments checked
-- (NULLs are invalid arguments; an unknown transaction is no longer told to
-- "decide first"); complete_txn_subscription_v1 is a wrapper of it.
--
-- Parameters: (tc_id, txn_seq) of a COMMITTING/ABORTING transaction, and
--   (topic_id, partition, subscription_id): a row of txnq.txn_subscriptions.
-- Returns nothing. Idempotent (the txn_subscriptions row's done flag).
-- Does: on commit, applies the transaction's pending acks to the cursor
--   (txnq.apply_acks_v1); on abort, releases them and bumps the cursor's
--   generation, so live consumers rewind and the messages are delivered again.
--   Either way the pending acks are deleted: none survive their transaction
--   (the Pulsar #10306 failure mode).
-- Locks: the txn_subscriptions row, then the cursor row.
-- Errors: TQ005 an argument is NULL, or the transaction is not decided yet;
--   TQ014 unknown transaction, or it did not acknowledge on that subscription
--   and partition.
CREATE OR REPLACE FUNCTION txnq.complete_txn_subscription_v2(
    p_tc_id integer,
    p_txn_seq bigint,
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_done boolean;
    v_acks record;
BEGIN
    IF p_tc_id IS NULL OR p_txn_seq IS NULL OR p_topic_id IS NULL OR p_partition IS NULL
       OR p_subscription_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('complete_txn_subscription_v2: no argument may be NULL (transaction %s:%s,'
                             ' topic id %s, partition %s, subscription id %s)',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL'),
                             coalesce(p_topic_id::text, 'NULL'), coalesce(p_partition::text, 'NULL'),
                             coalesce(p_subscription_id::text, 'NULL')),
            HINT = 'pass a row of txnq.txn_subscriptions: the transaction id and where it acknowledged';
    END IF;
    SELECT t.state INTO v_state FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s does not exist', p_tc_id, p_txn_seq),
            HINT = 'pass the tc_id and txn_seq that open_txn_v1 returned (txnq.transactions lists them)';
    END IF;
    IF v_state = 'OPEN' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transaction %s:%s is open: its acknowledgements are not decided yet',
                             p_tc_id, p_txn_seq),
            HINT = 'decide it first (txnq.end_txn_v1), then run its marker phase';
    END IF;
    SELECT ts.done INTO v_done FROM txnq.txn_subscriptions ts
     WHERE ts.tc_id = p_tc_id AND ts.txn_seq = p_txn_seq AND ts.topic_id = p_topic_id
       AND ts.partition = p_partition AND ts.subscription_id = p_subscription_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s did not acknowledge on subscription id %s, partition %s'
                             ' of topic id %s', p_tc_id, p_txn_seq, p_subscription_id, p_partition,
                             p_topic_id),
            HINT = 'complete the subscriptions txnq.txn_subscriptions lists for the transaction';
    END IF;
    IF v_done THEN
        RETURN;
    END IF;
    PERFORM 1 FROM txnq.cursors c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       FOR UPDATE;
    IF FOUND THEN
        IF v_state = 'COMMITTING' THEN
            SELECT max(pa.entry_offset) FILTER (WHERE pa.cumulative) AS cumulative,
                   coalesce(array_agg(pa.entry_offset) FILTER (WHERE NOT pa.cumulative), '{}') AS offsets,
                   coalesce(array_agg(pa.batch_index) FILTER (WHERE NOT pa.cumulative), '{}') AS indexes,
                   coalesce(array_agg(pa.batch_size) FILTER (WHERE NOT pa.cumulative), '{}') AS sizes
              INTO v_acks
              FROM txnq.pending_acks pa
             WHERE pa.topic_id = p_topic_id AND pa.partition = p_partition
               AND pa.subscription_id = p_subscription_id AND pa.tc_id = p_tc_id AND pa.txn_seq = p_txn_seq;
            PERFORM txnq.apply_acks_v1(p_topic_id, p_partition, p_subscription_id, v_acks.cumulative,
                                       v_acks.offsets, v_acks.indexes, v_acks.sizes);
        ELSE
            UPDATE txnq.cursors c SET generation = c.generation + 1, updated_at = now()
             WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
        END IF;
    END IF;
    DELETE FROM txnq.pending_acks pa
     WHERE pa.topic_id = p_topic_id AND pa.partition = p_partition
       AND pa.subscription_id = p_subscription_id AND pa.tc_id = p_tc_id AND pa.txn_seq = p_txn_seq;
    UPDATE txnq.txn_subscriptions ts SET done = true
     WHERE ts.tc_id = p_tc_id AND ts.txn_seq = p_txn_seq AND ts.topic_id = p_topic_id
       AND ts.partition = p_partition AND ts.subscription_id = p_subscription_id;
END;
$$;
