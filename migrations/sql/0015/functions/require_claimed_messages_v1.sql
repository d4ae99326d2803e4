-- txnq.require_claimed_messages_v1: the check of message ids on a shared or
-- key_shared subscription that match no claim (ack_shared_v4, nack_shared_v2).
-- Revision 0015. A claim names a message that exists; a message id without
-- one is a message acknowledged already (fine) or no message at all (an
-- error, not a silent no-op): that is told apart by its entry.
--
-- Parameters: (topic_id, partition), subscription_id (checked by the caller),
--   offsets[i], batch_indexes[i] (-1: the whole entry; checked by the caller
--   to be no NULL and at least -1).
-- Returns nothing.
-- Locks: none. Reads, for the message ids without a claim only, the cursor's
--   mark-delete offset and each entry (by primary key).
-- Errors: TQ005 naming the first message id whose entry is a marker, holds
--   fewer messages, or does not exist above the mark-delete offset.
CREATE OR REPLACE FUNCTION txnq.require_claimed_messages_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[]
) RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_mark_delete bigint;
    v_bad record;
BEGIN
    SELECT c.mark_delete_offset INTO v_mark_delete FROM txnq.cursors c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
    SELECT u.o, u.i, e.size, e.marker INTO v_bad
      FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
      LEFT JOIN LATERAL (SELECT 1 AS found FROM txnq.claims c
                          WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                            AND c.subscription_id = p_subscription_id AND c.entry_offset = u.o
                            AND c.batch_index = greatest(u.i, 0)
                         OFFSET 0) AS k ON true
      LEFT JOIN LATERAL (SELECT e.message_count AS size, e.marker IS NOT NULL AS marker FROM txnq.entries e
                          WHERE e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset = u.o
                         OFFSET 0) AS e ON true
     WHERE k.found IS NULL
       AND CASE WHEN e.size IS NULL THEN u.o > coalesce(v_mark_delete, -1)
                ELSE e.marker OR u.i >= e.size END
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('message %s:%s of partition %s does not exist: %s', v_bad.o, v_bad.i, p_partition,
                             CASE WHEN v_bad.size IS NULL THEN 'there is no entry at that offset'
                                  WHEN v_bad.marker THEN 'the entry at that offset is a transaction marker'
                                  ELSE format('the entry at that offset holds %s message(s) (batch indexes 0 '
                                              'to %s, or -1 for the whole entry)', v_bad.size, v_bad.size - 1)
                             END),
            HINT = 'acknowledge the message ids that claim returned; nothing was changed';
    END IF;
END;
$$;
