-- The proxy database of a txnq cluster (docs/cluster.md): routing and cluster
-- metadata only, no messages. Installed by `txnq cluster init`
-- (txnq.cluster.setup), which runs this file, then routed.sql and refused.sql;
-- every statement is re-runnable (CREATE OR REPLACE, IF NOT EXISTS).
--
-- Schema txnq_cluster holds what is the proxy's own: the shard layout (the
-- SQL/MED server `txnq` of PL/Proxy's foreign data wrapper, one option pN per
-- shard), the hash that places a partition on a shard, the id sequences that
-- give a topic, subscription, producer or consumer the same id on every shard,
-- the routing table, and the helpers PL/Proxy calls. Schema txnq holds
-- functions with the names and signatures of the shard functions the Python
-- client calls, so a client with TXNQ_DSN at the proxy works unchanged.

CREATE EXTENSION IF NOT EXISTS plproxy;
CREATE SCHEMA IF NOT EXISTS txnq_cluster;
CREATE SCHEMA IF NOT EXISTS txnq;

-- Ids allocated once, here, and imposed on every shard (routed.sql's
-- *_everywhere functions set the shard's identity sequence to the id in the
-- statement that creates the row). cluster init moves them past the largest
-- id any shard holds already.
CREATE SEQUENCE IF NOT EXISTS txnq_cluster.topic_ids AS integer;
CREATE SEQUENCE IF NOT EXISTS txnq_cluster.subscription_ids AS bigint;
CREATE SEQUENCE IF NOT EXISTS txnq_cluster.producer_ids AS bigint;
CREATE SEQUENCE IF NOT EXISTS txnq_cluster.consumer_ids AS bigint;

-- One row per shard, as cluster init configured it: its number (PL/Proxy's
-- partition number, the option pN of the server) and DSN (libpq words).
CREATE TABLE IF NOT EXISTS txnq_cluster.shards (
    shard integer PRIMARY KEY CHECK (shard >= 0),
    dsn text NOT NULL
);
-- Where clients reach a shard, when not where the proxy does (Kafka's
-- advertised.listeners): libpq words host, hostaddr, port and dbname, set by
-- `txnq cluster advertise` (txnq_cluster.advertise, spark.sql). NULL: the DSN's.
ALTER TABLE txnq_cluster.shards ADD COLUMN IF NOT EXISTS advertised text;

-- The routing table: every function of schema txnq on this proxy, and how a
-- call reaches the shards (docs/cluster.md explains each rule). Filled by
-- routed.sql and refused.sql; `txnq cluster status` and tests/cluster read it.
--   partition  RUN ON the shard owning (topic_id, partition)
--   all        RUN ON ALL; every shard must answer the same (else TQ031)
--   all_ids    as all, with an id allocated here and imposed on every shard
--   first      RUN ON 0: metadata every shard holds alike
--   owned      every shard, keeping the rows of the partitions it owns
--   summed     every shard, per-partition counts added up (a shard holds
--              empty head rows of the partitions it does not own)
--   proxy      answered by the proxy from its own configuration (spark.sql)
--   spread     every shard in turn, from one that depends on the caller,
--              until the call has what it asked for (claim_v6: shared.sql)
--   union      every shard's own rows, all of them (views_shards.sql)
--   home       RUN ON the home shard of the transaction's coordinator
--   txn        the protocol across shards (transactions.sql)
--   refused    raises TQ030: not supported through a proxy yet
CREATE TABLE IF NOT EXISTS txnq_cluster.routing (
    function_name text PRIMARY KEY,
    rule text NOT NULL CONSTRAINT routing_rule_check
        CHECK (rule IN ('partition', 'all', 'all_ids', 'first', 'owned', 'summed', 'proxy', 'spread',
                        'union', 'home', 'txn', 'refused')),
    note text NOT NULL DEFAULT ''
);
-- A proxy installed before the rules 'proxy' (Spark), 'spread' (shared
-- subscriptions), 'union' (views_shards.sql), 'home' and 'txn'
-- (transactions.sql) existed: the one place the list of rules is kept.
ALTER TABLE txnq_cluster.routing DROP CONSTRAINT IF EXISTS routing_rule_check;
ALTER TABLE txnq_cluster.routing ADD CONSTRAINT routing_rule_check
    CHECK (rule IN ('partition', 'all', 'all_ids', 'first', 'owned', 'summed', 'proxy', 'spread',
                    'union', 'home', 'txn', 'refused'));

