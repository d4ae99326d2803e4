-- txnq.send_at_commit_v1: the transactional outbox in one call, for SQL and
-- for triggers: produce one message to a topic named by its name, when the
-- caller's transaction commits (see txnq.stage_send_v1).
--
-- Parameters: topic (name), payload, key (routes by txnq.partition_for_key_v1,
--   as the Python producer does), properties (a JSON object of strings),
--   partition (overrides the key; NULL with no key: a partition picked at random).
-- Returns the stage id.
-- Locks: none. Errors: those of stage_send_v1, TQ001 unknown topic.
CREATE OR REPLACE FUNCTION txnq.send_at_commit_v1(
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
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic %L does not exist', p_topic),
            HINT = 'create it first: txnq topics create, or txnq.create_topic_v1';
    END IF;
    RETURN txnq.stage_send_v1(
        v_topic_id,
        coalesce(p_partition, txnq.partition_for_key_v1(p_key, v_partitions),
                 floor(random() * v_partitions)::integer),
        ARRAY[p_payload],
        CASE WHEN p_key IS NULL THEN NULL ELSE ARRAY[p_key] END,
        CASE WHEN p_properties IS NULL THEN NULL ELSE ARRAY[p_properties] END);
END;
$$;
