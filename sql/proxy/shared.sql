-- Shared and key_shared subscriptions through a txnq cluster proxy
-- (docs/cluster.md, issue 19 item 2): the claim, the shared acks and nacks,
-- the release of claims, the wait for the next visible claim, and delayed
-- appends, with the names, signatures and results of the shard functions the
-- Python client calls (sql/queries/subscriptions.sql). Installed by `txnq
-- cluster init` after routed_ids.sql, before routing.sql.
--
-- Every shard holds every subscription's cursors, claims and claim ranges for
-- the partitions it owns (the cursor rows of the others stay at offset 0 on
-- their empty head rows, so a shard's claim_v6 never hands out a message of a
-- partition it does not own), and every consumer with the same id and name,
-- its lease renewed on every shard (heartbeat_consumer_v2, routed.sql). So:
--   * a claim is the shards' claims in turn (rule 'spread'), starting at a
--     shard that depends on the consumer and moves on at every call, so
--     consumers spread over the shards and one consumer drains them all;
--   * a key_shared claim keeps its guarantees: a key's messages are in one
--     partition, so on one shard, whose claim_v6 keeps them in order and gives
--     the key to the consumer the ring of live consumers names; the ring is
--     built from the consumers every shard holds alike (same ids, same names);
--   * acks, nacks and delayed appends name their partition: rule 'partition';
--   * releasing claims and the next visible claim: every shard (rule 'all'),
--     counts added up / the earliest.
-- Dead letters: a shard's claim_v6 moves a message past max_redeliver_count
-- to partition (p % n) of the dead-letter topic on that same shard, which may
-- not own it. So the proxy does not pass the dead-letter policy to the
-- shards: it claims without it and moves each claimed message past the policy
-- itself (txnq_cluster.move_dead_letter): the copy appended on the shard that
-- owns the dead-letter partition first, then the original acknowledged on its
-- own shard. A proxy call that fails in between leaves the claim held by the
-- consumer: it comes back after the ack timeout or the consumer's lease and
-- is moved again; the move then finds the copy already there (by its
-- ORIGIN_MESSAGE_ID and REAL_SUBSCRIPTION) and only acknowledges it, so the
-- dead-letter topic holds each message once.

-- ---------------------------------------------------------------- partition

CREATE OR REPLACE FUNCTION txnq.ack_shared_v5(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_offsets bigint[],
    p_batch_indexes integer[], p_txn_tc integer DEFAULT NULL, p_txn_seq bigint DEFAULT NULL)
RETURNS integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
$$;

CREATE OR REPLACE FUNCTION txnq.nack_shared_v3(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_consumer_id bigint,
    p_offsets bigint[], p_batch_indexes integer[], p_delays double precision[])
RETURNS integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
$$;

-- Delayed delivery: the message and its delivery time on the partition's
-- shard; that shard's claim_v6 hands it out when it is due (no scheduler).
CREATE OR REPLACE FUNCTION txnq.append_delayed_v2(
    p_topic_id integer, p_partition integer, p_producer_id bigint, p_producer_epoch integer,
    p_first_sequence bigint, p_payloads bytea[], p_keys bytea[], p_properties jsonb[],
    p_event_times timestamptz[], p_txn_tc integer, p_txn_seq bigint, p_deliver_at timestamptz,
    OUT entry_offset bigint, OUT publish_time timestamptz, OUT duplicate boolean,
    OUT roll_entry_log boolean)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      FROM txnq.append_delayed_v2(p_topic_id, p_partition, p_producer_id, p_producer_epoch,
                                  p_first_sequence, p_payloads, p_keys, p_properties, p_event_times,
                                  p_txn_tc, p_txn_seq, p_deliver_at) a;
$$;

-- ---------------------------------------------------------------- all

CREATE OR REPLACE FUNCTION txnq_cluster.release_claims_all(p_subscription_id bigint, p_consumer_id bigint)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.release_claims_v3(p_subscription_id, p_consumer_id);
$$;

