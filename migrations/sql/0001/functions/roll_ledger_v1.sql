-- txnq.roll_ledger_v1: close the partition's open ledger after last_offset and open the next.
--
-- Parameters: (topic_id, partition), last_offset (the last offset of the closing ledger).
-- Locks: the head row (the caller, append_v1, already holds it).
-- Invariants: ledgers of a partition cover consecutive offset ranges without gaps;
--   exactly one ledger per partition is OPEN; the metadata names the owner
--   (BookKeeper's custom metadata, used by the orphan-ledger sweep).
CREATE OR REPLACE FUNCTION txnq.roll_ledger_v1(p_topic_id integer, p_partition integer, p_last_offset bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_head txnq.partitions%ROWTYPE;
    v_topic_name text;
BEGIN
    SELECT * INTO v_head FROM txnq.partitions h
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition FOR UPDATE;
    SELECT t.name INTO v_topic_name FROM txnq.topics t WHERE t.topic_id = p_topic_id;
    UPDATE txnq.ledgers l
       SET state = 'CLOSED', last_offset = p_last_offset, size_bytes = v_head.ledger_bytes, closed_at = now()
     WHERE l.topic_id = p_topic_id AND l.partition = p_partition AND l.ledger_id = v_head.ledger_id;
    INSERT INTO txnq.ledgers (topic_id, partition, ledger_id, first_offset, metadata)
    VALUES (p_topic_id, p_partition, v_head.ledger_id + 1, p_last_offset + 1,
            jsonb_build_object('topic', v_topic_name, 'topic_id', p_topic_id, 'partition', p_partition));
    UPDATE txnq.partitions h
       SET ledger_id = v_head.ledger_id + 1, ledger_first_offset = p_last_offset + 1,
           ledger_bytes = 0, ledger_opened_at = clock_timestamp()
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition;
    RETURN v_head.ledger_id + 1;
END;
$$;
