-- txnq.send_at_commit_v2: the transactional outbox in one call, for SQL and
-- for triggers: produce one message to a topic named by its name, when the
-- caller's transaction commits (see txnq.stage_send_v2). v2 (revision 0015)
-- stages with stage_send_v2 (every argument checked, and the permission to
-- produce) and routes with partition_for_key_v2; send_at_commit_v1 becomes a
-- wrapper of it.
--
-- Parameters: topic (name, not NULL), payload (not NULL), key (routes by
--   txnq.partition_for_key_v2, as the Python producer does), properties (NULL
--   or a JSON object of strings), partition (a partition of the topic: overrides
--   the key; NULL with no key: a partition picked at random).
-- Returns the stage id.
-- Locks: none. Errors: those of stage_send_v2, TQ001 unknown (or NULL) topic.
CREATE OR REPLACE FUNCTION txnq.send_at_commit_v2(
    p_topic text,
    p_payload bytea,
    p_key bytea DEFAULT NULL,
    p_properties jsonb DEFAULT NULL,
    p_partition integer DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_topic_id integer;
    v_partitions integer;
BEGIN
    SELECT t.topic_id, t.partitions INTO v_topic_id, v_partitions FROM txnq.topics t WHERE t.name = p_topic;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic %s does not exist', coalesce(quote_literal(left(p_topic, 250)), 'NULL')),
            HINT = 'create it first: txnq topics create, or txnq.create_topic_v2; nothing was staged';
    END IF;
    RETURN txnq.stage_send_v2(
        v_topic_id,
        coalesce(p_partition, txnq.partition_for_key_v2(p_key, v_partitions),
                 floor(random() * v_partitions)::integer),
        ARRAY[p_payload],
        CASE WHEN p_key IS NULL THEN NULL ELSE ARRAY[p_key] END,
        CASE WHEN p_properties IS NULL THEN NULL ELSE ARRAY[p_properties] END);
END;
$$;