-- The claims released on every shard, added up.
CREATE OR REPLACE FUNCTION txnq.release_claims_v3(p_subscription_id bigint, p_consumer_id bigint)
RETURNS integer
LANGUAGE sql AS $$
    SELECT coalesce(sum(r), 0)::integer FROM txnq_cluster.release_claims_all(p_subscription_id, p_consumer_id) r
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.next_visible_claim_all(p_subscription_id bigint)
RETURNS SETOF double precision
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.next_visible_claim_v2(p_subscription_id);
$$;

-- The earliest of the shards' next visible claims (NULL: none on any).
CREATE OR REPLACE FUNCTION txnq.next_visible_claim_v2(p_subscription_id bigint)
RETURNS double precision
LANGUAGE sql AS $$
    SELECT min(n) FROM txnq_cluster.next_visible_claim_all(p_subscription_id) n
$$;

-- ---------------------------------------------------------------- spread

CREATE OR REPLACE FUNCTION txnq_cluster.claim_on(
    p_shard integer, p_topic_id integer, p_subscription_id bigint, p_consumer_id bigint,
    p_max_messages integer, p_ack_timeout_seconds double precision)
RETURNS TABLE (partition integer, entry_offset bigint, batch_index integer, batch_size integer,
               publish_time timestamptz, producer_id bigint, sequence bigint, payload bytea, key bytea,
               properties jsonb, event_time timestamptz, redelivery_count integer)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT c.partition, c.entry_offset, c.batch_index, c.batch_size, c.publish_time, c.producer_id,
           c.sequence, c.payload, c.key, c.properties, c.event_time, c.redelivery_count
      FROM txnq.claim_v6(p_topic_id, p_subscription_id, p_consumer_id, p_max_messages,
                         p_ack_timeout_seconds, NULL, NULL) c;
$$;

-- What the dead-letter copy names, read on the source partition's shard: the
-- topic's and subscription's names and why the claim came back last (NULL:
-- its ack timeout passed; as claim_v6 words it).
CREATE OR REPLACE FUNCTION txnq_cluster.dead_letter_source(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_entry_offset bigint,
    p_batch_index integer)
RETURNS TABLE (topic_name text, subscription_name text, reason text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT t.name::text AS topic_name, s.name::text AS subscription_name,
           (SELECT c.reason::text FROM txnq.claims c
             WHERE c.topic_id = p_topic_id AND c.partition = p_partition
               AND c.subscription_id = p_subscription_id AND c.entry_offset = p_entry_offset
               AND c.batch_index = p_batch_index) AS reason
      FROM txnq.topics t JOIN txnq.subscriptions s ON s.topic_id = t.topic_id
     WHERE t.topic_id = p_topic_id AND s.subscription_id = p_subscription_id;
$$;

-- Whether the dead-letter partition holds a copy of the message already (a
-- move that appended it and failed before acknowledging the original),
-- among the entries published since the original (the copy is later).
CREATE OR REPLACE FUNCTION txnq_cluster.dead_letter_copied(
    p_dead_letter_topic_id integer, p_partition integer, p_origin text, p_subscription text,
    p_since timestamptz)
RETURNS boolean
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_dead_letter_topic_id, p_partition);
    SELECT EXISTS (
        SELECT FROM txnq.entries e
         WHERE e.topic_id = p_dead_letter_topic_id AND e.partition = p_partition
           AND e.publish_time >= p_since AND e.marker IS NULL
           AND EXISTS (SELECT FROM unnest(e.properties) p
                        WHERE p ->> 'ORIGIN_MESSAGE_ID' = p_origin
                          AND p ->> 'REAL_SUBSCRIPTION' = p_subscription));
$$;

