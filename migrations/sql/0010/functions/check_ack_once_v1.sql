-- txnq.check_ack_once_v1: the exactly-once check of an application
-- transaction's acks: none of these messages may be acknowledged already, nor
-- pending in an open txnq transaction.
--
-- Parameters: (topic_id, partition), subscription_id, offsets[i],
--   batch_indexes[i] (-1: the whole entry).
-- Returns nothing; raises TQ012 naming the first message that was consumed.
-- Locks: none itself; txnq.publish_staged_v1 calls it holding the cursor row
--   lock, so two transactions acknowledging one message serialise there and
--   the second one fails (stage_ack_v1 calls it early, without the lock).
CREATE OR REPLACE FUNCTION txnq.check_ack_once_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[]
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_mark_delete bigint;
    v_offset bigint;
    v_holder text;
BEGIN
    SELECT c.mark_delete_offset INTO v_mark_delete FROM txnq.cursors c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
    SELECT u.o INTO v_offset
      FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
     WHERE u.o <= v_mark_delete
        OR EXISTS (SELECT 1 FROM txnq.individual_acks a
                    WHERE a.topic_id = p_topic_id AND a.partition = p_partition
                      AND a.subscription_id = p_subscription_id AND a.entry_offset = u.o
                      AND (a.acked_batch_indexes IS NULL OR u.i < 0 OR u.i = ANY (a.acked_batch_indexes)))
     ORDER BY u.o LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ012',
            MESSAGE = format('offset %s of partition %s is acknowledged already (the subscription''s '
                             'mark-delete offset is %s): another transaction consumed it',
                             v_offset, p_partition, v_mark_delete),
            HINT = 'roll back this transaction: its work was done and committed by the one that '
                   'acknowledged the message';
    END IF;
    SELECT pa.entry_offset, pa.tc_id || ':' || pa.txn_seq INTO v_offset, v_holder
      FROM txnq.pending_acks pa
     WHERE pa.topic_id = p_topic_id AND pa.partition = p_partition AND pa.subscription_id = p_subscription_id
       AND ((pa.cumulative AND pa.entry_offset >= (SELECT min(o) FROM unnest(p_offsets) AS o))
            OR EXISTS (SELECT 1 FROM unnest(p_offsets, p_batch_indexes) AS u(o, i)
                        WHERE u.o = pa.entry_offset AND (u.i = pa.batch_index OR u.i < 0 OR pa.batch_index < 0)))
     ORDER BY pa.entry_offset LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ012',
            MESSAGE = format('offset %s of partition %s is pending in transaction %s', v_offset, p_partition,
                             v_holder),
            HINT = 'the message is being consumed by that transaction: roll back this one';
    END IF;
END;
$$;
