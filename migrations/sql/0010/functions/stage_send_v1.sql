-- txnq.stage_send_v1: produce a batch of messages to one partition as part of
-- the caller's own PostgreSQL transaction (the transactional outbox). Nothing
-- is appended yet: the batch is staged under the caller's transaction id and
-- appended when that transaction commits (txnq.publish_staged_v1, run by a
-- deferred trigger inside COMMIT, or called explicitly just before it). A
-- rollback discards it: nothing is ever visible, no offset is taken.
--
-- Parameters: (topic_id, partition), payloads[i], keys[i], properties[i],
--   event_times[i] as for txnq.append_v3 (the last three may be NULL as a whole).
-- Returns the stage id: txnq.publish_staged_v1 reports the offset it got.
-- Checks now what the append would refuse (unknown topic or partition, sizes,
--   array lengths, a backlog quota that refuses producers), so the commit
--   rarely fails for it.
-- Locks: none (reads the topic and head rows; inserts one row of its own).
-- Errors: TQ001 unknown topic/partition, TQ004 message too large, TQ005
--   invalid argument, TQ016 topic over its backlog quota (either producer
--   policy: waiting inside the caller's transaction would hold it open).
CREATE OR REPLACE FUNCTION txnq.stage_send_v1(
    p_topic_id integer,
    p_partition integer,
    p_payloads bytea[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer := cardinality(p_payloads);
    v_max_message_bytes integer;
    v_largest integer;
    v_quota text;
    v_stage_id bigint;
BEGIN
    IF v_count IS NULL OR v_count = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'stage_send_v1: a batch needs at least one payload';
    END IF;
    IF (p_keys IS NOT NULL AND cardinality(p_keys) <> v_count)
       OR (p_properties IS NOT NULL AND cardinality(p_properties) <> v_count)
       OR (p_event_times IS NOT NULL AND cardinality(p_event_times) <> v_count) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'stage_send_v1: keys, properties and event_times must have one element per payload';
    END IF;
    SELECT t.max_message_bytes, q.policy INTO v_max_message_bytes, v_quota
      FROM txnq.topics t LEFT JOIN txnq.backlog_quota_exceeded q ON q.topic_id = t.topic_id
     WHERE t.topic_id = p_topic_id;
    IF NOT FOUND OR NOT EXISTS (SELECT 1 FROM txnq.partitions h
                                 WHERE h.topic_id = p_topic_id AND h.partition = p_partition) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('partition %s of topic id %s does not exist', p_partition, p_topic_id);
    END IF;
    SELECT max(octet_length(p)) INTO v_largest FROM unnest(p_payloads) AS p;
    IF v_largest IS NULL OR v_largest > v_max_message_bytes THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ004',
            MESSAGE = format('a payload of %s bytes is larger than the topic''s max message size of %s bytes',
                             coalesce(v_largest, 0), v_max_message_bytes),
            HINT = 'split the payload, or raise the topic''s max_message_bytes';
    END IF;
    IF v_quota IN ('producer_hold', 'producer_error') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ016',
            MESSAGE = format('topic id %s is over its backlog quota', p_topic_id),
            HINT = 'consume that subscription''s backlog or raise the topic''s backlog quota, then run '
                   'the transaction again';
    END IF;
    INSERT INTO txnq.staged_sends (topic_id, partition, payloads, keys, properties, event_times)
    VALUES (p_topic_id, p_partition, p_payloads, p_keys, p_properties, p_event_times)
    RETURNING stage_id INTO v_stage_id;
    RETURN v_stage_id;
END;
$$;
