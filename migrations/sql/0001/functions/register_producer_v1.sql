-- txnq.register_producer_v1: open a producer session for a name on a topic.
--
-- Parameters: topic_id, name.
-- Returns one row per partition: producer_id, epoch (new for this session),
--   partition, last_sequence (the next batch starts at last_sequence + 1).
-- Locks: the producer row (epoch bump) and the producer's sequence row of every
--   partition, created here if missing. An append of the older session either
--   finished before (its sequence is read here) or sees the new epoch after
--   taking the same row lock, and is fenced (invariant 6).
-- Errors: TQ001 unknown topic.
CREATE OR REPLACE FUNCTION txnq.register_producer_v1(p_topic_id integer, p_name text)
RETURNS TABLE (producer_id bigint, epoch integer, partition integer, last_sequence bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_producer_id bigint;
    v_epoch integer;
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('producer name %L is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -', p_name);
    END IF;
    PERFORM 1 FROM txnq.topics t WHERE t.topic_id = p_topic_id FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic id %s does not exist', p_topic_id);
    END IF;
    INSERT INTO txnq.producers AS pr (topic_id, name) VALUES (p_topic_id, p_name)
    ON CONFLICT (topic_id, name) DO UPDATE SET epoch = pr.epoch + 1, last_seen_at = now()
    RETURNING pr.producer_id, pr.epoch INTO v_producer_id, v_epoch;
    INSERT INTO txnq.producer_sequences (topic_id, partition, producer_id)
    SELECT h.topic_id, h.partition, v_producer_id FROM txnq.partitions h WHERE h.topic_id = p_topic_id
    ON CONFLICT DO NOTHING;
    RETURN QUERY
        SELECT v_producer_id, v_epoch, s.partition, s.last_sequence
          FROM txnq.partitions h
          JOIN txnq.producer_sequences s
            ON s.topic_id = h.topic_id AND s.partition = h.partition AND s.producer_id = v_producer_id
         WHERE h.topic_id = p_topic_id
         ORDER BY s.partition
           FOR UPDATE OF s;
END;
$$;
