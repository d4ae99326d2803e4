-- txnq.dispatch_shared_v1: hand out the next messages of one partition to a
-- shared or key_shared subscription: move the dispatch offset forward over up
-- to p_room messages and write a claim row for each deliverable one.
--
-- Parameters: (topic_id, partition), subscription_id, consumer_id, room
--   (messages wanted; whole entries, so a batch may go over), hold_until (the
--   visible_at of a claim handed out now: the ack-timeout deadline or
--   'infinity'), hand_out: true (shared) gives the due messages to the consumer
--   and returns them; false (key_shared) writes every message as waiting (the
--   caller picks by key), and returns nothing.
-- Returns the messages handed out (same columns as txnq.claim_v1).
-- Locks: the caller holds the cursor row, so one dispatcher moves a
--   partition's dispatch offset at a time; nothing else is locked.
-- Invariants: read_committed sees nothing above the max read offset (invariant
--   2); markers and aborted transactions' entries get no claim (they are never
--   delivered); a message delayed past now is written waiting until its time
--   (delayed delivery, txnq.delayed_entries). Call txnq.shared_advance_v1 first.
CREATE OR REPLACE FUNCTION txnq.dispatch_shared_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_room integer,
    p_hold_until timestamptz,
    p_isolation text,
    p_hand_out boolean
) RETURNS TABLE (
    partition integer,
    entry_offset bigint,
    batch_index integer,
    batch_size integer,
    publish_time timestamptz,
    producer_id bigint,
    sequence bigint,
    payload bytea,
    key bytea,
    properties jsonb,
    event_time timestamptz,
    redelivery_count integer
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_dispatch bigint;
    v_limit bigint;
    v_upto bigint;
    v_count integer := 0;
    r record;
    v_now timestamptz := clock_timestamp();
BEGIN
    SELECT c.dispatch_offset INTO v_dispatch FROM txnq.cursors c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
    SELECT CASE WHEN p_isolation = 'read_uncommitted' THEN h.next_offset - 1 ELSE h.max_read_offset END
      INTO v_limit
      FROM txnq.partitions h WHERE h.topic_id = p_topic_id AND h.partition = p_partition;
    IF v_dispatch IS NULL OR v_limit IS NULL OR v_limit <= v_dispatch OR p_room < 1 THEN
        RETURN;
    END IF;
    -- The last entry to take: whole entries until p_room messages are reached
    -- (usually the first entry or few: a loop stops reading there).
    FOR r IN
        SELECT e.entry_offset, e.message_count FROM txnq.entries e
         WHERE e.topic_id = p_topic_id AND e.partition = p_partition
           AND e.entry_offset > v_dispatch AND e.entry_offset <= v_limit
         ORDER BY e.entry_offset
         LIMIT p_room
    LOOP
        v_upto := r.entry_offset;
        v_count := v_count + r.message_count;
        EXIT WHEN v_count >= p_room;
    END LOOP;
    IF v_upto IS NULL THEN
        RETURN;
    END IF;
    UPDATE txnq.cursors c SET dispatch_offset = v_upto
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id;
    RETURN QUERY
    WITH messages AS (
        -- unnest, not payloads[i]: subscripting detoasts the whole array per message.
        SELECT e.entry_offset AS o, (u.n - 1)::integer AS i, e.message_count AS size,
               e.publish_time AS published, e.producer_id AS pid, e.first_sequence + u.n - 1 AS seq,
               u.value, u.k, u.props, u.at,
               p_hand_out AND (d.deliver_at IS NULL OR d.deliver_at <= v_now) AS mine,
               d.deliver_at
          FROM txnq.entries e
          CROSS JOIN LATERAL unnest(e.payloads, e.keys, e.properties, e.event_times)
                             WITH ORDINALITY AS u(value, k, props, at, n)
          LEFT JOIN txnq.delayed_entries d
            ON d.topic_id = e.topic_id AND d.partition = e.partition AND d.entry_offset = e.entry_offset
         WHERE e.topic_id = p_topic_id AND e.partition = p_partition
           AND e.entry_offset > v_dispatch AND e.entry_offset <= v_upto
           AND e.marker IS NULL
           AND (e.txn_tc IS NULL OR NOT EXISTS (
                    SELECT 1 FROM txnq.aborted_txns x
                     WHERE x.topic_id = p_topic_id AND x.partition = p_partition
                       AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq))
    ), claimed AS (
        INSERT INTO txnq.claims AS c (topic_id, partition, subscription_id, entry_offset, batch_index,
                                      batch_size, key_hash, consumer_id, visible_at, delivered)
        SELECT p_topic_id, p_partition, p_subscription_id, m.o, m.i, m.size,
               CASE WHEN p_hand_out THEN NULL ELSE txnq.key_hash_v1(m.k) END,
               CASE WHEN m.mine THEN p_consumer_id END,
               CASE WHEN m.mine THEN p_hold_until ELSE greatest(coalesce(m.deliver_at, v_now), v_now) END,
               CASE WHEN m.mine THEN 1 ELSE 0 END
          FROM messages m
        ON CONFLICT ON CONSTRAINT claims_pkey DO NOTHING  -- a transaction's claim kept through a seek
        RETURNING c.entry_offset AS o, c.batch_index AS i, c.consumer_id AS holder
    )
    SELECT p_partition, m.o, m.i, m.size, m.published, m.pid, m.seq, m.value, m.k, m.props, m.at, 0
      FROM claimed cl JOIN messages m ON m.o = cl.o AND m.i = cl.i
     WHERE cl.holder IS NOT NULL
     ORDER BY m.o, m.i;
END;
$$;