-- txnq_cluster.append_dead_letter: the copy of a message for the dead-letter
-- topic, as dead_letter_v3 makes it on one server (properties that are not an
-- object of strings kept as strings, REAL_TOPIC, REAL_SUBSCRIPTION,
-- ORIGIN_MESSAGE_ID, REDELIVERY_COUNT, DEAD_LETTER_REASON; an event time no
-- client can read left out), appended with append_v5 to partition p % n of
-- the dead-letter topic on the shard that owns it, unless p_look and that
-- partition holds the copy already (a move that appended it and failed
-- before acknowledging the original).
CREATE OR REPLACE FUNCTION txnq_cluster.append_dead_letter(
    p_topic_name text, p_subscription_name text, p_partition integer, p_entry_offset bigint,
    p_batch_index integer, p_dead_letter_topic_id integer, p_redelivery_count integer, p_reason text,
    p_look boolean, p_publish_time timestamptz, p_payload bytea, p_key bytea, p_properties jsonb,
    p_event_time timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_target integer;
    v_origin text := format('%s:%s:%s:%s', p_topic_name, p_partition, p_entry_offset, p_batch_index);
    v_properties jsonb := p_properties;
BEGIN
    v_target := p_partition % txnq.topic_partition_count_v1(p_dead_letter_topic_id);
    IF jsonb_typeof(v_properties) IS DISTINCT FROM 'object' THEN
        v_properties := CASE WHEN v_properties IS NULL OR v_properties = 'null'::jsonb THEN '{}'::jsonb
                             ELSE jsonb_build_object('ORIGINAL_PROPERTIES', v_properties::text) END;
    ELSIF EXISTS (SELECT FROM jsonb_each(v_properties) p WHERE jsonb_typeof(p.value) <> 'string') THEN
        SELECT jsonb_object_agg(p.key, CASE WHEN jsonb_typeof(p.value) = 'string' THEN p.value
                                            ELSE to_jsonb(p.value::text) END)
          INTO v_properties FROM jsonb_each(v_properties) p;
    END IF;
    v_properties := v_properties || jsonb_build_object(
        'REAL_TOPIC', p_topic_name,
        'REAL_SUBSCRIPTION', p_subscription_name,
        'ORIGIN_MESSAGE_ID', v_origin,
        'REDELIVERY_COUNT', greatest(p_redelivery_count, 0)::text,
        'DEAD_LETTER_REASON', p_reason);
    IF p_look AND txnq_cluster.dead_letter_copied(
           p_dead_letter_topic_id, v_target, v_origin, p_subscription_name,
           CASE WHEN isfinite(p_publish_time) THEN p_publish_time ELSE '-infinity' END) THEN
        RETURN;
    END IF;
    PERFORM txnq.append_v5(p_dead_letter_topic_id, v_target, NULL, NULL, NULL,
                           ARRAY[coalesce(p_payload, ''::bytea)],
                           CASE WHEN p_key IS NULL THEN NULL ELSE ARRAY[p_key] END,
                           ARRAY[v_properties],
                           CASE WHEN p_event_time BETWEEN '0001-01-01 00:00:00+00'::timestamptz
                                                      AND '9999-12-31 23:59:59.999999+00'::timestamptz
                                THEN ARRAY[p_event_time] END);
END;
$$;

-- txnq_cluster.move_dead_letter: a message this consumer claimed past its
-- dead-letter policy, moved as claim_v6 moves it on one server, in two steps
-- on two shards: the copy appended on the dead-letter partition's shard
-- (txnq_cluster.append_dead_letter; a move of a message claimed more than
-- once past the policy looks for its copy first), then the original
-- acknowledged on its own shard (ack_shared_v5: the claim goes, the cursor
-- follows). p_redelivery_count is the claim's (claim_v6's column): one more
-- than on one server, where the policy is checked before the claim.
CREATE OR REPLACE FUNCTION txnq_cluster.move_dead_letter(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_entry_offset bigint,
    p_batch_index integer, p_dead_letter_topic_id integer, p_max_redeliver_count integer,
    p_redelivery_count integer, p_publish_time timestamptz, p_payload bytea, p_key bytea,
    p_properties jsonb, p_event_time timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_source record;
BEGIN
    SELECT * INTO v_source
      FROM txnq_cluster.dead_letter_source(p_topic_id, p_partition, p_subscription_id, p_entry_offset,
                                           p_batch_index);
    PERFORM txnq_cluster.append_dead_letter(
        v_source.topic_name, v_source.subscription_name, p_partition, p_entry_offset, p_batch_index,
        p_dead_letter_topic_id, p_redelivery_count - 1,
        format('delivered %s times, more than max_redeliver_count %s allows (last: %s)',
               p_redelivery_count, p_max_redeliver_count, coalesce(v_source.reason, 'ack_timeout')),
        p_redelivery_count > p_max_redeliver_count + 1, p_publish_time, p_payload, p_key, p_properties,
        p_event_time);
    PERFORM txnq.ack_shared_v5(p_topic_id, p_partition, p_subscription_id, ARRAY[p_entry_offset],
                               ARRAY[p_batch_index]);
END;
$$;

-- One message as its partition's shard holds it, for dead_letter_v3: the
-- names, whether the subscription holds it outstanding (a claim outside a
-- transaction, or a claim range covering it that has not recorded its ack)
-- and how often it was delivered, and the entry's element (NULL: retention
-- deleted the entry). No row: the subscription is not one of the topic.
CREATE OR REPLACE FUNCTION txnq_cluster.dead_letter_message(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_entry_offset bigint,
    p_batch_index integer)
