-- txnq.nack_shared_v1: negative acknowledgements on a shared or key_shared
-- subscription: the messages go back to waiting and become deliverable (to
-- any consumer) after their delay.
--
-- Parameters: (topic_id, partition), subscription_id, consumer_id (only the
--   consumer holding a claim can release it: a message redelivered to somebody
--   else meanwhile stays theirs), offsets[i], batch_indexes[i] (message i),
--   delays[i] (seconds; the client computes its backoff from the message's
--   redelivery count).
-- Returns how many claims were released.
-- Locks: the claim rows. Claims pending in a transaction are left alone.
CREATE OR REPLACE FUNCTION txnq.nack_shared_v1(
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
BEGIN
    IF cardinality(p_offsets) <> cardinality(p_batch_indexes) OR cardinality(p_offsets) <> cardinality(p_delays)
       OR EXISTS (SELECT 1 FROM unnest(p_delays) AS d WHERE d IS NULL OR d < 0) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'nack_shared_v1: offsets, batch_indexes and delays (each at least 0) go together';
    END IF;
    UPDATE txnq.claims c
       SET consumer_id = NULL, visible_at = clock_timestamp() + make_interval(secs => u.d), reason = 'nack'
      FROM unnest(p_offsets, p_batch_indexes, p_delays) AS u(o, i, d)
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = ANY (p_offsets) AND c.entry_offset = u.o AND c.batch_index = u.i
       AND c.consumer_id = p_consumer_id AND c.txn_tc IS NULL;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$$;
