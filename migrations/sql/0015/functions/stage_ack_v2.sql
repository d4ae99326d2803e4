-- txnq.stage_ack_v2: acknowledge messages of one partition for a subscription
-- (exclusive and failover ones; the Python client refuses shared ones) as
-- part of the caller's own PostgreSQL transaction (the exactly-once
-- processor). The acks are staged under the caller's
-- transaction id and applied when it commits (txnq.publish_staged_v1): the
-- cursor moves with the application's own writes, or not at all.
-- Revision 0015; replaces stage_ack_v1 (same parameters, result and
-- behaviour for valid input), which took a batch index past the entry's batch
-- (or below -1, or a batch size of 1) for the whole entry: messages never
-- delivered were marked consumed at the commit.
--
-- Parameters: (topic_id, partition), subscription_id; offsets[i] (at least
--   one, at most 100,000), batch_indexes[i] (-1 or NULL: the whole entry;
--   else 0 .. batch size - 1), batch_sizes[i] (the entry's message_count, or
--   NULL: looked up); the last two may be NULL as a whole.
-- Returns the stage id.
-- Exactly once: a message that is acknowledged already, or pending-acked by an
--   open txnq transaction, fails here (TQ012) and again at commit, under the
--   cursor row lock, if another transaction acknowledged it meanwhile: the
--   caller's transaction, with its own writes, can then only roll back.
-- Locks: none (reads the cursor; the lock is taken at commit).
-- Errors (nothing is staged): TQ001 unknown topic or partition; TQ006
--   unknown subscription, one of another topic, or no cursor; TQ005 invalid
--   argument (no offset, arrays of different lengths, an offset above what the
--   subscription can read, a message id that names no message of its entry:
--   txnq.require_acks_v1); TQ012 acknowledged already or pending;
--   authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.stage_ack_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[] DEFAULT NULL,
    p_batch_sizes integer[] DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer := coalesce(cardinality(p_offsets), 0);
    v_target record;
    v_mark_delete bigint;
    v_stage_id bigint;
BEGIN
    IF v_count = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'stage_ack_v2: give at least one offset',
            HINT = 'pass the offsets of the messages to acknowledge';
    END IF;
    p_batch_indexes := coalesce(p_batch_indexes, array_fill(-1, ARRAY[v_count]));
    p_batch_sizes := coalesce(p_batch_sizes, array_fill(NULL::integer, ARRAY[v_count]));
    IF cardinality(p_batch_indexes) = v_count THEN
        -- A NULL batch index is the whole entry (as in stage_ack_v1).
        p_batch_indexes := ARRAY(SELECT coalesce(i, -1) FROM unnest(p_batch_indexes) WITH ORDINALITY AS u(i, n)
                                  ORDER BY n);
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    SELECT * INTO v_target FROM txnq.require_subscription_v1(p_topic_id, p_partition, p_subscription_id);
    SELECT c.mark_delete_offset INTO v_mark_delete FROM txnq.cursors c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s has no cursor on partition %s of topic id %s',
                             p_subscription_id, p_partition, p_topic_id),
            HINT = 'it was unsubscribed or its topic deleted; subscribe again';
    END IF;
    IF v_target.readable_offset < ANY (p_offsets) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = CASE WHEN (SELECT max(o) FROM unnest(p_offsets) AS o) > v_target.high_watermark
                           THEN format('cannot acknowledge beyond offset %s of partition %s: nothing was '
                                       'written there', v_target.high_watermark, p_partition)
                           ELSE format('cannot acknowledge beyond offset %s of partition %s: the entries '
                                       'after it belong to a transaction still open (or come after one), '
                                       'and were never delivered', v_target.readable_offset, p_partition) END,
            HINT = 'acknowledge only messages that were delivered; nothing was staged';
    END IF;
    -- Each message id against its entry; sizes from the entries; a one-message
    -- entry is acknowledged as a whole.
    SELECT r.batch_indexes, r.batch_sizes INTO p_batch_indexes, p_batch_sizes
      FROM txnq.require_acks_v1('stage_ack_v2', p_topic_id, p_partition, v_mark_delete,
                                p_offsets, p_batch_indexes, p_batch_sizes) AS r;
    PERFORM txnq.check_ack_once_v1(p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes);
    INSERT INTO txnq.staged_acks (topic_id, partition, subscription_id, offsets, batch_indexes, batch_sizes)
    VALUES (p_topic_id, p_partition, p_subscription_id, p_offsets, p_batch_indexes, p_batch_sizes)
    RETURNING stage_id INTO v_stage_id;
    RETURN v_stage_id;
END;
$$;
