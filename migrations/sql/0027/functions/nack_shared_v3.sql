-- txnq.nack_shared_v3: negative acknowledgements on a shared or key_shared
-- subscription: the messages go back to waiting and become deliverable (to
-- any consumer) after their delay. Revision 0027; replaces nack_shared_v2
-- (same parameters, result, locks and errors): a claim range of the
-- consumer's (txnq.claim_ranges) that covers a named message unfolds into
-- claim rows first (txnq.unfold_claim_ranges_v1), so the nacked messages
-- are tracked one by one, as every redelivered message is. nack_shared_v2
-- (revision 0015) replaced nack_shared_v1, which
-- ignored the partition and the subscription's topic, took NULL arrays for
-- none and answered a NaN or infinite delay with an interval error or a
-- claim due never.
--
-- Parameters: (topic_id, partition), subscription_id, consumer_id (only the
--   consumer holding a claim can release it: a message redelivered to somebody
--   else meanwhile stays theirs; a consumer whose session is gone releases
--   nothing), offsets[i], batch_indexes[i] (message i: 0 .. batch size - 1),
--   delays[i] (seconds, 0 to 315,360,000: ten years; the client computes its
--   backoff from the message's redelivery count); at most 100,000 messages.
-- Returns how many claims were released.
-- Locks: the consumer's claim ranges that cover a named message, then the
--   claim rows. Claims pending in a transaction are left alone.
-- Errors (nothing is changed): TQ001 unknown topic or partition; TQ006
--   unknown subscription or one of another topic; TQ005 arrays NULL, of
--   different lengths or over 100,000, a NULL element, an offset below 0 or
--   above what the subscription can read, a batch index below 0 or past its
--   entry's messages, a delay NaN, infinite or out of range, a consumer of
--   another subscription, an exclusive or failover subscription;
--   authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.nack_shared_v3(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_delays double precision[]
) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
    v_target record;
    v_bad record;
    v_owner bigint;
    v_unfold bigint[];
BEGIN
    IF p_offsets IS NULL OR p_batch_indexes IS NULL OR p_delays IS NULL
       OR cardinality(p_offsets) <> cardinality(p_batch_indexes) OR cardinality(p_offsets) <> cardinality(p_delays)
       OR cardinality(p_offsets) > 100000 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('nack_shared_v2: offsets, batch_indexes and delays go together: one each per '
                             'message, at most 100000 (got %s, %s and %s)', coalesce(cardinality(p_offsets)::text, 'NULL'),
                             coalesce(cardinality(p_batch_indexes)::text, 'NULL'),
                             coalesce(cardinality(p_delays)::text, 'NULL')),
            HINT = 'pass one batch index and one delay (seconds) per offset';
    END IF;
    SELECT u.n, u.o, u.i, u.d INTO v_bad
      FROM unnest(p_offsets, p_batch_indexes, p_delays) WITH ORDINALITY AS u(o, i, d, n)
     WHERE u.o IS NULL OR u.o < 0 OR u.i IS NULL OR u.i < 0 OR u.d IS NULL OR u.d < 0 OR u.d > 315360000
        OR u.d = 'NaN'::double precision
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('nack_shared_v2: message %s (offset %s, batch index %s, delay %s) is not valid: an '
                             'offset and a batch index are 0 or more, a delay 0 to 315360000 seconds', v_bad.n,
                             coalesce(v_bad.o::text, 'NULL'), coalesce(v_bad.i::text, 'NULL'),
                             coalesce(v_bad.d::text, 'NULL')),
            HINT = 'negatively acknowledge the message ids that claim returned; nothing was changed';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    SELECT * INTO v_target FROM txnq.require_subscription_v1(p_topic_id, p_partition, p_subscription_id);
    IF v_target.subscription_type NOT IN ('shared', 'key_shared') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('nack_shared_v2 serves shared and key_shared subscriptions; this one is %s',
                             v_target.subscription_type),
            HINT = 'exclusive and failover consumers redeliver by fetching again (or seek_v2)';
    END IF;
    IF (SELECT max(o) FROM unnest(p_offsets) AS o) > v_target.readable_offset THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('nack_shared_v2: offset %s of partition %s was never delivered (the last readable '
                             'is %s)', (SELECT max(o) FROM unnest(p_offsets) AS o), p_partition,
                             v_target.readable_offset),
            HINT = 'negatively acknowledge the message ids that claim returned; nothing was changed';
    END IF;
    SELECT k.subscription_id INTO v_owner FROM txnq.consumers k WHERE k.consumer_id = p_consumer_id;
    IF p_consumer_id IS NULL OR (FOUND AND v_owner <> p_subscription_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('nack_shared_v2: consumer %s %s', coalesce(p_consumer_id::text, 'NULL'),
                             CASE WHEN p_consumer_id IS NULL THEN 'is no consumer'
                                  ELSE format('belongs to subscription id %s, not to subscription id %s',
                                              v_owner, p_subscription_id) END),
            HINT = 'pass the consumer id register_consumer returned for this subscription';
    END IF;
    SELECT coalesce(array_agg(x.f ORDER BY x.f), '{}') INTO v_unfold
      FROM (SELECT r.first_offset AS f FROM txnq.claim_ranges r
             WHERE r.topic_id = p_topic_id AND r.partition = p_partition AND r.subscription_id = p_subscription_id
               AND r.consumer_id = p_consumer_id
               AND EXISTS (SELECT 1 FROM unnest(p_offsets) AS o WHERE o BETWEEN r.first_offset AND r.last_offset)
             ORDER BY r.first_offset
               FOR UPDATE) AS x;
    IF cardinality(v_unfold) > 0 THEN
        PERFORM txnq.unfold_claim_ranges_v1(p_topic_id, p_partition, p_subscription_id, v_unfold);
    END IF;
    UPDATE txnq.claims c
       SET consumer_id = NULL, visible_at = clock_timestamp() + make_interval(secs => u.d), reason = 'nack'
      FROM unnest(p_offsets, p_batch_indexes, p_delays) AS u(o, i, d)
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = ANY (p_offsets) AND c.entry_offset = u.o AND c.batch_index = u.i
       AND c.consumer_id = p_consumer_id AND c.txn_tc IS NULL;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    IF v_count < cardinality(p_offsets) THEN
        -- Not held by this consumer: redelivered elsewhere, or acknowledged --
        -- or no message at all (an error: nothing is changed).
        PERFORM txnq.require_claimed_messages_v1(p_topic_id, p_partition, p_subscription_id,
                                                 p_offsets, p_batch_indexes);
    END IF;
    RETURN v_count;
END;
$$;
