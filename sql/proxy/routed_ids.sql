-- The routed functions that allocate ids (rule all_ids) or read every shard
-- and combine (owned, summed): see routed.sql's header for the rules.

-- ---------------------------------------------------------------- all_ids

-- The shard statement sets the identity sequence of the new row's table to
-- the id allocated on the proxy (txnq_cluster.allocate_id; is_called false:
-- the next value is that id)
-- in a scalar subquery that is an argument of the shard function, so it runs
-- first, in the same statement. An existing topic fails alike on every shard
-- (TQ010); an existing subscription, producer or consumer name returns its own
-- id alike on every shard.
-- txnq_cluster.id_taken: the error of an id allocated here that a shard holds
-- already (a row created on the shard directly, bypassing the proxy).
-- Errors: TQ031 always.
CREATE OR REPLACE FUNCTION txnq_cluster.id_taken(p_function text, p_detail text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'TQ031',
        MESSAGE = format('txnq.%s: a shard holds the id the proxy allocated already (%s)', p_function, p_detail),
        HINT = 'topics, subscriptions, producers and consumers of a cluster are created through the proxy '
               'only; one was created on a shard directly: see docs/cluster.md (repairing a cluster)';
END;
$$;

-- The largest value each shard's identity sequence of p_table.p_column gave.
CREATE OR REPLACE FUNCTION txnq_cluster.last_id_all(p_table text, p_column text)
RETURNS SETOF bigint
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT coalesce(max(s.last_value), 0)
      FROM pg_catalog.pg_sequences s
     WHERE format('%I.%I', s.schemaname, s.sequencename)::regclass
           = pg_catalog.pg_get_serial_sequence(p_table, p_column)::regclass;
$$;

-- txnq_cluster.allocate_id: the next id of a kind, past this proxy's sequence
-- and past every id any shard gave itself (a producer or consumer registered
-- on a shard directly takes one), so the id is free on every shard. Run under
-- txnq_cluster.lock_ids.
CREATE OR REPLACE FUNCTION txnq_cluster.allocate_id(p_sequence regclass, p_table text, p_column text)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT pg_catalog.setval(p_sequence, greatest(pg_catalog.nextval(p_sequence),
                                                  (SELECT max(l) + 1 FROM txnq_cluster.last_id_all(p_table, p_column) l)))
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.create_topic_all(
    p_topic_id integer, p_name text, p_partitions integer, p_retention_seconds double precision,
    p_retention_bytes bigint, p_ttl_seconds double precision, p_max_message_bytes integer)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.create_topic_v2(
        (SELECT p_name FROM pg_catalog.setval(
             pg_catalog.pg_get_serial_sequence('txnq.topics', 'topic_id'), p_topic_id, false) AS aligned),
        p_partitions, p_retention_seconds, p_retention_bytes, p_ttl_seconds, p_max_message_bytes);
$$;

-- A topic some shards hold and others lack: a create that failed part-way
-- (RUN ON ALL commits on each shard on its own: a shard that went down or
-- refused during the call). Creating it again completes it on the shards
-- that lack it, under the id the others gave it, instead of failing on the
-- shards that have it (TQ010) while the others took a new id. The shards
-- that lack it take the settings of those that have it (the first's), not
-- the call's: the topic is what it was created as.
CREATE OR REPLACE FUNCTION txnq_cluster.topic_on(p_shard integer, p_name text)
RETURNS TABLE (topic_id integer, partitions integer, retention_seconds double precision,
               retention_bytes bigint, ttl_seconds double precision, max_message_bytes integer)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT t.topic_id, t.partitions, t.retention_seconds, t.retention_bytes, t.ttl_seconds,
           t.max_message_bytes
      FROM txnq.topic_by_name_v1(p_name) t;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.create_topic_on(
    p_shard integer, p_topic_id integer, p_name text, p_partitions integer,
    p_retention_seconds double precision, p_retention_bytes bigint, p_ttl_seconds double precision,
    p_max_message_bytes integer)
RETURNS integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT txnq.create_topic_v2(
        (SELECT p_name FROM pg_catalog.setval(
             pg_catalog.pg_get_serial_sequence('txnq.topics', 'topic_id'), p_topic_id, false) AS aligned),
        p_partitions, p_retention_seconds, p_retention_bytes, p_ttl_seconds, p_max_message_bytes);
$$;

CREATE OR REPLACE FUNCTION txnq.create_topic_v2(
    p_name text, p_partitions integer, p_retention_seconds double precision, p_retention_bytes bigint,
    p_ttl_seconds double precision, p_max_message_bytes integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_id integer;
    v_shard integer;
    v_held record;
    v_first record;
    v_ids integer[];
    v_partitions integer[];
    v_missing integer[];
BEGIN
    PERFORM txnq_cluster.lock_ids();
    FOR v_shard IN 0 .. txnq_cluster.shard_count() - 1 LOOP
        SELECT * INTO v_held FROM txnq_cluster.topic_on(v_shard, p_name) t;
        IF NOT FOUND THEN
            v_missing := v_missing || v_shard;
        ELSE
            v_first := coalesce(v_first, v_held);
            v_ids := v_ids || v_held.topic_id;
            v_partitions := v_partitions || v_held.partitions;
        END IF;
    END LOOP;
    IF v_ids IS NOT NULL AND v_missing IS NOT NULL THEN
        IF (SELECT count(DISTINCT i) FROM unnest(v_ids) i) > 1
           OR (SELECT count(DISTINCT n) FROM unnest(v_partitions) n) > 1
           OR v_partitions[1] IS DISTINCT FROM p_partitions THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ031',
                MESSAGE = format('topic %L exists on some shards only, as topic ids %s with %s partitions, '
                                 'and cannot be completed with %s partitions', p_name, v_ids, v_partitions,
                                 coalesce(p_partitions::text, 'NULL')),
                HINT = 'create it again with the partition count it has, or delete it (force) and create it anew';
        END IF;
        FOREACH v_shard IN ARRAY v_missing LOOP
            PERFORM txnq_cluster.create_topic_on(v_shard, v_ids[1], p_name, p_partitions,
                                                 v_first.retention_seconds, v_first.retention_bytes,
                                                 v_first.ttl_seconds, v_first.max_message_bytes);
        END LOOP;
        RETURN v_ids[1];
    END IF;
    -- No shard holds it (created everywhere), or every shard does (each says TQ010).
    v_id := txnq_cluster.allocate_id('txnq_cluster.topic_ids', 'txnq.topics', 'topic_id');
    RETURN txnq_cluster.require_same('create_topic_v2', min(t), max(t))
      FROM txnq_cluster.create_topic_all(v_id, p_name, p_partitions, p_retention_seconds, p_retention_bytes,
                                         p_ttl_seconds, p_max_message_bytes) t;
EXCEPTION WHEN unique_violation THEN
    PERFORM txnq_cluster.id_taken('create_topic_v2', SQLERRM);
END;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.subscribe_all(
    p_subscription_id bigint, p_topic_id integer, p_name text, p_subscription_type text,
    p_isolation text, p_initial_position text)
RETURNS SETOF bigint
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.subscribe_v2(
        (SELECT p_topic_id FROM pg_catalog.setval(
             pg_catalog.pg_get_serial_sequence('txnq.subscriptions', 'subscription_id'),
             p_subscription_id, false) AS aligned),
        p_name, p_subscription_type, p_isolation, p_initial_position);
$$;

CREATE OR REPLACE FUNCTION txnq.subscribe_v2(
    p_topic_id integer, p_name text, p_subscription_type text, p_isolation text, p_initial_position text)
RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    -- Every type: shared and key_shared claims are routed by shared.sql.
    PERFORM txnq_cluster.lock_ids();
    RETURN txnq_cluster.require_same('subscribe_v2', min(s), max(s))
      FROM txnq_cluster.subscribe_all(txnq_cluster.allocate_id('txnq_cluster.subscription_ids', 'txnq.subscriptions',
                                                                'subscription_id'), p_topic_id, p_name,
                                      p_subscription_type, p_isolation, p_initial_position) s;
EXCEPTION WHEN unique_violation THEN
    PERFORM txnq_cluster.id_taken('subscribe_v2', SQLERRM);
END;
$$;

-- A consumer registers on every shard, one shard after the other, not RUN ON
-- ALL: PL/Proxy raises the first shard's error (an exclusive subscription's
-- TQ007) without waiting for the other shards, whose call runs on and commits
-- on its own, possibly after the caller got the error and a closing consumer
-- was deleted there: a session nobody renews, which refused the subscription
-- until its lease ran out (found by tests/integration/test_consume.py in the
-- cluster pass). In turn, a refusal on shard k leaves shards 0 .. k-1 with the
-- registration, which is undone there before the error is raised again.
DROP FUNCTION IF EXISTS txnq_cluster.register_consumer_all(bigint, bigint, text, integer, double precision);
CREATE OR REPLACE FUNCTION txnq_cluster.register_consumer_on(
    p_shard integer, p_consumer_id bigint, p_subscription_id bigint, p_name text, p_priority integer,
    p_lease_seconds double precision)
RETURNS bigint
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT txnq.register_consumer_v2(
        (SELECT p_subscription_id FROM pg_catalog.setval(
             pg_catalog.pg_get_serial_sequence('txnq.consumers', 'consumer_id'), p_consumer_id, false)
             AS aligned),
        p_name, p_priority, p_lease_seconds);
$$;

-- Undo a registration on one shard: the session's row and waiters, if any.
CREATE OR REPLACE FUNCTION txnq_cluster.unregister_consumer_on(p_shard integer, p_consumer_id bigint)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT 1 FROM txnq.consumers c, LATERAL txnq.close_consumer_v1(c.topic_id, c.consumer_id) d
     WHERE c.consumer_id = p_consumer_id;
$$;

CREATE OR REPLACE FUNCTION txnq.register_consumer_v2(
    p_subscription_id bigint, p_name text, p_priority integer, p_lease_seconds double precision)
RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint;
    v_got bigint;
    v_first bigint;
    v_shard integer;
BEGIN
    PERFORM txnq_cluster.lock_ids();
    v_id := txnq_cluster.allocate_id('txnq_cluster.consumer_ids', 'txnq.consumers', 'consumer_id');
    FOR v_shard IN 0 .. txnq_cluster.shard_count() - 1 LOOP
        BEGIN
            v_got := txnq_cluster.register_consumer_on(v_shard, v_id, p_subscription_id, p_name,
                                                       p_priority, p_lease_seconds);
        EXCEPTION WHEN OTHERS THEN
            IF v_shard > 0 THEN
                PERFORM count(*) FROM generate_series(0, v_shard - 1) s,
                                      LATERAL txnq_cluster.unregister_consumer_on(s, v_id) u;
            END IF;
            RAISE;
        END;
        v_first := coalesce(v_first, v_got);
        PERFORM txnq_cluster.require_same('register_consumer_v2', v_first, v_got);
    END LOOP;
    RETURN v_first;
EXCEPTION WHEN unique_violation THEN
    PERFORM txnq_cluster.id_taken('register_consumer_v2', SQLERRM);
END;
$$;

-- A producer registers on every shard (its epoch grows on each, which fences
-- an older session wherever it appends); each shard's row of a partition it
-- owns gives that partition's last sequence.
CREATE OR REPLACE FUNCTION txnq_cluster.register_producer_on(
    p_shard integer, p_producer_id bigint, p_topic_id integer, p_name text)
RETURNS TABLE (producer_id bigint, epoch integer, partition integer, last_sequence bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT r.producer_id, r.epoch, r.partition, r.last_sequence
      FROM txnq.register_producer_v2(
          (SELECT p_topic_id FROM pg_catalog.setval(
               pg_catalog.pg_get_serial_sequence('txnq.producers', 'producer_id'), p_producer_id, false)
               AS aligned),
          p_name) r;
$$;

CREATE OR REPLACE FUNCTION txnq.register_producer_v2(p_topic_id integer, p_name text)
RETURNS TABLE (producer_id bigint, epoch integer, partition integer, last_sequence bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_id bigint;
BEGIN
    PERFORM txnq_cluster.lock_ids();
    v_id := txnq_cluster.allocate_id('txnq_cluster.producer_ids', 'txnq.producers', 'producer_id');
    CREATE TEMP TABLE IF NOT EXISTS txnq_cluster_registered (
        shard integer, producer_id bigint, epoch integer, partition integer, last_sequence bigint
    ) ON COMMIT DROP;
    DELETE FROM txnq_cluster_registered;
    INSERT INTO txnq_cluster_registered
    SELECT s, r.producer_id, r.epoch, r.partition, r.last_sequence
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.register_producer_on(s, v_id, p_topic_id, p_name) r;
    PERFORM txnq_cluster.require_same('register_producer_v2 (producer id)', min(r.producer_id), max(r.producer_id)),
            txnq_cluster.require_same('register_producer_v2 (epoch)', min(r.epoch), max(r.epoch))
       FROM txnq_cluster_registered r;
    RETURN QUERY
        SELECT r.producer_id, r.epoch, r.partition, r.last_sequence
          FROM txnq_cluster_registered r
         WHERE txnq_cluster.shard_of(p_topic_id, r.partition) = r.shard
         ORDER BY r.partition;
EXCEPTION WHEN unique_violation THEN
    PERFORM txnq_cluster.id_taken('register_producer_v2', SQLERRM);
END;
$$;

-- ---------------------------------------------------------------- owned

CREATE OR REPLACE FUNCTION txnq_cluster.topic_partitions_on(p_shard integer, p_topic_id integer)
RETURNS TABLE (partition integer, high_watermark bigint, max_read_offset bigint, earliest_offset bigint,
               open_ledger_id bigint, last_publish_time timestamptz, ledgers bigint, payload_bytes bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT t.partition, t.high_watermark, t.max_read_offset, t.earliest_offset, t.open_ledger_id,
           t.last_publish_time, t.ledgers, t.payload_bytes
      FROM txnq.topic_partitions_v1(p_topic_id) t;
$$;

CREATE OR REPLACE FUNCTION txnq.topic_partitions_v1(p_topic_id integer)
RETURNS TABLE (partition integer, high_watermark bigint, max_read_offset bigint, earliest_offset bigint,
               open_ledger_id bigint, last_publish_time timestamptz, ledgers bigint, payload_bytes bigint)
LANGUAGE sql STABLE AS $$
    SELECT t.*
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.topic_partitions_on(s, p_topic_id) t
     WHERE txnq_cluster.shard_of(p_topic_id, t.partition) = s
     ORDER BY t.partition
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.cursor_positions_on(
    p_shard integer, p_topic_id integer, p_subscription_id bigint)
RETURNS TABLE (partition integer, mark_delete_offset bigint, generation integer)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT c.partition, c.mark_delete_offset, c.generation
      FROM txnq.cursor_positions_v1(p_topic_id, p_subscription_id) c;
$$;

CREATE OR REPLACE FUNCTION txnq.cursor_positions_v1(p_topic_id integer, p_subscription_id bigint)
RETURNS TABLE (partition integer, mark_delete_offset bigint, generation integer)
LANGUAGE sql STABLE AS $$
    SELECT c.*
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.cursor_positions_on(s, p_topic_id, p_subscription_id) c
     WHERE txnq_cluster.shard_of(p_topic_id, c.partition) = s
     ORDER BY c.partition
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.subscription_cursors_on(
    p_shard integer, p_topic_id integer, p_subscription_id bigint)
RETURNS TABLE (partition integer, mark_delete_offset bigint, max_read_offset bigint, high_watermark bigint,
               backlog_entries bigint, individual_acks bigint, generation integer, updated_at timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT c.partition, c.mark_delete_offset, c.max_read_offset, c.high_watermark, c.backlog_entries,
           c.individual_acks, c.generation, c.updated_at
      FROM txnq.subscription_cursors_v1(p_topic_id, p_subscription_id) c;
$$;

CREATE OR REPLACE FUNCTION txnq.subscription_cursors_v1(p_topic_id integer, p_subscription_id bigint)
RETURNS TABLE (partition integer, mark_delete_offset bigint, max_read_offset bigint, high_watermark bigint,
               backlog_entries bigint, individual_acks bigint, generation integer, updated_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT c.*
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.subscription_cursors_on(s, p_topic_id, p_subscription_id) c
     WHERE txnq_cluster.shard_of(p_topic_id, c.partition) = s
     ORDER BY c.partition
$$;

-- ---------------------------------------------------------------- summed

CREATE OR REPLACE FUNCTION txnq_cluster.list_topics_on(p_shard integer)
RETURNS TABLE (topic_id integer, name text, partitions integer, retention_seconds double precision,
               retention_bytes bigint, ttl_seconds double precision, max_message_bytes integer,
               created_at timestamptz, backlog_quota_bytes bigint, backlog_quota_seconds double precision,
               backlog_quota_policy text, entries bigint, subscriptions bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT t.topic_id, t.name, t.partitions, t.retention_seconds, t.retention_bytes, t.ttl_seconds,
           t.max_message_bytes, t.created_at, t.backlog_quota_bytes, t.backlog_quota_seconds,
           t.backlog_quota_policy, t.entries, t.subscriptions
      FROM txnq.list_topics_v1() t;
$$;

-- Metadata from shard 0; entries (the sum of the partitions' next offsets)
-- added up over the shards.
CREATE OR REPLACE FUNCTION txnq.list_topics_v1()
RETURNS TABLE (topic_id integer, name text, partitions integer, retention_seconds double precision,
               retention_bytes bigint, ttl_seconds double precision, max_message_bytes integer,
               created_at timestamptz, backlog_quota_bytes bigint, backlog_quota_seconds double precision,
               backlog_quota_policy text, entries bigint, subscriptions bigint)
LANGUAGE sql STABLE AS $$
    -- One call per shard (a CTE read twice is materialised once).
    WITH each AS (
        SELECT s, a.*
          FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
               LATERAL txnq_cluster.list_topics_on(s) a
    )
    SELECT f.topic_id, f.name, f.partitions, f.retention_seconds, f.retention_bytes, f.ttl_seconds,
           f.max_message_bytes, f.created_at, f.backlog_quota_bytes, f.backlog_quota_seconds,
           f.backlog_quota_policy,
           (SELECT coalesce(sum(e.entries), 0)::bigint FROM each e WHERE e.topic_id = f.topic_id),
           f.subscriptions
      FROM each f
     WHERE f.s = 0
     ORDER BY f.name
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.list_subscriptions_on(p_shard integer, p_topic_id integer)
RETURNS TABLE (subscription_id bigint, name text, subscription_type text, isolation text,
               created_at timestamptz, backlog_entries bigint, consumers bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT l.subscription_id, l.name, l.subscription_type, l.isolation, l.created_at, l.backlog_entries,
           l.consumers
      FROM txnq.list_subscriptions_v1(p_topic_id) l;
$$;

CREATE OR REPLACE FUNCTION txnq.list_subscriptions_v1(p_topic_id integer)
RETURNS TABLE (subscription_id bigint, name text, subscription_type text, isolation text,
               created_at timestamptz, backlog_entries bigint, consumers bigint)
LANGUAGE sql STABLE AS $$
    SELECT l.subscription_id, min(l.name), min(l.subscription_type), min(l.isolation), min(l.created_at),
           sum(l.backlog_entries)::bigint, max(l.consumers)
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.list_subscriptions_on(s, p_topic_id) l
     GROUP BY l.subscription_id
     ORDER BY min(l.name)
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.backlog_quota_info_on(p_shard integer, p_topic_id integer)
RETURNS TABLE (limit_bytes bigint, limit_seconds double precision, policy text, from_defaults text[],
               exceeded_since timestamptz, exceeded_reason text, checked_at timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT b.limit_bytes, b.limit_seconds, b.policy, b.from_defaults, b.exceeded_since, b.exceeded_reason,
           b.checked_at
      FROM txnq.backlog_quota_info_v1(p_topic_id) b;
$$;

-- The limits from shard 0 (alike on every shard); exceeded since the earliest
-- shard that says so, checked when the last shard was.
CREATE OR REPLACE FUNCTION txnq.backlog_quota_info_v1(p_topic_id integer)
RETURNS TABLE (limit_bytes bigint, limit_seconds double precision, policy text, from_defaults text[],
               exceeded_since timestamptz, exceeded_reason text, checked_at timestamptz)
LANGUAGE sql STABLE AS $$
    WITH each AS (
        SELECT s, b.*
          FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
               LATERAL txnq_cluster.backlog_quota_info_on(s, p_topic_id) b
    )
    SELECT f.limit_bytes, f.limit_seconds, f.policy, f.from_defaults,
           (SELECT min(e.exceeded_since) FROM each e),
           (SELECT e.exceeded_reason FROM each e WHERE e.exceeded_since IS NOT NULL
             ORDER BY e.exceeded_since LIMIT 1),
           (SELECT max(e.checked_at) FROM each e)
      FROM each f
     WHERE f.s = 0
$$;

-- ---------------------------------------------------------------- status

-- One shard's health for `txnq cluster status`: its schema revision, server
-- version and database size (a call fails when the shard is down).
CREATE OR REPLACE FUNCTION txnq_cluster.shard_health_on(p_shard integer)
RETURNS TABLE (schema_revision text, server_version text, database_bytes bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT txnq.schema_revision_v1() AS schema_revision,
           pg_catalog.current_setting('server_version') AS server_version,
           pg_catalog.pg_database_size(pg_catalog.current_database()) AS database_bytes;
$$;
