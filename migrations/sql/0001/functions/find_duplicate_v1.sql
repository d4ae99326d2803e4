-- txnq.find_duplicate_v1: the original offset of a producer batch that was
-- written before (a retry), for append_v1.
--
-- Parameters: (topic_id, partition), producer_id, first_sequence, message count.
-- Returns entry_offset (NULL when the batch is older than the five remembered)
--   and duplicate = true.
-- Locks: the producer's sequence row, so the answer is not raced by its writer.
-- Errors: TQ003 when the batch overlaps written sequences without being one of
--   the written batches (the producer lost track of its sequence numbers).
CREATE OR REPLACE FUNCTION txnq.find_duplicate_v1(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_first_sequence bigint,
    p_count integer,
    OUT entry_offset bigint,
    OUT duplicate boolean
)
LANGUAGE plpgsql AS $$
DECLARE
    v_seq txnq.producer_sequences%ROWTYPE;
    v_slot integer;
BEGIN
    SELECT * INTO v_seq FROM txnq.producer_sequences s
     WHERE s.topic_id = p_topic_id AND s.partition = p_partition AND s.producer_id = p_producer_id
       FOR UPDATE;
    duplicate := true;
    v_slot := array_position(v_seq.recent_first_sequences, p_first_sequence);
    IF v_slot IS NOT NULL AND v_seq.recent_counts[v_slot] = p_count THEN
        entry_offset := v_seq.recent_offsets[v_slot];
        RETURN;
    ELSIF v_slot IS NULL AND p_first_sequence + p_count - 1 <= v_seq.last_sequence
          AND p_first_sequence < coalesce(v_seq.recent_first_sequences[1], 0) THEN
        entry_offset := NULL;
        RETURN;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'TQ003',
        MESSAGE = format('batch with sequences %s..%s overlaps the last written sequence %s on partition %s '
                         'but is not a retry of a written batch',
                         p_first_sequence, p_first_sequence + p_count - 1, v_seq.last_sequence, p_partition);
END;
$$;
