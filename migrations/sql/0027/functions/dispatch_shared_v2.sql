-- txnq.dispatch_shared_v2: hand out the next messages of one partition to a
-- shared or key_shared subscription: move the dispatch offset forward over up
-- to p_room messages. Revision 0027; replaces dispatch_shared_v1 (same
-- parameters and result), which wrote a claim row per message handed out to
-- a shared consumer, deleted again by its ack: a row written and deleted per
-- message (issue 23). Here a shared consumer's messages become ONE claim
-- range (txnq.claim_ranges: the entries read, the messages of each, the
-- holder and deadline; schema/0027_claim_ranges.sql). Key_shared
-- subscriptions still get a claim row per message, as before (their key
-- order is decided message by message; docs/subscriptions.md).
--
-- Parameters: (topic_id, partition), subscription_id, consumer_id, room
--   (messages wanted; whole entries, so a batch may go over), hold_until (the
--   deadline of what is handed out now: the ack-timeout deadline or
--   'infinity'), isolation, hand_out: true (shared) gives the due messages to
--   the consumer, as one claim range, and returns them; false (key_shared)
--   writes every message as a waiting claim (the caller picks by key), and
--   returns nothing.
-- Returns the messages handed out (same columns as txnq.claim_v1).
-- Locks: the caller holds the cursor row, so one dispatcher moves a
--   partition's dispatch offset at a time; nothing else is locked.
-- Invariants: read_committed sees nothing above the max read offset (invariant
--   2); markers and aborted transactions' entries are never delivered (no
--   claim, no message in a range); a message delayed past now is written as a
--   waiting claim until its time (delayed delivery, txnq.delayed_entries); a
--   message a transaction still holds a claim on (kept through a seek) is
--   neither handed out nor covered by the range. Call txnq.shared_advance_v2
--   first.
CREATE OR REPLACE FUNCTION txnq.dispatch_shared_v2(
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
    v_batch_sizes integer[];
    v_message_count integer;
    v_held_o bigint[];
    v_held_i integer[];
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
    IF NOT p_hand_out THEN
        RETURN QUERY
        WITH messages AS (
            SELECT e.entry_offset AS o, (u.n - 1)::integer AS i, e.message_count AS size, u.k,
                   greatest(coalesce(d.deliver_at, v_now), v_now) AS due
              FROM txnq.entries e
              -- (with the payloads: keys alone may be NULL, and unnest(NULL) is no row)
              CROSS JOIN LATERAL unnest(e.payloads, e.keys) WITH ORDINALITY AS u(value, k, n)
              LEFT JOIN txnq.delayed_entries d
                ON d.topic_id = e.topic_id AND d.partition = e.partition AND d.entry_offset = e.entry_offset
             WHERE e.topic_id = p_topic_id AND e.partition = p_partition
               AND e.entry_offset > v_dispatch AND e.entry_offset <= v_upto
               AND e.marker IS NULL
               AND (e.txn_tc IS NULL OR NOT EXISTS (
                        SELECT 1 FROM txnq.aborted_txns x
                         WHERE x.topic_id = p_topic_id AND x.partition = p_partition
                           AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq))
        ), waiting AS (
            INSERT INTO txnq.claims AS c (topic_id, partition, subscription_id, entry_offset, batch_index,
                                          batch_size, key_hash, consumer_id, visible_at, delivered)
            SELECT p_topic_id, p_partition, p_subscription_id, m.o, m.i, m.size, txnq.key_hash_v1(m.k),
                   NULL, m.due, 0
              FROM messages m
            ON CONFLICT ON CONSTRAINT claims_pkey DO NOTHING  -- a transaction's claim kept through a seek
            RETURNING 1
        )
        SELECT p_partition, NULL::bigint, NULL::integer, NULL::integer, NULL::timestamptz, NULL::bigint,
               NULL::bigint, NULL::bytea, NULL::bytea, NULL::jsonb, NULL::timestamptz, NULL::integer
         WHERE false;
        RETURN;
    END IF;

    -- Shared: the messages of each entry of the span handed out now (0: a
    -- marker, an aborted transaction's entry, a delayed entry not due yet).
    SELECT coalesce(array_agg(coalesce(x.n, 0) ORDER BY g.o), '{}'), coalesce(sum(x.n), 0)
      INTO v_batch_sizes, v_message_count
      FROM generate_series(v_dispatch + 1, v_upto) AS g(o)
      LEFT JOIN (
           SELECT e.entry_offset AS o, e.message_count AS n
             FROM txnq.entries e
             LEFT JOIN txnq.delayed_entries d
               ON d.topic_id = e.topic_id AND d.partition = e.partition AND d.entry_offset = e.entry_offset
            WHERE e.topic_id = p_topic_id AND e.partition = p_partition
              AND e.entry_offset > v_dispatch AND e.entry_offset <= v_upto
              AND e.marker IS NULL
              AND (e.txn_tc IS NULL OR NOT EXISTS (
                       SELECT 1 FROM txnq.aborted_txns x
                        WHERE x.topic_id = p_topic_id AND x.partition = p_partition
                          AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq))
              AND (d.deliver_at IS NULL OR d.deliver_at <= v_now)) AS x ON x.o = g.o;
    -- Messages with a claim row of their own already (a transaction's, kept
    -- through a seek): not handed out again, not covered by the range.
    SELECT coalesce(array_agg(c.entry_offset), '{}'), coalesce(array_agg(c.batch_index), '{}')
      INTO v_held_o, v_held_i
      FROM txnq.claims c
     WHERE c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset > v_dispatch AND c.entry_offset <= v_upto
       AND c.batch_index < v_batch_sizes[c.entry_offset - v_dispatch];
    IF v_message_count > cardinality(v_held_o) THEN
        INSERT INTO txnq.claim_ranges (topic_id, partition, subscription_id, first_offset, last_offset,
                                       consumer_id, visible_at, batch_sizes, message_count, acked_count,
                                       acked_offsets, acked_indexes)
        VALUES (p_topic_id, p_partition, p_subscription_id, v_dispatch + 1, v_upto, p_consumer_id,
                p_hold_until, v_batch_sizes, v_message_count, cardinality(v_held_o), v_held_o, v_held_i);
    END IF;
    RETURN QUERY
    WITH messages AS (
        -- unnest, not payloads[i]: subscripting detoasts the whole array per message.
        SELECT e.entry_offset AS o, (u.n - 1)::integer AS i, e.message_count AS size,
               e.publish_time AS published, e.producer_id AS pid, e.first_sequence + u.n - 1 AS seq,
               u.value, u.k, u.props, u.at,
               d.deliver_at IS NULL OR d.deliver_at <= v_now AS mine,
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
    ), waiting AS (
        -- Delayed and not due: a waiting claim until its time.
        INSERT INTO txnq.claims AS c (topic_id, partition, subscription_id, entry_offset, batch_index,
                                      batch_size, consumer_id, visible_at, delivered)
        SELECT p_topic_id, p_partition, p_subscription_id, m.o, m.i, m.size, NULL, m.deliver_at, 0
          FROM messages m
         WHERE NOT m.mine
        ON CONFLICT ON CONSTRAINT claims_pkey DO NOTHING  -- a transaction's claim kept through a seek
        RETURNING 1
    )
    SELECT p_partition, m.o, m.i, m.size, m.published, m.pid, m.seq, m.value, m.k, m.props, m.at, 0
      FROM messages m
     WHERE m.mine
       AND (cardinality(v_held_o) = 0
            OR NOT EXISTS (SELECT 1 FROM unnest(v_held_o, v_held_i) AS h(o, i) WHERE h.o = m.o AND h.i = m.i))
     ORDER BY m.o, m.i;
END;
$$;
