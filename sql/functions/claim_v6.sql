-- txnq.claim_v6: the receive side of shared and key_shared subscriptions
-- (fetch_v4 stays the one of exclusive and failover): claim up to
-- p_max_messages messages for one consumer. Revision 0027: claim_v5's body,
-- but a shared subscription's new messages are handed out as one claim
-- range per partition (txnq.dispatch_shared_v2, txnq.claim_ranges) instead
-- of a claim row per message (issue 23: a row written and deleted per
-- message), and a range whose ack-timeout deadline passed unfolds into claim
-- rows first (txnq.unfold_claim_ranges_v1), which are then redelivered as
-- any claim whose deadline passed. claim_v1 to claim_v5 are thin wrappers
-- of it.
--
-- Revision 0021's claim_v5 replaced claim_v4 for how a key_shared claim locks
-- its messages. claim_v4 picked a key's
-- waiting messages with FOR UPDATE SKIP LOCKED, so an earlier message whose
-- claim row another transaction held at that moment (a heartbeat's sweep of
-- dead consumers keeps the lock of a row it rechecked and left alone until
-- its transaction ends) was passed over while later messages of its key went
-- out: one key delivered out of order (docs/subscriptions.md, Limits;
-- tests/integration/test_key_shared_order.py). claim_v5 chooses the messages
-- first, then locks each by its primary key (SKIP LOCKED, checked again as it
-- is), and stops each key at its first message it could not lock or that
-- changed (a window over the key: a set anti-join here was quadratic,
-- tests/sql_api/test_shared_plans.py); the key's later messages wait for the
-- next claim.
--
-- Revision 0015's claim_v3 replaced claim_v2 with the argument checks:
-- claim_v2 failed with raw PostgreSQL errors (22008) for a NaN, infinite or
-- huge ack timeout, took any max_messages, ignored a max_redeliver_count
-- without a dead-letter topic, found an unknown dead-letter topic only at the
-- first dead letter, and called a consumer of another subscription expired.
--
-- Revision 0013's claim_v2 replaced claim_v1
-- (same behaviour, locks and errors) because v1 updated the picked claims with
-- `UPDATE claims ... FROM picked`: with the statistics of an empty claims
-- table both sides looked like one row, and PostgreSQL scanned the
-- partition's claims outside and the picked rows inside (a key_shared claim
-- of 500 messages among 1000 waiting: 500,000 comparisons, ~140-250 ms).
-- Here the claims are picked and locked in one statement as before, then
-- marked in the next: each found by its primary key (a LATERAL subquery, so
-- no statistics can turn the join around) and updated by tuple id (locked,
-- they cannot change in between); the messages are then read from their
-- entries by txnq.claimed_messages_v2 (a hash join, where v1's join of the
-- entries with the claims was planned as a nested loop too).
--
-- Parameters: topic_id, subscription_id, consumer_id (a live session of the
--   subscription), max_messages (1 to 100,000), ack_timeout_seconds (NULL: no
--   ack timeout; else more than 0, at most 315,360,000: ten years;
--   a claim is held until acknowledged, negatively acknowledged, or the
--   consumer's lease runs out), max_redeliver_count and dead_letter_topic_id
--   (Pulsar's DeadLetterPolicy: a message delivered more than 1 +
--   max_redeliver_count times goes to that topic instead; both NULL: never).
-- Returns the claimed messages: partition, entry_offset, batch_index,
--   batch_size, publish_time, producer_id, sequence, payload, key, properties,
--   event_time, redelivery_count.
-- Shared: first the messages that are deliverable again (nacked, ack timeout
--   passed, released by a dead consumer or an aborted transaction, delayed and
--   now due; claim ranges past their deadline unfold into such claims first),
--   claimed with FOR UPDATE SKIP LOCKED so consumers never wait for
--   each other; then new messages: per partition (starting at one that depends
--   on the consumer, to spread consumers), the cursor row is taken with SKIP
--   LOCKED and its dispatch offset moved (txnq.dispatch_shared_v2: one claim
--   range per partition). Only when
--   every partition is busy and nothing was claimed does the call wait for one
--   cursor row, for the length of another consumer's claim statement.
-- Key_shared: the cursor rows are locked in partition order (a key_shared
--   dispatch is serial, as Pulsar's dispatcher is), new messages are written
--   as waiting claims with their key hash, and the consumer takes the waiting
--   messages whose key hashes to it on the ring of live consumers
--   (txnq.key_owner_v1) — except keys with a message held by another consumer
--   (or pending in a transaction): a key moves to a new consumer only when
--   nothing of it is unacknowledged elsewhere, so each key is delivered in order.
--   Held elsewhere and due are decided in one statement with one clock read
--   after its snapshot, so a message released just before (a consumer closed
--   or died) goes out before the later messages of its key. The messages are
--   chosen first and then locked, SKIP LOCKED: a key stops at its first
--   message another transaction holds locked (an ack, nack or release in
--   flight, or an UPDATE that rechecked the row and kept its lock), and its
--   later messages wait for the next claim. A nacked message
--   waits for its delay while later messages of its key go on (as in Pulsar).
-- Dead letters: done here, in this transaction (txnq.dead_letter_v3): the copy
--   is appended and the claim deleted together, so a crash neither loses nor
--   duplicates it.
-- Citus: unlike the per-partition functions, a claim spans the partitions of
--   one subscription (one round trip per receive batch matters more here).
-- Errors (nothing is changed): TQ001 unknown topic or dead-letter topic;
--   TQ006 unknown subscription or one of another topic; TQ005 not a
--   shared/key_shared subscription, an argument out of range, NULL or NaN,
--   max_redeliver_count without dead_letter_topic_id (or the reverse), a
--   consumer of another subscription; TQ009 the consumer session expired;
--   authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.claim_v6(
    p_topic_id integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_max_messages integer,
    p_ack_timeout_seconds double precision DEFAULT NULL,
    p_max_redeliver_count integer DEFAULT NULL,
    p_dead_letter_topic_id integer DEFAULT NULL
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
    v_sub record;
    v_now timestamptz;
    v_hold timestamptz;
    v_taken integer := 0;
    v_rows integer;
    v_owner bigint;
    v_partitions integer[];
    v_skipped integer[] := '{}';
    v_start integer;
    v_p integer;
    v_points integer[];
    v_owners bigint[];
    v_picked_p integer[];
    v_picked_o bigint[];
    v_picked_i integer[];
    v_sizes integer[];
    v_delivered integer[];
    v_dead_letters boolean := p_max_redeliver_count IS NOT NULL AND p_dead_letter_topic_id IS NOT NULL;
    r record;
BEGIN
    IF p_max_messages IS NULL OR p_max_messages < 1 OR p_max_messages > 100000 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('claim_v4: max_messages must be 1 to 100000, not %s', coalesce(p_max_messages::text, 'NULL')),
            HINT = 'pass how many messages the consumer has room for';
    END IF;
    -- Ten years at most: a claim's deadline stays a date Python and Spark can read.
    PERFORM txnq.require_number_v1('claim_v4: ack_timeout_seconds', p_ack_timeout_seconds, NULL, 315360000, true);
    IF p_ack_timeout_seconds <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('claim_v4: ack_timeout_seconds must be positive (or NULL: none), not %s',
                             p_ack_timeout_seconds),
            HINT = 'pass the seconds a claim is held before it is delivered again';
    END IF;
    IF p_max_redeliver_count < 0 OR (p_max_redeliver_count IS NULL) <> (p_dead_letter_topic_id IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('claim_v4: max_redeliver_count (%s) must be 0 or more and comes with a '
                             'dead_letter_topic_id (%s)', coalesce(p_max_redeliver_count::text, 'NULL'),
                             coalesce(p_dead_letter_topic_id::text, 'NULL')),
            HINT = 'pass both (a dead-letter policy) or neither';
    END IF;
    IF p_consumer_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'claim_v4: consumer_id must not be NULL',
            HINT = 'register the consumer first (txnq.register_consumer_v2) and pass its id';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    SELECT s.subscription_type, s.isolation INTO v_sub FROM txnq.subscriptions s
     WHERE s.subscription_id = p_subscription_id AND s.topic_id = p_topic_id;
    IF NOT FOUND THEN
        IF NOT EXISTS (SELECT 1 FROM txnq.topics t WHERE t.topic_id = p_topic_id) THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ001',
                MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
                HINT = 'look the topic up by name (txnq.topic_status) or create it first';
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s of topic id %s does not exist',
                             coalesce(p_subscription_id::text, 'NULL'), p_topic_id),
            HINT = 'it was unsubscribed or its topic deleted; subscribe again';
    END IF;
    IF v_sub.subscription_type NOT IN ('shared', 'key_shared') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('claim_v4 serves shared and key_shared subscriptions; this one is %s',
                             v_sub.subscription_type),
            HINT = 'exclusive and failover subscriptions read with txnq.fetch_v4';
    END IF;
    IF p_dead_letter_topic_id IS NOT NULL
       AND NOT EXISTS (SELECT 1 FROM txnq.topics t WHERE t.topic_id = p_dead_letter_topic_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('dead-letter topic id %s does not exist', p_dead_letter_topic_id),
            HINT = 'create the dead-letter topic first and pass its id';
    END IF;
    PERFORM 1 FROM txnq.consumers k
     WHERE k.consumer_id = p_consumer_id AND k.subscription_id = p_subscription_id
       AND k.lease_expires_at > clock_timestamp();
    IF NOT FOUND THEN
        SELECT k.subscription_id INTO v_owner FROM txnq.consumers k WHERE k.consumer_id = p_consumer_id;
        IF FOUND AND v_owner IS DISTINCT FROM p_subscription_id THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('consumer %s belongs to subscription id %s, not to subscription id %s',
                                 p_consumer_id, v_owner, p_subscription_id),
                HINT = 'pass the consumer id register_consumer returned for this subscription';
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'TQ009',
            MESSAGE = format('consumer session %s expired: it did not renew its lease in time', p_consumer_id),
            HINT = 'the consumer re-registers; its unacknowledged messages are redelivered';
    END IF;
    v_now := clock_timestamp();
    v_hold := CASE WHEN p_ack_timeout_seconds IS NULL THEN 'infinity'::timestamptz
                   ELSE v_now + make_interval(secs => p_ack_timeout_seconds) END;

    IF v_sub.subscription_type = 'key_shared' THEN
        -- Serial per subscription: lock every cursor row, in partition order.
        PERFORM 1 FROM txnq.cursors c
         WHERE c.topic_id = p_topic_id AND c.subscription_id = p_subscription_id
         ORDER BY c.partition FOR UPDATE;
        -- The clock after the wait: what other consumers released meanwhile
        -- (closing, a heartbeat releasing a dead consumer's claims) is due now.
        v_now := clock_timestamp();
        v_hold := CASE WHEN p_ack_timeout_seconds IS NULL THEN 'infinity'::timestamptz
                       ELSE v_now + make_interval(secs => p_ack_timeout_seconds) END;
    END IF;

    IF v_sub.subscription_type = 'shared' THEN
        -- Claim ranges past their ack-timeout deadline: a claim row per message
        -- they still cover, due now (redelivered below, or dead-lettered). One
        -- an acknowledgement holds locked is left for the next claim.
        FOR r IN
            SELECT g.partition AS p, g.first_offset AS f FROM txnq.claim_ranges g
             WHERE g.subscription_id = p_subscription_id AND g.visible_at <= v_now
             ORDER BY g.visible_at
             LIMIT 100
               FOR UPDATE SKIP LOCKED
        LOOP
            PERFORM txnq.unfold_claim_ranges_v1(p_topic_id, r.p, p_subscription_id, ARRAY[r.f]);
        END LOOP;
    END IF;

    IF v_dead_letters THEN
        FOR r IN
            SELECT c.partition AS p, c.entry_offset AS o, c.batch_index AS i, c.delivered AS delivered, c.reason AS why
              FROM txnq.claims c
             WHERE c.subscription_id = p_subscription_id AND c.visible_at <= v_now AND c.txn_tc IS NULL
               AND c.delivered > p_max_redeliver_count
             ORDER BY c.visible_at
             LIMIT 100
               FOR UPDATE SKIP LOCKED
        LOOP
            PERFORM txnq.dead_letter_v3(
                p_topic_id, r.p, p_subscription_id, r.o, r.i, p_dead_letter_topic_id,
                format('delivered %s times, more than max_redeliver_count %s allows (last: %s)',
                       r.delivered, p_max_redeliver_count, coalesce(r.why, 'ack_timeout')));
        END LOOP;
    END IF;

    IF v_sub.subscription_type = 'shared' THEN
        -- Deliverable again: nacked, ack timeout passed, released, delayed and due.
        -- Picked and locked in one statement, marked in the next (by tuple id:
        -- locked, the rows cannot change in between), then read from the
        -- entries (txnq.claimed_messages_v2).
        SELECT coalesce(array_agg(x.p), '{}'), coalesce(array_agg(x.o), '{}'), coalesce(array_agg(x.i), '{}')
          INTO v_picked_p, v_picked_o, v_picked_i
          FROM (SELECT c.partition AS p, c.entry_offset AS o, c.batch_index AS i
                  FROM txnq.claims c
                 WHERE c.subscription_id = p_subscription_id AND c.visible_at <= v_now AND c.txn_tc IS NULL
                   AND (NOT v_dead_letters OR c.delivered <= p_max_redeliver_count)
                 ORDER BY c.visible_at
                 LIMIT p_max_messages
                   FOR UPDATE SKIP LOCKED) AS x;
        WITH again AS (
            UPDATE txnq.claims c
               SET consumer_id = p_consumer_id, visible_at = v_hold, delivered = c.delivered + 1
             WHERE c.ctid = ANY (ARRAY(
                   SELECT x.t FROM unnest(v_picked_p, v_picked_o, v_picked_i) AS u(p, o, i)
                    CROSS JOIN LATERAL (
                          SELECT c2.ctid AS t FROM txnq.claims c2
                           WHERE c2.topic_id = p_topic_id AND c2.partition = u.p
                             AND c2.subscription_id = p_subscription_id
                             AND c2.entry_offset = u.o AND c2.batch_index = u.i
                          OFFSET 0) AS x))
            RETURNING c.partition AS p, c.entry_offset AS o, c.batch_index AS i, c.batch_size AS size,
                      c.delivered AS delivered
        )
        SELECT array_agg(a.p), array_agg(a.o), array_agg(a.i), array_agg(a.size), array_agg(a.delivered)
          INTO v_picked_p, v_picked_o, v_picked_i, v_sizes, v_delivered
          FROM again a;
        RETURN QUERY SELECT * FROM txnq.claimed_messages_v2(p_topic_id, v_picked_p, v_picked_o, v_picked_i,
                                                           v_sizes, v_delivered);
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        v_taken := v_rows;

        -- New messages, partition by partition, never waiting while another is free.
        SELECT array_agg(c.partition ORDER BY c.partition) INTO v_partitions FROM txnq.cursors c
         WHERE c.topic_id = p_topic_id AND c.subscription_id = p_subscription_id;
        IF v_partitions IS NULL THEN
            RETURN;
        END IF;
        v_start := (p_consumer_id % cardinality(v_partitions))::integer;
        FOR k IN 0 .. cardinality(v_partitions) - 1 LOOP
            EXIT WHEN v_taken >= p_max_messages;
            v_p := v_partitions[(v_start + k) % cardinality(v_partitions) + 1];
            PERFORM 1 FROM txnq.cursors c
             WHERE c.topic_id = p_topic_id AND c.partition = v_p AND c.subscription_id = p_subscription_id
               FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                v_skipped := v_skipped || v_p;
                CONTINUE;
            END IF;
            PERFORM txnq.shared_advance_v2(p_topic_id, v_p, p_subscription_id);
            RETURN QUERY SELECT * FROM txnq.dispatch_shared_v2(
                p_topic_id, v_p, p_subscription_id, p_consumer_id, p_max_messages - v_taken, v_hold,
                v_sub.isolation, true);
            GET DIAGNOSTICS v_rows = ROW_COUNT;
            v_taken := v_taken + v_rows;
        END LOOP;
        IF v_taken = 0 AND cardinality(v_skipped) > 0 THEN
            v_p := v_skipped[1];
            PERFORM 1 FROM txnq.cursors c
             WHERE c.topic_id = p_topic_id AND c.partition = v_p AND c.subscription_id = p_subscription_id
               FOR UPDATE;
            PERFORM txnq.shared_advance_v2(p_topic_id, v_p, p_subscription_id);
            RETURN QUERY SELECT * FROM txnq.dispatch_shared_v2(
                p_topic_id, v_p, p_subscription_id, p_consumer_id, p_max_messages, v_hold,
                v_sub.isolation, true);
        END IF;
        RETURN;
    END IF;

    -- Key_shared. The ring of live consumers: 16 points each.
    SELECT array_agg(x.pt ORDER BY x.pt, x.id), array_agg(x.id ORDER BY x.pt, x.id)
      INTO v_points, v_owners
      FROM (SELECT k.consumer_id AS id, txnq.key_hash_v1(convert_to(k.name || '#' || g.n, 'UTF8')) AS pt
              FROM txnq.consumers k CROSS JOIN generate_series(0, 15) AS g(n)
             WHERE k.subscription_id = p_subscription_id AND k.lease_expires_at > v_now) AS x;
    FOR v_p IN
        SELECT c.partition FROM txnq.cursors c
         WHERE c.topic_id = p_topic_id AND c.subscription_id = p_subscription_id ORDER BY c.partition
    LOOP
        EXIT WHEN v_taken >= p_max_messages;
        PERFORM txnq.shared_advance_v2(p_topic_id, v_p, p_subscription_id);
        -- Look ahead at most two claims' worth of waiting messages per partition.
        IF (SELECT count(*) FROM (SELECT 1 FROM txnq.claims c
                                   WHERE c.topic_id = p_topic_id AND c.partition = v_p
                                     AND c.subscription_id = p_subscription_id AND c.consumer_id IS NULL
                                   LIMIT 2 * p_max_messages) AS w) < 2 * p_max_messages THEN
            PERFORM 1 FROM txnq.dispatch_shared_v2(p_topic_id, v_p, p_subscription_id, p_consumer_id,
                                                   p_max_messages, v_hold, v_sub.isolation, false);
        END IF;
        -- Which keys are held elsewhere and which messages are due are read in
        -- one statement, against one clock read after its snapshot: a message
        -- released by a transaction that committed before the snapshot (close,
        -- a dead consumer's heartbeat release, an aborted transaction) has a
        -- visible_at before that clock, so it is taken before the later
        -- messages of its key, never after them. (A clock read before the
        -- statement -- before the cursor rows were even locked, as revision
        -- 0008 first did -- left such a message waiting while later messages
        -- of its key, written earlier by the lookahead, went out.)
        WITH tick AS MATERIALIZED (
            SELECT clock_timestamp() AS now
        ), held_elsewhere AS (
            -- Keys with a message held by another consumer (claimed and not
            -- acknowledged there) or pending in a transaction of someone else.
            SELECT DISTINCT c.key_hash AS h
              FROM txnq.claims c, tick
             WHERE c.topic_id = p_topic_id AND c.partition = v_p AND c.subscription_id = p_subscription_id
               AND ((c.consumer_id <> p_consumer_id AND c.visible_at > tick.now)
                    OR (c.txn_tc IS NOT NULL AND c.consumer_id IS DISTINCT FROM p_consumer_id))
        ), candidates AS MATERIALIZED (
            -- The due messages of this consumer's keys, in order, from the
            -- snapshot (not locked yet) ...
            SELECT c.entry_offset AS o, c.batch_index AS i, c.key_hash AS h
              FROM txnq.claims c, tick
             WHERE c.topic_id = p_topic_id AND c.partition = v_p AND c.subscription_id = p_subscription_id
               AND c.visible_at <= tick.now AND c.txn_tc IS NULL
               AND NOT EXISTS (SELECT 1 FROM held_elsewhere b WHERE b.h = c.key_hash)
               AND (NOT v_dead_letters OR c.delivered <= p_max_redeliver_count)
               AND txnq.key_owner_v1(c.key_hash, v_points, v_owners) = p_consumer_id
             ORDER BY c.entry_offset, c.batch_index
             LIMIT p_max_messages - v_taken
        ), locked AS MATERIALIZED (
            -- ... then each locked by its primary key, SKIP LOCKED: a row
            -- another transaction holds (an ack, a nack or a release in
            -- flight; an UPDATE that rechecked the row and kept its lock) is
            -- not got, nor one that changed since the snapshot and is no
            -- longer due ...
            SELECT d.o, d.i, d.h, x.got IS NOT NULL AS got
              FROM candidates d CROSS JOIN tick
              LEFT JOIN LATERAL (
                   SELECT true AS got FROM txnq.claims c
                    WHERE c.topic_id = p_topic_id AND c.partition = v_p
                      AND c.subscription_id = p_subscription_id
                      AND c.entry_offset = d.o AND c.batch_index = d.i
                      AND c.visible_at <= tick.now AND c.txn_tc IS NULL
                      FOR UPDATE SKIP LOCKED) AS x ON true
        ), picked AS (
            -- ... and a key stops at its first message not got: its later
            -- messages wait for the next claim instead of going out before it.
            SELECT y.o, y.i
              FROM (SELECT l.o, l.i, bool_and(l.got) OVER (PARTITION BY l.h ORDER BY l.o, l.i) AS in_order
                      FROM locked l) AS y
             WHERE y.in_order
        )
        SELECT coalesce(array_agg(p.o ORDER BY p.o, p.i), '{}'), coalesce(array_agg(p.i ORDER BY p.o, p.i), '{}')
          INTO v_picked_o, v_picked_i
          FROM picked p;
        -- Marked in the next statement, by tuple id (locked, the rows cannot
        -- change in between; this does not move the clock read above), then
        -- read from the entries (txnq.claimed_messages_v2).
        WITH again AS (
            UPDATE txnq.claims c
               SET consumer_id = p_consumer_id, visible_at = v_hold, delivered = c.delivered + 1
             WHERE c.ctid = ANY (ARRAY(
                   SELECT x.t
                     FROM unnest(array_fill(v_p, ARRAY[cardinality(v_picked_o)]), v_picked_o, v_picked_i)
                          AS u(p, o, i)
                    CROSS JOIN LATERAL (
                          SELECT c2.ctid AS t FROM txnq.claims c2
                           WHERE c2.topic_id = p_topic_id AND c2.partition = u.p
                             AND c2.subscription_id = p_subscription_id
                             AND c2.entry_offset = u.o AND c2.batch_index = u.i
                          OFFSET 0) AS x))
            RETURNING c.partition AS p, c.entry_offset AS o, c.batch_index AS i, c.batch_size AS size,
                      c.delivered AS delivered
        )
        SELECT array_agg(a.p), array_agg(a.o), array_agg(a.i), array_agg(a.size), array_agg(a.delivered)
          INTO v_picked_p, v_picked_o, v_picked_i, v_sizes, v_delivered
          FROM again a;
        RETURN QUERY SELECT * FROM txnq.claimed_messages_v2(p_topic_id, v_picked_p, v_picked_o, v_picked_i,
                                                           v_sizes, v_delivered);
        GET DIAGNOSTICS v_rows = ROW_COUNT;
        v_taken := v_taken + v_rows;
    END LOOP;
END;
$$;
