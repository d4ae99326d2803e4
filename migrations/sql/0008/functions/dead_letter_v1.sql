-- txnq.dead_letter_v1: move one outstanding message of a shared/key_shared
-- subscription to its dead-letter topic (Pulsar's DeadLetterPolicy).
--
-- Parameters: (topic_id, partition), subscription_id, (entry_offset,
--   batch_index) of the message, dead_letter_topic_id, reason (text).
-- Returns true when moved, false when the claim is gone (acknowledged or moved
--   by somebody else meanwhile).
-- Does, in the caller's transaction: appends a copy (payload, key, event time,
--   the original properties plus REAL_TOPIC, REAL_SUBSCRIPTION,
--   ORIGIN_MESSAGE_ID "topic:partition:offset:batch_index", REDELIVERY_COUNT
--   and DEAD_LETTER_REASON) to the dead-letter topic (partition: the
--   original's modulo its partitions) with txnq.append_v3, and deletes the
--   claim, which acknowledges the message on the original subscription. Both
--   commit together: never lost, never twice.
-- Locks: the claim row, then the dead-letter partition's head row (append_v3).
-- Errors: TQ001 unknown dead-letter topic, and append_v3's (e.g. its backlog quota).
CREATE OR REPLACE FUNCTION txnq.dead_letter_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_entry_offset bigint,
    p_batch_index integer,
    p_dead_letter_topic_id integer,
    p_reason text
) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_claim txnq.claims%ROWTYPE;
    v_entry record;
    v_target_partitions integer;
    v_properties jsonb;
BEGIN
    SELECT * INTO v_claim FROM txnq.claims c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = p_entry_offset AND c.batch_index = p_batch_index AND c.txn_tc IS NULL
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    SELECT t.partitions INTO v_target_partitions FROM txnq.topics t WHERE t.topic_id = p_dead_letter_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('dead-letter topic id %s does not exist', p_dead_letter_topic_id),
            HINT = 'create the dead-letter topic, or subscribe again so the client creates it';
    END IF;
    SELECT e.payloads[p_batch_index + 1] AS payload, e.keys[p_batch_index + 1] AS k,
           e.properties[p_batch_index + 1] AS props, e.event_times[p_batch_index + 1] AS at
      INTO v_entry
      FROM txnq.entries e
     WHERE e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset = p_entry_offset;
    IF FOUND THEN
        v_properties := coalesce(v_entry.props, '{}'::jsonb) || jsonb_build_object(
            'REAL_TOPIC', (SELECT t.name FROM txnq.topics t WHERE t.topic_id = p_topic_id),
            'REAL_SUBSCRIPTION', (SELECT s.name FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id),
            'ORIGIN_MESSAGE_ID', format('%s:%s:%s:%s', (SELECT t.name FROM txnq.topics t WHERE t.topic_id = p_topic_id),
                                        p_partition, p_entry_offset, p_batch_index),
            'REDELIVERY_COUNT', greatest(v_claim.delivered - 1, 0)::text,
            'DEAD_LETTER_REASON', p_reason);
        PERFORM txnq.append_v3(p_dead_letter_topic_id, p_partition % v_target_partitions, NULL, NULL, NULL,
                               ARRAY[v_entry.payload],
                               CASE WHEN v_entry.k IS NULL THEN NULL ELSE ARRAY[v_entry.k] END,
                               ARRAY[v_properties],
                               CASE WHEN v_entry.at IS NULL THEN NULL ELSE ARRAY[v_entry.at] END,
                               NULL, NULL);
    END IF;  -- else retention deleted the entry: nothing left to move
    DELETE FROM txnq.claims c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = p_entry_offset AND c.batch_index = p_batch_index;
    RETURN true;
END;
$$;
