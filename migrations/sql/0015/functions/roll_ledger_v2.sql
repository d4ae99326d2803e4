-- txnq.roll_ledger_v2: close the partition's open ledger after last_offset and open the next.
-- Revision 0015: roll_ledger_v1 with its arguments checked; roll_ledger_v1
-- (which the append functions call) is a wrapper of it. v1 closed the ledger
-- at whatever offset it was given, so a call with any other offset than the
-- head's last one left entries outside their ledger's range (retention would
-- then delete a ledger whose entries a consumer still had to read) or ledgers
-- that overlap or leave a gap.
--
-- Parameters: (topic_id, partition), last_offset: the last offset of the
--   closing ledger, which is the partition's last offset (next_offset - 1:
--   the append that filled the ledger has just written it) and in the ledger
--   (a ledger is never closed empty).
-- Returns the new ledger's id.
-- Locks: the head row (the caller, the append, already holds it).
-- Invariants: ledgers of a partition cover consecutive offset ranges without gaps;
--   exactly one ledger per partition is OPEN; the metadata names the owner
--   (BookKeeper's custom metadata, used by the orphan-ledger sweep).
-- Errors: TQ001 unknown topic or partition; TQ005 last_offset NULL or not the
--   partition's last offset in its open ledger.
CREATE OR REPLACE FUNCTION txnq.roll_ledger_v2(p_topic_id integer, p_partition integer, p_last_offset bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_head txnq.partitions%ROWTYPE;
    v_topic_name text;
BEGIN
    SELECT * INTO v_head FROM txnq.partitions h
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('partition %s of topic id %s does not exist', coalesce(p_partition::text, 'NULL'),
                             coalesce(p_topic_id::text, 'NULL')),
            HINT = 'pass a partition of an existing topic (txnq.partitions lists them)';
    END IF;
    IF p_last_offset IS NULL OR p_last_offset <> v_head.next_offset - 1
       OR p_last_offset < v_head.ledger_first_offset THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('a ledger of partition %s of topic id %s closes at the partition''s last offset,'
                             ' not %s: its open ledger %s spans %s..%s', p_partition, p_topic_id,
                             coalesce(p_last_offset::text, 'NULL'), v_head.ledger_id,
                             v_head.ledger_first_offset, v_head.next_offset - 1),
            HINT = CASE WHEN v_head.next_offset - 1 < v_head.ledger_first_offset
                        THEN 'the open ledger is empty: append to it before rolling it'
                        ELSE format('pass %s, the offset of the append that filled the ledger',
                                    v_head.next_offset - 1) END;
    END IF;
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
