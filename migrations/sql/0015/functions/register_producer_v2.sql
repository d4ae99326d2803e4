-- txnq.register_producer_v2: open a producer session for a name on a topic.
-- v2 (revision 0015) names a NULL topic id in its error and checks the
-- caller's permission to produce; register_producer_v1 becomes a wrapper of it.
--
-- Parameters: topic_id, name ([A-Za-z0-9._-], 1..200 characters).
-- Returns one row per partition: producer_id, epoch (new for this session),
--   partition, last_sequence (the next batch starts at last_sequence + 1).
-- Permissions: txnq.authorize_v1(topic_id, 'produce') before anything is read.
-- Locks: the producer row (epoch bump) and the producer's sequence row of every
--   partition, created here if missing. An append of the older session either
--   finished before (its sequence is read here) or sees the new epoch after
--   taking the same row lock, and is fenced (invariant 6).
-- Errors: TQ001 unknown topic, TQ005 bad name, TQ018 not permitted.
CREATE OR REPLACE FUNCTION txnq.register_producer_v2(p_topic_id integer, p_name text)
RETURNS TABLE (producer_id bigint, epoch integer, partition integer, last_sequence bigint)
LANGUAGE plpgsql AS $$
DECLARE
    v_producer_id bigint;
    v_epoch integer;
BEGIN
    IF p_topic_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = 'register_producer_v2: topic_id must not be NULL',
            HINT = 'look the topic up by name (txnq.topics); nothing was registered';
    END IF;
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('producer name %s is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -',
                             coalesce(quote_literal(left(p_name, 250)), 'NULL')),
            HINT = 'pick a valid name; nothing was registered';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'produce');
    PERFORM 1 FROM txnq.topics t WHERE t.topic_id = p_topic_id FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic id %s does not exist', p_topic_id),
            HINT = 'look the topic up by name (txnq.topics) or create it first; nothing was registered';
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