RETURNS TABLE (topic_name text, subscription_name text, outstanding boolean, delivered integer,
               found boolean, publish_time timestamptz, payload bytea, key bytea, properties text,
               event_time timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT t.name::text AS topic_name, s.name::text AS subscription_name,
           (c.delivered IS NOT NULL OR g.covered) AS outstanding,
           coalesce(c.delivered, CASE WHEN g.covered THEN 1 END) AS delivered,
           e.publish_time IS NOT NULL AS found, e.publish_time,
           e.payloads[p_batch_index + 1] AS payload, e.keys[p_batch_index + 1] AS key,
           e.properties[p_batch_index + 1]::text AS properties,
           e.event_times[p_batch_index + 1] AS event_time
      FROM txnq.topics t
      JOIN txnq.subscriptions s ON s.topic_id = t.topic_id AND s.subscription_id = p_subscription_id
      LEFT JOIN txnq.claims c
        ON c.topic_id = p_topic_id AND c.partition = p_partition AND c.subscription_id = p_subscription_id
       AND c.entry_offset = p_entry_offset AND c.batch_index = p_batch_index AND c.txn_tc IS NULL
      CROSS JOIN LATERAL (
           SELECT EXISTS (
               SELECT FROM txnq.claim_ranges r
                WHERE r.topic_id = p_topic_id AND r.partition = p_partition
                  AND r.subscription_id = p_subscription_id
                  AND r.first_offset <= p_entry_offset AND r.last_offset >= p_entry_offset
                  AND NOT EXISTS (SELECT FROM unnest(r.acked_offsets, r.acked_indexes) a(o, i)
                                   WHERE a.o = p_entry_offset AND a.i = p_batch_index)) AS covered) g
      LEFT JOIN txnq.entries e
        ON e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset = p_entry_offset
     WHERE t.topic_id = p_topic_id;
$$;

-- txnq.dead_letter_v3 through the proxy: a claimed message the consumer could
-- not decode, moved at once (docs/subscriptions.md), in the two steps of
-- move_dead_letter: the copy appended on the dead-letter partition's shard
-- (after looking for one a failed move left there), then the original
-- acknowledged on its shard. Returns true when moved, false when the
-- subscription does not hold it (acknowledged or moved meanwhile), as on one
-- server. Errors: TQ001 unknown topic, partition or dead-letter topic; TQ005
-- NULL or negative offset, batch index or reason; TQ006 a subscription of
-- another topic; the shards' (permissions, the dead-letter topic's quota).
CREATE OR REPLACE FUNCTION txnq.dead_letter_v3(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_entry_offset bigint,
    p_batch_index integer, p_dead_letter_topic_id integer, p_reason text)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    v_message record;
    v_partitions integer;
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
    v_partitions := txnq.topic_partition_count_v1(p_topic_id);
    IF v_partitions IS NULL OR p_partition < 0 OR p_partition >= v_partitions THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('partition %s of topic id %s does not exist', p_partition, p_topic_id),
            HINT = 'look the topic up by name (txnq.topics); nothing was moved';
    END IF;
    IF txnq.topic_partition_count_v1(p_dead_letter_topic_id) IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('dead-letter topic id %s does not exist', p_dead_letter_topic_id),
            HINT = 'create the dead-letter topic, or subscribe again so the client creates it';
    END IF;
    SELECT * INTO v_message
      FROM txnq_cluster.dead_letter_message(p_topic_id, p_partition, p_subscription_id, p_entry_offset,
                                            p_batch_index);
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s is not a subscription of topic id %s',
                             coalesce(p_subscription_id::text, 'NULL'), p_topic_id),
            HINT = 'look the subscription up by topic and name (txnq.subscriptions); nothing was moved';
    END IF;
    IF NOT v_message.outstanding THEN
        RETURN false;
    END IF;
    IF v_message.found THEN  -- else retention deleted the entry: nothing left to move
        PERFORM txnq_cluster.append_dead_letter(
            v_message.topic_name, v_message.subscription_name, p_partition, p_entry_offset, p_batch_index,
            p_dead_letter_topic_id, v_message.delivered - 1, p_reason, true, v_message.publish_time,
            v_message.payload, v_message.key, v_message.properties::jsonb, v_message.event_time);
    END IF;
    PERFORM txnq.ack_shared_v5(p_topic_id, p_partition, p_subscription_id, ARRAY[p_entry_offset],
                               ARRAY[p_batch_index]);
    RETURN true;