-- txnq_cluster.route: the stable hash of a partition, documented in
-- docs/cluster.md: (hashint4(topic_id) & 0x7fffffff) + partition, kept in 31
-- bits. PL/Proxy runs the call on shard route & (N - 1), so the partitions of
-- one topic go round the shards from a start the topic id picks. A NULL
-- argument routes to shard 0, whose function then rejects it with its own
-- TQxxx error (PL/Proxy refuses a NULL hash).
CREATE OR REPLACE FUNCTION txnq_cluster.route(p_topic_id integer, p_partition integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(
        (((pg_catalog.hashint4(p_topic_id)::bigint & 2147483647) + p_partition) & 2147483647)::integer,
        0)
$$;

-- txnq_cluster.shard_count: the number of shards of the server `txnq` (its pN
-- options); 0 before cluster init.
CREATE OR REPLACE FUNCTION txnq_cluster.shard_count()
RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT count(*)::integer
      FROM pg_catalog.pg_foreign_server s,
           LATERAL pg_catalog.pg_options_to_table(s.srvoptions) o
     WHERE s.srvname = 'txnq' AND o.option_name ~ '^p[0-9]+$'
$$;

-- txnq_cluster.shard_of: the shard that owns (topic_id, partition).
CREATE OR REPLACE FUNCTION txnq_cluster.shard_of(p_topic_id integer, p_partition integer)
RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT txnq_cluster.route(p_topic_id, p_partition) & (txnq_cluster.shard_count() - 1)
$$;

-- txnq_cluster.configure: (re)define the cluster's shards, in order. N must be
-- a power of two (PL/Proxy maps a hash to a shard with & (N - 1)). Creates or
-- replaces the SQL/MED server `txnq` of PL/Proxy's foreign data wrapper and a
-- PUBLIC user mapping (a call connects as the calling user: docs/cluster.md).
-- Errors: TQ005 no shards, not a power of two, an empty DSN.
CREATE OR REPLACE FUNCTION txnq_cluster.configure(p_shards text[])
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer := coalesce(cardinality(p_shards), 0);
    v_options text;
BEGIN
    IF v_count = 0 OR v_count & (v_count - 1) <> 0 OR v_count > 1024 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('a cluster has a power of two shards (1 to 1024), not %s', v_count),
            HINT = 'pass 1, 2, 4, 8 ... shard DSNs; nothing was changed';
    END IF;
    IF EXISTS (SELECT FROM unnest(p_shards) d WHERE coalesce(btrim(d), '') = '') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'a shard DSN is empty',
            HINT = 'pass a libpq DSN for every shard; nothing was changed';
    END IF;
    SELECT string_agg(format('p%s %L', i - 1, p_shards[i]), ', ' ORDER BY i)
      INTO v_options
      FROM generate_series(1, v_count) i;
    DROP SERVER IF EXISTS txnq CASCADE;
    EXECUTE format('CREATE SERVER txnq FOREIGN DATA WRAPPER plproxy OPTIONS (connection_lifetime %L, %s)',
                   '1800', v_options);
    CREATE USER MAPPING FOR PUBLIC SERVER txnq;
    GRANT USAGE ON FOREIGN SERVER txnq TO PUBLIC;
    -- A shard configured again with the same DSN keeps its advertised address.
    DELETE FROM txnq_cluster.shards WHERE shard >= v_count;
    INSERT INTO txnq_cluster.shards AS s (shard, dsn)
    SELECT i - 1, p_shards[i] FROM generate_series(1, v_count) i
    ON CONFLICT (shard) DO UPDATE
       SET dsn = excluded.dsn,
           advertised = CASE WHEN s.dsn = excluded.dsn THEN s.advertised END;
    RETURN v_count;
END;
$$;

-- txnq_cluster.align_ids: move an id sequence past p_at_least (the largest id a
-- shard holds already), never back.
CREATE OR REPLACE FUNCTION txnq_cluster.align_ids(p_sequence regclass, p_at_least bigint)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT CASE WHEN p_at_least > coalesce(s.last_value, 0)
                THEN pg_catalog.setval(p_sequence, p_at_least, true)
                ELSE coalesce(s.last_value, 0) END
      FROM pg_catalog.pg_sequences s
     WHERE format('%I.%I', s.schemaname, s.sequencename)::regclass = p_sequence
$$;

-- txnq_cluster.refuse: the error of every function a proxy does not route yet.
-- Errors: TQ030 always.
CREATE OR REPLACE FUNCTION txnq_cluster.refuse(p_function text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    -- Application transactions (txnq.attach(conn), consumer.process(conn))
    -- write into the application's own PostgreSQL transaction: that needs
    -- the partitions and the application's tables in one database.
    IF p_function IN ('stage_send_v1', 'stage_send_v2', 'send_at_commit_v1', 'send_at_commit_v2',
                      'stage_ack_v1', 'stage_ack_v2', 'publish_staged_v1', 'publish_staged_v2',
                      'discard_staged_v1', 'discard_staged_v2') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ030',
            MESSAGE = format('txnq.%s is not supported through a txnq cluster proxy: an application '
                             'transaction (txnq.attach(conn), consumer.process(conn)) writes messages and '
                             'acks in the application''s own database transaction, so the partitions and '
                             'the application''s tables must be in one database', p_function),
            HINT = 'use client.new_transaction() through the proxy (atomic across shards), or attach to a '
                   'single txnq database that holds your tables; nothing was changed';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'TQ030',
        MESSAGE = format('txnq.%s is not supported through a txnq cluster proxy yet', p_function),
        HINT = 'it needs the whole cluster in a way no slice routes yet (transaction '
               'inspection, grants, the console, an older function version): run it on one '
               'shard''s database, or see docs/cluster.md, "Not there yet"; nothing was changed';
END;
$$;

-- txnq_cluster.require_same: the one answer every shard gave, else TQ031 (the
-- shards' metadata disagree: a call reached some shards only).
CREATE OR REPLACE FUNCTION txnq_cluster.require_same(p_function text, p_low bigint, p_high bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF p_low IS DISTINCT FROM p_high THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ031',
            MESSAGE = format('the shards answered txnq.%s differently (%s to %s)', p_function, p_low, p_high),
            HINT = 'a metadata change reached some shards only: see `txnq cluster status` and docs/cluster.md';
    END IF;
    RETURN p_low;
END;
$$;

-- txnq_cluster.lock_ids: serialise the calls that impose an id on every shard,
-- so no two of them interleave on a shard (held to the end of the call).
CREATE OR REPLACE FUNCTION txnq_cluster.lock_ids()
RETURNS void
LANGUAGE sql AS $$
    SELECT pg_catalog.pg_advisory_xact_lock(pg_catalog.hashtext('txnq_cluster.ids'))
$$;
