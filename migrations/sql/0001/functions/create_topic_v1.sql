-- txnq.create_topic_v1: create a topic with its partitions (head rows) and
-- each partition's first, open ledger.
--
-- Parameters: name ([A-Za-z0-9._-], 1..200 characters), partitions (1..4096),
--   retention_seconds (-1 forever, 0 none past the slowest cursor),
--   retention_bytes (-1 unlimited), ttl_seconds (NULL: none), max_message_bytes.
-- Returns the topic id.
-- Errors: TQ010 the topic exists, TQ005 bad arguments.
CREATE OR REPLACE FUNCTION txnq.create_topic_v1(
    p_name text,
    p_partitions integer,
    p_retention_seconds double precision,
    p_retention_bytes bigint,
    p_ttl_seconds double precision,
    p_max_message_bytes integer
) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_topic_id integer;
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('topic name %L is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -', p_name);
    END IF;
    IF p_partitions IS NULL OR p_partitions NOT BETWEEN 1 AND 4096 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('a topic has 1 to 4096 partitions, not %s', p_partitions);
    END IF;
    IF p_max_message_bytes IS NULL OR p_max_message_bytes < 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('max_message_bytes must be at least 1, not %s', p_max_message_bytes);
    END IF;
    INSERT INTO txnq.topics (name, partitions, retention_seconds, retention_bytes, ttl_seconds, max_message_bytes)
    VALUES (p_name, p_partitions, p_retention_seconds, p_retention_bytes, p_ttl_seconds, p_max_message_bytes)
    ON CONFLICT (name) DO NOTHING
    RETURNING topic_id INTO v_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ010', MESSAGE = format('topic %L exists already', p_name),
            HINT = 'pick another name, or update the existing topic';
    END IF;
    PERFORM txnq.add_partitions_v1(v_topic_id, p_partitions);
    RETURN v_topic_id;
END;
$$;
