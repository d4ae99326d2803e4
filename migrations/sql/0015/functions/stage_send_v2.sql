-- txnq.stage_send_v2: produce a batch of messages to one partition as part of
-- the caller's own PostgreSQL transaction (the transactional outbox). Nothing
-- is appended yet: the batch is staged under the caller's transaction id and
-- appended when that transaction commits (txnq.publish_staged_v2, run by a
-- deferred trigger inside COMMIT, or called explicitly just before it). A
-- rollback discards it: nothing is ever visible, no offset is taken. v2
-- (revision 0015) checks every argument as txnq.append_v4 does, and the
-- caller's permission to produce; stage_send_v1 becomes a wrapper of it.
--
-- Parameters: (topic_id, partition), payloads[i], keys[i], properties[i],
--   event_times[i] as for txnq.append_v4 (payloads a one-dimensional array
--   of non-NULL payloads; the other three NULL as a whole or one element per
--   payload; properties JSON objects of strings; event times 0001..9999 UTC).
-- Returns the stage id: txnq.publish_staged_v2 reports the offset it got.
-- Checks now what the append would refuse (unknown topic or partition, sizes,
--   array shapes, properties, event times, a backlog quota that refuses
--   producers, permission), so the commit rarely fails for it.
-- Permissions: txnq.authorize_v1(topic_id, 'produce') before anything is read
--   (append_v4 checks again when the commit publishes).
-- Locks: none (reads the topic row; inserts one row of its own).
-- Errors: TQ001 unknown (or NULL) topic/partition, TQ004 message too large,
--   TQ005 invalid argument, TQ016 topic over its backlog quota (either
--   producer policy: waiting inside the caller's transaction would hold it
--   open), TQ018 not permitted.
CREATE OR REPLACE FUNCTION txnq.stage_send_v2(
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
    v_partitions integer;
    v_max_message_bytes integer;
    v_largest integer;
    v_non_null bigint;
    v_quota text;
    v_stage_id bigint;
BEGIN
    IF p_topic_id IS NULL OR p_partition IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('stage_send_v2: topic_id (%s) and partition (%s) must not be NULL',
                             coalesce(p_topic_id::text, 'NULL'), coalesce(p_partition::text, 'NULL')),
            HINT = 'look the topic up by name (txnq.topics) and pass one of its partitions';
    END IF;
    IF v_count IS NULL OR v_count = 0 OR array_ndims(p_payloads) <> 1 OR array_lower(p_payloads, 1) <> 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('stage_send_v2: payloads must be a one-dimensional array of at least one payload, '
                             'indexed from 1 (got %s)', coalesce(array_dims(p_payloads), 'NULL or empty')),
            HINT = 'pass ARRAY[payload, ...]::bytea[]; nothing was staged';
    END IF;
    IF (p_keys IS NOT NULL AND (array_ndims(p_keys) IS DISTINCT FROM 1 OR array_lower(p_keys, 1) <> 1
                                OR cardinality(p_keys) <> v_count))
       OR (p_properties IS NOT NULL AND (array_ndims(p_properties) IS DISTINCT FROM 1
                                         OR array_lower(p_properties, 1) <> 1
                                         OR cardinality(p_properties) <> v_count))
       OR (p_event_times IS NOT NULL AND (array_ndims(p_event_times) IS DISTINCT FROM 1
                                          OR array_lower(p_event_times, 1) <> 1
                                          OR cardinality(p_event_times) <> v_count)) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('stage_send_v2: keys (%s), properties (%s) and event_times (%s) must each be NULL '
                             'or a one-dimensional array with one element per payload (%s)',
                             coalesce(array_dims(p_keys), 'NULL or empty'),
                             coalesce(array_dims(p_properties), 'NULL or empty'),
                             coalesce(array_dims(p_event_times), 'NULL or empty'), array_dims(p_payloads)),
            HINT = 'a message without a key, properties or event time has a NULL element; nothing was staged';
    END IF;
    IF p_properties IS NOT NULL THEN
        PERFORM txnq.require_properties_v1(p_properties);
    END IF;
    IF p_event_times IS NOT NULL THEN
        PERFORM txnq.require_timestamps_v1('event time', p_event_times);
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'produce');

    SELECT t.partitions, t.max_message_bytes, q.policy INTO v_partitions, v_max_message_bytes, v_quota
      FROM txnq.topics t LEFT JOIN txnq.backlog_quota_exceeded q ON q.topic_id = t.topic_id
     WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic id %s does not exist', p_topic_id),
            HINT = 'look the topic up by name (txnq.topics) or create it first; nothing was staged';
    END IF;
    IF p_partition < 0 OR p_partition >= v_partitions THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s has partitions 0 to %s, not %s', p_topic_id, v_partitions - 1,
                             p_partition),
            HINT = 'pass a partition of the topic (txnq.partition_for_key_v2 routes a key); nothing was staged';
    END IF;
    SELECT max(octet_length(p)), count(p) INTO v_largest, v_non_null FROM unnest(p_payloads) AS p;
    IF v_non_null < v_count THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('stage_send_v2: payload %s of %s is NULL', array_position(p_payloads, NULL), v_count),
            HINT = 'every message needs a payload (an empty one is ''''::bytea); nothing was staged';
    END IF;
    IF v_largest > v_max_message_bytes THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ004',
            MESSAGE = format('a payload of %s bytes is larger than the topic''s max message size of %s bytes',
                             v_largest, v_max_message_bytes),
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