END;
$$;

-- txnq.claim_v6 through the proxy: each shard's claim_v6 in turn, for what
-- room is left, until p_max_messages are claimed or every shard was asked.
-- The first shard asked depends on the consumer and moves on by one at every
-- call of the session (txnq_cluster.claim_turn), so that neither a shard nor
-- a consumer is left behind. The arguments are checked by the first shard's
-- claim_v6 (TQ005 ...), the dead-letter policy here (it is not passed on:
-- see the header). Each shard commits its claims on its own: a shard that
-- fails (down, or its claim refused) after another claimed ends the call
-- with what was claimed (never dropping claims the consumer would then hold
-- without knowing); when none claimed anything, the first shard's error is
-- raised. A message whose dead-letter move fails is nacked for a second
-- (moved again at a later claim).
CREATE OR REPLACE FUNCTION txnq.claim_v6(
    p_topic_id integer, p_subscription_id bigint, p_consumer_id bigint, p_max_messages integer,
    p_ack_timeout_seconds double precision DEFAULT NULL, p_max_redeliver_count integer DEFAULT NULL,
    p_dead_letter_topic_id integer DEFAULT NULL)
RETURNS TABLE (partition integer, entry_offset bigint, batch_index integer, batch_size integer,
               publish_time timestamptz, producer_id bigint, sequence bigint, payload bytea, key bytea,
               properties jsonb, event_time timestamptz, redelivery_count integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_shards integer := txnq_cluster.shard_count();
    v_turn bigint := coalesce(nullif(current_setting('txnq_cluster.claim_turn', true), '')::bigint, 0);
    v_start integer;
    v_shard integer;
    v_taken integer := 0;
    v_asked integer := 0;
    v_rows integer;
    v_dead_letters boolean := p_max_redeliver_count IS NOT NULL AND p_dead_letter_topic_id IS NOT NULL;
    v_state text;
    v_message text;
    v_detail text;
    v_hint text;
    r record;
BEGIN
    IF p_max_redeliver_count < 0 OR (p_max_redeliver_count IS NULL) <> (p_dead_letter_topic_id IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('claim_v4: max_redeliver_count (%s) must be 0 or more and comes with a '
                             'dead_letter_topic_id (%s)', coalesce(p_max_redeliver_count::text, 'NULL'),
                             coalesce(p_dead_letter_topic_id::text, 'NULL')),
            HINT = 'pass both (a dead-letter policy) or neither';
    END IF;
    IF v_dead_letters AND txnq.topic_partition_count_v1(p_dead_letter_topic_id) IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('dead-letter topic id %s does not exist', p_dead_letter_topic_id),
            HINT = 'create the dead-letter topic first and pass its id';
    END IF;
    PERFORM pg_catalog.set_config('txnq_cluster.claim_turn', (v_turn + 1)::text, false);
    v_start := ((coalesce(p_consumer_id, 0) + v_turn) % v_shards)::integer;
    IF v_start < 0 THEN
        v_start := v_start + v_shards;
    END IF;
    FOR k IN 0 .. v_shards - 1 LOOP
        -- (a NULL or out-of-range p_max_messages: the first shard refuses it)
        EXIT WHEN k > 0 AND v_taken >= p_max_messages;
        v_shard := (v_start + k) % v_shards;
        BEGIN
            v_asked := v_asked + 1;
            IF NOT v_dead_letters THEN
                RETURN QUERY SELECT * FROM txnq_cluster.claim_on(v_shard, p_topic_id, p_subscription_id,
                                                                 p_consumer_id, p_max_messages - v_taken,
                                                                 p_ack_timeout_seconds);
                GET DIAGNOSTICS v_rows = ROW_COUNT;
                v_taken := v_taken + v_rows;
                CONTINUE;
            END IF;
            FOR r IN SELECT * FROM txnq_cluster.claim_on(v_shard, p_topic_id, p_subscription_id, p_consumer_id,
                                                         p_max_messages - v_taken, p_ack_timeout_seconds) LOOP
                IF r.redelivery_count > p_max_redeliver_count THEN
                    BEGIN
                        PERFORM txnq_cluster.move_dead_letter(
                            p_topic_id, r.partition, p_subscription_id, r.entry_offset, r.batch_index,
                            p_dead_letter_topic_id, p_max_redeliver_count, r.redelivery_count, r.publish_time,
                            r.payload, r.key, r.properties, r.event_time);
                    EXCEPTION WHEN OTHERS THEN
                        RAISE WARNING 'moving message %:%:% to dead-letter topic id % failed: % (nacked for 1 s)',
                            r.partition, r.entry_offset, r.batch_index, p_dead_letter_topic_id, SQLERRM;
                        BEGIN
                            PERFORM txnq.nack_shared_v3(p_topic_id, r.partition, p_subscription_id, p_consumer_id,
                                                        ARRAY[r.entry_offset], ARRAY[r.batch_index], ARRAY[1.0::float8]);
                        EXCEPTION WHEN OTHERS THEN
                            NULL;  -- its shard is gone: its claims come back with the lease there
                        END;
                    END;
                    CONTINUE;
                END IF;
                partition := r.partition;
                entry_offset := r.entry_offset;
                batch_index := r.batch_index;
                batch_size := r.batch_size;
                publish_time := r.publish_time;
                producer_id := r.producer_id;
                sequence := r.sequence;
                payload := r.payload;
                key := r.key;
                properties := r.properties;
                event_time := r.event_time;
                redelivery_count := r.redelivery_count;
                RETURN NEXT;
                v_taken := v_taken + 1;
            END LOOP;
        EXCEPTION WHEN OTHERS THEN
            IF v_state IS NULL THEN
                GET STACKED DIAGNOSTICS v_state = RETURNED_SQLSTATE, v_message = MESSAGE_TEXT,
                                        v_detail = PG_EXCEPTION_DETAIL, v_hint = PG_EXCEPTION_HINT;
            END IF;
            EXIT WHEN v_taken > 0;
        END;
    END LOOP;
    IF v_taken = 0 AND v_state IS NOT NULL THEN
        RAISE EXCEPTION USING ERRCODE = v_state, MESSAGE = v_message, DETAIL = coalesce(v_detail, ''),
                              HINT = coalesce(v_hint, '');
    END IF;
END;
$$;
