-- txnq.complete_txn_partition_v1: the marker phase (protocol step 6) on one
-- partition of a decided transaction.
--
-- Parameters: (tc_id, txn_seq) of a COMMITTING/ABORTING transaction, and one of
--   its partitions (topic_id, partition).
-- Returns the marker's offset (also when it was written before: idempotent).
-- Does: writes the COMMIT or ABORT marker entry (never delivered), drops the
--   transaction from the partition's ongoing set, adds it to the aborted index
--   on abort, and moves the max read offset up to the first offset of the oldest
--   transaction still ongoing there, minus one, or to the marker.
-- Locks: the txn_partitions row (two completers of one transaction serialise
--   here), then the partition head row (appends serialise with the marker).
-- Errors: TQ014 unknown transaction or partition not in the transaction,
--   TQ005 the transaction is not decided yet.
CREATE OR REPLACE FUNCTION txnq.complete_txn_partition_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_topic_id integer,
    p_partition integer
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_first_offset bigint;
    v_marker_offset bigint;
    v_oldest_ongoing bigint;
    v_head txnq.partitions%ROWTYPE;
    v_waiters boolean;
BEGIN
    SELECT t.state INTO v_state FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    IF v_state IS NULL OR v_state = 'OPEN' THEN
        RAISE EXCEPTION USING ERRCODE = CASE WHEN v_state IS NULL THEN 'TQ014' ELSE 'TQ005' END,
            MESSAGE = format('transaction %s:%s is %s: decide it first (end_txn_v1)',
                             p_tc_id, p_txn_seq, coalesce(lower(v_state), 'unknown'));
    END IF;
    SELECT tp.first_offset, tp.marker_offset INTO v_first_offset, v_marker_offset
      FROM txnq.txn_partitions tp
     WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq AND tp.topic_id = p_topic_id AND tp.partition = p_partition
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s has no entries on partition %s of topic id %s',
                             p_tc_id, p_txn_seq, p_partition, p_topic_id);
    END IF;
    IF v_marker_offset IS NOT NULL THEN
        RETURN v_marker_offset;
    END IF;

    -- The head row lock first, then the transaction buffer it guards.
    PERFORM 1 FROM txnq.partitions h WHERE h.topic_id = p_topic_id AND h.partition = p_partition FOR UPDATE;
    DELETE FROM txnq.txn_buffer_ongoing o
     WHERE o.topic_id = p_topic_id AND o.partition = p_partition AND o.tc_id = p_tc_id AND o.txn_seq = p_txn_seq;
    SELECT min(o.first_offset) INTO v_oldest_ongoing FROM txnq.txn_buffer_ongoing o
     WHERE o.topic_id = p_topic_id AND o.partition = p_partition;
    UPDATE txnq.partitions h
       SET next_offset = h.next_offset + 1,
           ongoing_txns = greatest(h.ongoing_txns - 1, 0),
           max_read_offset = greatest(h.max_read_offset, coalesce(v_oldest_ongoing - 1, h.next_offset)),
           last_publish_time = greatest(clock_timestamp(), h.last_publish_time)
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition
    RETURNING h.* INTO v_head;
    IF NOT FOUND THEN
        -- The topic was deleted under the transaction: nothing to mark.
        UPDATE txnq.txn_partitions tp SET marker_offset = -1
         WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq AND tp.topic_id = p_topic_id AND tp.partition = p_partition;
        RETURN -1;
    END IF;
    v_marker_offset := v_head.next_offset - 1;
    INSERT INTO txnq.entries (topic_id, partition, entry_offset, entry_log_id, ledger_id, publish_time,
                              message_count, payload_bytes, payloads, txn_tc, txn_seq, marker)
    SELECT p_topic_id, p_partition, v_marker_offset, c.active_entry_log_id, v_head.ledger_id,
           v_head.last_publish_time, 0, 0, '{}', p_tc_id, p_txn_seq,
           CASE WHEN v_state = 'COMMITTING' THEN 1 ELSE 2 END
      FROM txnq.config c;
    IF v_state = 'ABORTING' THEN
        INSERT INTO txnq.aborted_txns (topic_id, partition, tc_id, txn_seq, first_offset, marker_offset)
        VALUES (p_topic_id, p_partition, p_tc_id, p_txn_seq, v_first_offset, v_marker_offset)
        ON CONFLICT DO NOTHING;
    END IF;
    UPDATE txnq.txn_partitions tp SET marker_offset = v_marker_offset
     WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq AND tp.topic_id = p_topic_id AND tp.partition = p_partition;

    -- The max read offset moved: wake consumers waiting on the partition.
    DELETE FROM txnq.consumer_waiters w WHERE w.topic_id = p_topic_id AND w.partition = p_partition;
    IF FOUND THEN
        PERFORM pg_notify('txnq_topic_' || p_topic_id, p_partition::text);
    END IF;
    RETURN v_marker_offset;
END;
$$;
