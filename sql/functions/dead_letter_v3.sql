-- txnq.dead_letter_v3: move one outstanding message of a shared/key_shared
-- subscription to its dead-letter topic (Pulsar's DeadLetterPolicy).
-- Revision 0027; replaces dead_letter_v2 (same parameters, result, locks and
-- errors): a message a claim range covers (txnq.claim_ranges: a first
-- delivery the client could not decode) unfolds the range into claim rows
-- first (txnq.unfold_claim_ranges_v1). dead_letter_v2 (revision 0015)
-- validates its arguments (v1 answered "claim gone" for a
-- subscription of another topic or a NULL id, and wrote a JSON null property
-- for a NULL reason), checks the caller's permission to consume the topic
-- (append_v4 checks the one to produce to the dead-letter topic), and copies
-- properties written before revision 0015 that are not an object of strings
-- as strings.
--
-- Parameters: (topic_id, partition), subscription_id (a subscription of the
--   topic), (entry_offset, batch_index) of the message (0 or more),
--   dead_letter_topic_id (an existing topic), reason (text, not NULL).
-- Returns true when moved, false when the claim is gone (acknowledged or moved
--   by somebody else meanwhile).
-- Does, in the caller's transaction: appends a copy (payload, key, event time,
--   the original properties plus REAL_TOPIC, REAL_SUBSCRIPTION,
--   ORIGIN_MESSAGE_ID "topic:partition:offset:batch_index", REDELIVERY_COUNT
--   and DEAD_LETTER_REASON) to the dead-letter topic (partition: the
--   original's modulo its partitions) with txnq.append_v4, and deletes the
--   claim, which acknowledges the message on the original subscription. Both
--   commit together: never lost, never twice.
-- Permissions: txnq.authorize_v1(topic_id, 'consume') before anything is read;
--   append_v4 checks txnq.authorize_v1(dead_letter_topic_id, 'produce').
-- Locks: the claim range covering it (unfolded), the claim row, then the
--   dead-letter partition's head row (append_v4).
-- Errors: TQ001 unknown (or NULL) topic, partition or dead-letter topic, TQ005
--   NULL or negative offset, batch index or reason, TQ006 unknown subscription
--   or one of another topic, TQ018 not permitted, and append_v4's (e.g. its
--   backlog quota).
CREATE OR REPLACE FUNCTION txnq.dead_letter_v3(
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
    v_topic_name text;
    v_subscription_name text;
    v_properties jsonb;
    v_range bigint;
BEGIN
    IF p_topic_id IS NULL OR p_partition IS NULL OR p_dead_letter_topic_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('dead_letter_v2: topic_id (%s), partition (%s) and dead_letter_topic_id (%s) '
                             'must not be NULL', coalesce(p_topic_id::text, 'NULL'),
                             coalesce(p_partition::text, 'NULL'), coalesce(p_dead_letter_topic_id::text, 'NULL')),
            HINT = 'look the topics up by name (txnq.topics); nothing was moved';
    END IF;
    IF p_entry_offset IS NULL OR p_entry_offset < 0 OR p_batch_index IS NULL OR p_batch_index < 0
       OR p_reason IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('dead_letter_v2: entry_offset (%s) and batch_index (%s) must be 0 or more and '
                             'reason (%s) not NULL', coalesce(p_entry_offset::text, 'NULL'),
                             coalesce(p_batch_index::text, 'NULL'),
                             coalesce(quote_literal(left(p_reason, 100)), 'NULL')),
            HINT = 'name a message the subscription holds (its message id) and say why it is moved; '
                   'nothing was moved';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    SELECT t.name INTO v_topic_name FROM txnq.topics t WHERE t.topic_id = p_topic_id;
    SELECT s.name INTO v_subscription_name FROM txnq.subscriptions s
     WHERE s.subscription_id = p_subscription_id AND s.topic_id = p_topic_id;
    IF NOT FOUND THEN
        IF v_topic_name IS NULL THEN
            PERFORM txnq.require_partition_v1(p_topic_id, p_partition);  -- raises TQ001
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s is not a subscription of topic id %s',
                             coalesce(p_subscription_id::text, 'NULL'), p_topic_id),
            HINT = 'look the subscription up by topic and name (txnq.subscriptions); nothing was moved';
    END IF;
    PERFORM txnq.require_partition_v1(p_topic_id, p_partition);
    SELECT t.partitions INTO v_target_partitions FROM txnq.topics t WHERE t.topic_id = p_dead_letter_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('dead-letter topic id %s does not exist', p_dead_letter_topic_id),
            HINT = 'create the dead-letter topic, or subscribe again so the client creates it';
    END IF;

    SELECT r.first_offset INTO v_range FROM txnq.claim_ranges r
     WHERE r.topic_id = p_topic_id AND r.partition = p_partition AND r.subscription_id = p_subscription_id
       AND r.first_offset <= p_entry_offset AND r.last_offset >= p_entry_offset
       FOR UPDATE;
    IF FOUND THEN
        PERFORM txnq.unfold_claim_ranges_v1(p_topic_id, p_partition, p_subscription_id, ARRAY[v_range]);
    END IF;
    SELECT * INTO v_claim FROM txnq.claims c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = p_entry_offset AND c.batch_index = p_batch_index AND c.txn_tc IS NULL
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    SELECT e.payloads[p_batch_index + 1] AS payload, e.keys[p_batch_index + 1] AS k,
           e.properties[p_batch_index + 1] AS props, e.event_times[p_batch_index + 1] AS at
      INTO v_entry
      FROM txnq.entries e
     WHERE e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset = p_entry_offset;
    IF FOUND THEN
        v_properties := v_entry.props;
        IF jsonb_typeof(v_properties) IS DISTINCT FROM 'object' THEN
            -- Written before revision 0015 checked properties: kept as one string.
            v_properties := CASE WHEN v_properties IS NULL OR v_properties = 'null'::jsonb THEN '{}'::jsonb
                                 ELSE jsonb_build_object('ORIGINAL_PROPERTIES', v_properties::text) END;
        ELSIF EXISTS (SELECT 1 FROM jsonb_each(v_properties) p WHERE jsonb_typeof(p.value) <> 'string') THEN
            SELECT jsonb_object_agg(p.key, CASE WHEN jsonb_typeof(p.value) = 'string' THEN p.value
                                                ELSE to_jsonb(p.value::text) END)
              INTO v_properties FROM jsonb_each(v_properties) p;
        END IF;
        v_properties := v_properties || jsonb_build_object(
            'REAL_TOPIC', v_topic_name,
            'REAL_SUBSCRIPTION', v_subscription_name,
            'ORIGIN_MESSAGE_ID', format('%s:%s:%s:%s', v_topic_name, p_partition, p_entry_offset, p_batch_index),
            'REDELIVERY_COUNT', greatest(v_claim.delivered - 1, 0)::text,
            'DEAD_LETTER_REASON', p_reason);
        PERFORM txnq.append_v4(p_dead_letter_topic_id, p_partition % v_target_partitions, NULL, NULL, NULL,
                               ARRAY[coalesce(v_entry.payload, ''::bytea)],
                               CASE WHEN v_entry.k IS NULL THEN NULL ELSE ARRAY[v_entry.k] END,
                               ARRAY[v_properties],
                               -- (an event time stored before revision 0015 that no
                               -- consumer can read is not copied)
                               CASE WHEN v_entry.at BETWEEN '0001-01-01 00:00:00+00'::timestamptz
                                                        AND '9999-12-31 23:59:59.999999+00'::timestamptz
                                    THEN ARRAY[v_entry.at] END,
                               NULL, NULL);
    END IF;  -- else retention deleted the entry: nothing left to move
    DELETE FROM txnq.claims c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = p_entry_offset AND c.batch_index = p_batch_index;
    RETURN true;
END;
$$;
