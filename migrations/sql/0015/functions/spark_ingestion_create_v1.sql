-- txnq.spark_ingestion_create_v1: record an incremental ingestion of a topic
-- (nothing when the name exists). Revision 0015.
--
-- Parameters: name (1 to 200 characters of A-Z a-z 0-9 . _ -), topic_id (an
--   existing topic).
-- Returns nothing. Locks: the row it inserts.
-- Errors: TQ005 bad name; TQ001 an unknown topic; TQ018 without consume on it.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_create_v1(p_name text, p_topic_id integer)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('ingestion name %s is not valid: use 1 to 200 characters of A-Z a-z 0-9 . _ -',
                             coalesce(quote_literal(left(p_name, 80)), 'NULL'));
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    -- authorize_v1 lets a trusted caller through without looking the topic up.
    IF NOT EXISTS (SELECT 1 FROM txnq.topics t WHERE t.topic_id = p_topic_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name or create it first; nothing was recorded';
    END IF;
    INSERT INTO txnq.spark_ingestions (name, topic_id) VALUES (p_name, p_topic_id)
    ON CONFLICT (name) DO NOTHING;
END;
$$;
