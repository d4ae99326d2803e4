-- Spark through a txnq cluster proxy (docs/cluster.md "Spark", docs/spark.md).
-- Run by `txnq cluster init` after routing.sql, before refused.sql (the
-- routing rows below keep install_refusals off these functions).
--
-- What a Spark driver with TXNQ_DSN at the proxy needs:
--   - the committed-range bounds: spark_partition_bounds_v1 and
--     spark_first_offset_at_v1 answer each partition from its owner (owned);
--   - the shard map: txnq.cluster_shard_map_v1 says which shard owns each
--     partition of a topic and where that shard is (host, port, dbname only:
--     the Spark tasks connect to it with the user's own credentials), so the
--     tasks read each partition's messages on its shard directly, in parallel
--     (the proxy's committed_messages view stays refused: it carries no data);
--   - read_committed_v1 (plain SQL, the Python data source's pieces when they
--     are not given the shards) on the partition's shard (partition);
--   - the incremental ingestions' bookkeeping (txnq.spark_ingestions), kept
--     on every shard under the same name and run number, each shard's
--     offsets for the partitions it owns (-1 for the others). A plan is
--     written shard after shard, the sink runs, the commit is written shard
--     after shard; PL/Proxy commits on each shard on its own, so a crash can
--     leave a plan or a commit on some shards only. Those two states are
--     settled by the next run (spark_ingestion_create_v1, under the run's
--     advisory lock on the proxy): a commit on some shards means the sink
--     returned, so the other shards commit too (rolled forward); a plan on
--     some shards means the sink never ran, so the other shards plan an empty
--     range and the run repeats the planned one. Read through the proxy,
--     an ingestion shows those states merged the same way.

-- ---------------------------------------------------------------- owned bounds

CREATE OR REPLACE FUNCTION txnq_cluster.spark_partition_bounds_on(p_shard integer, p_topic_id integer)
RETURNS TABLE (partition integer, max_read_offset bigint, earliest_offset bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT b.partition, b.max_read_offset, b.earliest_offset
      FROM txnq.spark_partition_bounds_v1(p_topic_id) b;
$$;

-- Each partition's max read offset and earliest offset from its owner (the
-- other shards' empty head rows say -1 and 0).
CREATE OR REPLACE FUNCTION txnq.spark_partition_bounds_v1(p_topic_id integer)
RETURNS TABLE (partition integer, max_read_offset bigint, earliest_offset bigint)
LANGUAGE sql AS $$
    SELECT b.partition, b.max_read_offset, b.earliest_offset
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.spark_partition_bounds_on(s, p_topic_id) b
     WHERE txnq_cluster.shard_of(p_topic_id, b.partition) = s
     ORDER BY b.partition
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.spark_first_offset_at_on(
    p_shard integer, p_topic_id integer, p_at timestamptz)
RETURNS TABLE (partition integer, first_offset bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT f.partition, f.first_offset FROM txnq.spark_first_offset_at_v1(p_topic_id, p_at) f;
$$;

CREATE OR REPLACE FUNCTION txnq.spark_first_offset_at_v1(p_topic_id integer, p_at timestamptz)
RETURNS TABLE (partition integer, first_offset bigint)
LANGUAGE sql AS $$
    SELECT f.partition, f.first_offset
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.spark_first_offset_at_on(s, p_topic_id, p_at) f
     WHERE txnq_cluster.shard_of(p_topic_id, f.partition) = s
     ORDER BY f.partition
$$;

-- One partition's committed messages, on its shard (the rows cross PL/Proxy
-- as text: for plain SQL; Spark reads the shards directly).
CREATE OR REPLACE FUNCTION txnq.read_committed_v1(
    p_topic_id integer, p_partition integer, p_start_offset bigint, p_end_offset bigint)
RETURNS TABLE (topic text, partition integer, entry_offset bigint, batch_index integer, key bytea,
               properties jsonb, payload bytea, publish_time timestamptz, event_time timestamptz,
               txn_id text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
$$;

-- ---------------------------------------------------------------- shard map

-- txnq_cluster.dsn_word: one word of a libpq key=value DSN (as
-- txnq_cluster.configure stores them), unquoted; NULL when absent.
CREATE OR REPLACE FUNCTION txnq_cluster.dsn_word(p_dsn text, p_word text)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT regexp_replace(coalesce(m[3], m[4]), '\\(.)', '\1', 'g')
      FROM regexp_matches(p_dsn, '(^|\s)([A-Za-z_]+)\s*=\s*(?:''((?:[^''\\]|\\.)*)''|([^\s'']+))', 'g') m
     WHERE m[2] = p_word
     LIMIT 1
$$;

-- txnq_cluster.client_location: where clients reach a shard, one libpq word
-- of its location: the advertised address's (txnq_cluster.advertise), else
-- the proxy's DSN's. An advertised host without a hostaddr drops the DSN's
-- hostaddr and the other way round (libpq prefers hostaddr); a word the
-- address leaves out (port, dbname) is the DSN's.
CREATE OR REPLACE FUNCTION txnq_cluster.client_location(p_dsn text, p_advertised text, p_word text)
RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
               WHEN p_advertised IS NULL THEN txnq_cluster.dsn_word(p_dsn, p_word)
               WHEN txnq_cluster.dsn_word(p_advertised, p_word) IS NOT NULL
                   THEN txnq_cluster.dsn_word(p_advertised, p_word)
               WHEN p_word = 'hostaddr' AND txnq_cluster.dsn_word(p_advertised, 'host') IS NOT NULL
                   THEN NULL
               WHEN p_word = 'host' AND txnq_cluster.dsn_word(p_advertised, 'hostaddr') IS NOT NULL
                   THEN NULL
               ELSE txnq_cluster.dsn_word(p_dsn, p_word)
           END
$$;

-- txnq.cluster_shard_map_v1: for partitions 0 .. p_partitions - 1 of a topic,
-- the shard that owns each and where clients reach that shard: host,
-- hostaddr, port and dbname (txnq_cluster.client_location: the advertised
-- address, else the DSN the proxy routes to), nothing else (no user, no
-- password: a Spark task connects with the caller's own credentials). Only on
-- a proxy: a txnq.spark read asks for it to read every partition on its shard,
-- a consumer to LISTEN there, a client to take the direct route.
-- Errors: TQ005 a partition count that is NULL, negative or above 100000.
CREATE OR REPLACE FUNCTION txnq.cluster_shard_map_v1(p_topic_id integer, p_partitions integer)
RETURNS TABLE (partition integer, shard integer, host text, hostaddr text, port text, dbname text)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_topic_id IS NULL OR p_partitions IS NULL OR p_partitions < 0 OR p_partitions > 100000 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('cluster_shard_map_v1(%s, %s): give a topic id and a partition count '
                             'from 0 to 100000', coalesce(p_topic_id::text, 'NULL'),
                             coalesce(p_partitions::text, 'NULL'));
    END IF;
    RETURN QUERY
    SELECT p, s.shard, txnq_cluster.client_location(s.dsn, s.advertised, 'host'),
           txnq_cluster.client_location(s.dsn, s.advertised, 'hostaddr'),
           txnq_cluster.client_location(s.dsn, s.advertised, 'port'),
           txnq_cluster.client_location(s.dsn, s.advertised, 'dbname')
      FROM generate_series(0, p_partitions - 1) p
      JOIN txnq_cluster.shards s ON s.shard = txnq_cluster.shard_of(p_topic_id, p)
     ORDER BY p;
END;
$$;

-- ---------------------------------------------------------------- ingestions

CREATE OR REPLACE FUNCTION txnq_cluster.spark_ingestion_create_all(p_name text, p_topic_id integer)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT 1 FROM txnq.spark_ingestion_create_v1(p_name, p_topic_id);
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.spark_ingestion_get_on(p_shard integer, p_name text)
RETURNS TABLE (name text, topic_id integer, committed_run bigint, committed_offsets bigint[],
               planned_run bigint, planned_offsets bigint[], updated_at timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT g.name, g.topic_id, g.committed_run, g.committed_offsets, g.planned_run,
           g.planned_offsets, g.updated_at
      FROM txnq.spark_ingestion_get_v1(p_name) g;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.spark_ingestion_list_on(p_shard integer)
RETURNS TABLE (name text, topic text, committed_run bigint, committed_offsets bigint[],
               planned_run bigint, planned_offsets bigint[], updated_at timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT l.name, l.topic, l.committed_run, l.committed_offsets, l.planned_run, l.planned_offsets,
           l.updated_at
      FROM txnq.spark_ingestion_list_v1() l;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.spark_ingestion_plan_on(
    p_shard integer, p_name text, p_planned_offsets bigint[])
RETURNS SETOF bigint
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT p FROM txnq.spark_ingestion_plan_v1(p_name, p_planned_offsets) p;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.spark_ingestion_commit_on(p_shard integer, p_name text, p_run bigint)
RETURNS SETOF bigint
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT c FROM txnq.spark_ingestion_commit_v1(p_name, p_run) c;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.spark_ingestion_delete_all(p_name text)
RETURNS SETOF text
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT d FROM txnq.spark_ingestion_delete_v1(p_name) d;
$$;

-- Every shard's row of one ingestion (p_list false: spark_ingestion_get_v1,
-- which checks consume on its topic) or of every ingestion the caller may see
-- (p_list true: spark_ingestion_list_v1).
CREATE OR REPLACE FUNCTION txnq_cluster.spark_ingestion_rows(p_name text, p_list boolean)
RETURNS TABLE (shard integer, name text, topic text, topic_id integer, committed_run bigint,
               committed_offsets bigint[], planned_run bigint, planned_offsets bigint[],
               updated_at timestamptz)
LANGUAGE sql AS $$
    SELECT s, g.name, NULL::text, g.topic_id, g.committed_run, g.committed_offsets, g.planned_run,
           g.planned_offsets, g.updated_at
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.spark_ingestion_get_on(s, p_name) g
     WHERE NOT p_list
    UNION ALL
    SELECT s, l.name, l.topic, NULL::integer, l.committed_run, l.committed_offsets, l.planned_run,
           l.planned_offsets, l.updated_at
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.spark_ingestion_list_on(s) l
     WHERE p_list
$$;

-- The shards' rows of ingestions merged into one per ingestion, as a shard
-- would show it. Each shard holds -1 for the partitions it does not own, so
-- element i is the largest element i over the shards (the owner's). The
-- committed run is the highest any shard committed: a shard still planning
-- that run counts it committed too (another shard's commit says its sink
-- returned), its planned offsets as committed. A plan of the next run on some
-- shards is the pending plan, the other shards' partitions planned empty.
CREATE OR REPLACE FUNCTION txnq_cluster.spark_ingestions_merged(p_name text, p_list boolean)
RETURNS TABLE (name text, topic text, topic_id integer, committed_run bigint, committed_offsets bigint[],
               planned_run bigint, planned_offsets bigint[], updated_at timestamptz)
LANGUAGE sql AS $$
    WITH s AS MATERIALIZED (
        SELECT * FROM txnq_cluster.spark_ingestion_rows(p_name, p_list)
    ), m AS (
        SELECT s.name, max(s.committed_run) AS top FROM s GROUP BY s.name
    ), t AS (
        SELECT s.name, s.shard, s.topic, s.topic_id, s.updated_at, m.top,
               CASE WHEN s.committed_run < m.top AND s.planned_run = m.top THEN s.planned_offsets
                    ELSE s.committed_offsets END AS done,
               coalesce(s.committed_run = m.top AND s.planned_run = m.top + 1, false) AS planning,
               s.planned_offsets
          FROM s JOIN m ON m.name = s.name
    )
    SELECT t.name, min(t.topic), min(t.topic_id), t.top,
           (SELECT coalesce(array_agg(x.v ORDER BY x.i), '{}')
              FROM (SELECT u.i, max(u.v) AS v
                      FROM t t2, unnest(t2.done) WITH ORDINALITY u(v, i)
                     WHERE t2.name = t.name GROUP BY u.i) x),
           CASE WHEN bool_or(t.planning) THEN t.top + 1 END,
           CASE WHEN bool_or(t.planning) THEN
               (SELECT coalesce(array_agg(x.v ORDER BY x.i), '{}')
                  FROM (SELECT u.i, max(u.v) AS v
                          FROM t t2,
                               unnest(CASE WHEN t2.planning THEN t2.planned_offsets ELSE t2.done END)
                                   WITH ORDINALITY u(v, i)
                         WHERE t2.name = t.name GROUP BY u.i) x)
           END,
           max(t.updated_at)
      FROM t
     GROUP BY t.name, t.top
     ORDER BY t.name
$$;

CREATE OR REPLACE FUNCTION txnq.spark_ingestion_get_v1(p_name text)
RETURNS TABLE (name text, topic_id integer, committed_run bigint, committed_offsets bigint[],
               planned_run bigint, planned_offsets bigint[], updated_at timestamptz)
LANGUAGE sql AS $$
    SELECT m.name, m.topic_id, m.committed_run, m.committed_offsets, m.planned_run, m.planned_offsets,
           m.updated_at
      FROM txnq_cluster.spark_ingestions_merged(p_name, false) m
$$;

CREATE OR REPLACE FUNCTION txnq.spark_ingestion_list_v1()
RETURNS TABLE (name text, topic text, committed_run bigint, committed_offsets bigint[],
               planned_run bigint, planned_offsets bigint[], updated_at timestamptz)
LANGUAGE sql AS $$
    SELECT m.name, m.topic, m.committed_run, m.committed_offsets, m.planned_run, m.planned_offsets,
           m.updated_at
      FROM txnq_cluster.spark_ingestions_merged(NULL, true) m
     ORDER BY m.name
$$;

-- Create the ingestion on every shard, then settle what a run that died
-- half-way through the shards left (see the top of this file): a commit on
-- some shards is finished on the others; a plan on some shards is completed
-- on the others with an empty range (their committed offsets), so the run
-- that repeats it repeats the same range. Every ingestion run calls this
-- first, under its advisory lock. Errors: the shards' (TQ005, TQ001, TQ018);
-- TQ031 a state no crash leaves (e.g. a shard two runs behind).
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_create_v1(p_name text, p_topic_id integer)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    r record;
    v_top bigint;
    v_length integer;
BEGIN
    PERFORM count(*) FROM txnq_cluster.spark_ingestion_create_all(p_name, p_topic_id);
    SELECT max(s.committed_run) INTO v_top FROM txnq_cluster.spark_ingestion_rows(p_name, false) s;
    FOR r IN SELECT * FROM txnq_cluster.spark_ingestion_rows(p_name, false) s ORDER BY s.shard LOOP
        IF r.committed_run < v_top THEN
            IF r.planned_run IS DISTINCT FROM v_top THEN
                RAISE EXCEPTION USING ERRCODE = 'TQ031',
                    MESSAGE = format('ingestion %s: shard %s has committed run %s and plans %s, '
                                     'other shards committed run %s', quote_literal(p_name), r.shard,
                                     r.committed_run, coalesce(r.planned_run::text, 'nothing'), v_top),
                    HINT = 'a change reached some shards only: drop the ingestion '
                           '(txnq.spark.drop_ingestion) and start it again';
            END IF;
            PERFORM count(*) FROM txnq_cluster.spark_ingestion_commit_on(r.shard, p_name, v_top);
        ELSIF r.planned_run IS NOT NULL THEN
            v_length := greatest(coalesce(v_length, 0), cardinality(r.planned_offsets));
        END IF;
    END LOOP;
    IF v_length IS NULL THEN
        RETURN;
    END IF;
    FOR r IN SELECT * FROM txnq_cluster.spark_ingestion_rows(p_name, false) s
              WHERE s.planned_run IS NULL ORDER BY s.shard LOOP
        PERFORM count(*) FROM txnq_cluster.spark_ingestion_plan_on(
            r.shard, p_name,
            r.committed_offsets
                || array_fill(-1::bigint, ARRAY[greatest(v_length - cardinality(r.committed_offsets), 0)]));
    END LOOP;
END;
$$;

-- Plan a run on every shard in turn, each shard the offsets of the
-- partitions it owns (-1 for the others, which its empty head rows accept).
-- Returns the planned run, none when a plan is pending (shard 0 has one: no
-- shard planned anything). Offsets a shard refuses (TQ005) after an earlier
-- shard planned leave a plan on some shards: the next run settles it (above).
-- Errors: the shards' (TQ005, TQ001, TQ018); TQ031 shards answering other runs.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_plan_v1(p_name text, p_planned_offsets bigint[])
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_topic integer;
    v_shard integer;
    v_run bigint;
    v_first bigint;
    v_offsets bigint[];
BEGIN
    SELECT min(g.topic_id) INTO v_topic FROM txnq_cluster.spark_ingestion_get_on(0, p_name) g;
    IF v_topic IS NULL THEN
        RETURN;  -- no such ingestion: none, as on a shard
    END IF;
    FOR v_shard IN 0 .. txnq_cluster.shard_count() - 1 LOOP
        IF p_planned_offsets IS NULL OR array_ndims(p_planned_offsets) IS DISTINCT FROM 1
           OR array_lower(p_planned_offsets, 1) <> 1
           OR array_position(p_planned_offsets, NULL) IS NOT NULL THEN
            v_offsets := p_planned_offsets;  -- shard 0 refuses it with its own TQ005
        ELSE
            SELECT array_agg(CASE WHEN txnq_cluster.shard_of(v_topic, (u.i - 1)::integer) = v_shard
                                  THEN u.o ELSE -1 END ORDER BY u.i)
              INTO v_offsets
              FROM unnest(p_planned_offsets) WITH ORDINALITY u(o, i);
        END IF;
        v_run := NULL;
        SELECT p INTO v_run FROM txnq_cluster.spark_ingestion_plan_on(v_shard, p_name, v_offsets) p;
        IF v_shard = 0 THEN
            IF v_run IS NULL THEN
                RETURN;
            END IF;
            v_first := v_run;
        ELSIF v_run IS DISTINCT FROM v_first THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ031',
                MESSAGE = format('ingestion %s: shard 0 planned run %s, shard %s %s', quote_literal(p_name),
                                 v_first, v_shard, coalesce('run ' || v_run, 'nothing (a plan is pending there)')),
                HINT = 'the next run of the ingestion settles a plan left on some shards';
        END IF;
    END LOOP;
    RETURN NEXT v_first;
END;
$$;

-- Commit a run on every shard in turn (each commits on its own: a crash
-- between two shards is finished by the next run's create, above). Returns
-- the run when a shard committed it, none when no shard had it planned.
CREATE OR REPLACE FUNCTION txnq.spark_ingestion_commit_v1(p_name text, p_run bigint)
RETURNS SETOF bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_shard integer;
    v_run bigint;
    v_done boolean := false;
BEGIN
    FOR v_shard IN 0 .. txnq_cluster.shard_count() - 1 LOOP
        v_run := NULL;
        SELECT c INTO v_run FROM txnq_cluster.spark_ingestion_commit_on(v_shard, p_name, p_run) c;
        v_done := v_done OR v_run IS NOT NULL;
    END LOOP;
    IF v_done THEN
        RETURN NEXT p_run;
    END IF;
END;
$$;

CREATE OR REPLACE FUNCTION txnq.spark_ingestion_delete_v1(p_name text)
RETURNS SETOF text
LANGUAGE sql AS $$
    SELECT DISTINCT d FROM txnq_cluster.spark_ingestion_delete_all(p_name) d
$$;

-- ---------------------------------------------------------------- routing

-- 'proxy': answered by the proxy from its own configuration (cluster.sql
-- keeps the list of rules, and gives it to a proxy made before this rule).

INSERT INTO txnq_cluster.routing (function_name, rule, note) VALUES
    ('spark_partition_bounds_v1', 'owned', 'Spark: a committed range''s bounds, each partition from its owner'),
    ('spark_first_offset_at_v1', 'owned', 'Spark: a range starting at a time, each partition from its owner'),
    ('read_committed_v1', 'partition', 'one partition''s committed messages (rows as text: Spark reads the shards directly)'),
    ('cluster_shard_map_v1', 'proxy', 'Spark: which shard owns each partition, and its host, port and dbname'),
    ('spark_ingestion_create_v1', 'all', 'Spark ingestion: on every shard; settles a run that died between shards'),
    ('spark_ingestion_plan_v1', 'all', 'Spark ingestion: each shard plans the partitions it owns'),
    ('spark_ingestion_commit_v1', 'all', 'Spark ingestion: committed shard after shard'),
    ('spark_ingestion_delete_v1', 'all', 'Spark ingestion: forgotten on every shard'),
    ('spark_ingestion_get_v1', 'summed', 'Spark ingestion: each partition''s offsets from its owner, runs merged'),
    ('spark_ingestion_list_v1', 'summed', 'Spark ingestion: each partition''s offsets from its owner, runs merged')
ON CONFLICT (function_name) DO UPDATE SET rule = EXCLUDED.rule, note = EXCLUDED.note;

-- ---------------------------------------------------------------- advertised addresses

-- txnq_cluster.advertise: where clients reach shard p_shard (`txnq cluster
-- advertise`), when the address the proxy uses is not theirs (a socket
-- directory, a private network): libpq words host, hostaddr, port and dbname
-- only (credentials are each client's own). NULL or '' clears it. Returns
-- the shard's location as clients now get it. Errors: TQ005 no such shard, a
-- word other than those four, or text that is not such words.
CREATE OR REPLACE FUNCTION txnq_cluster.advertise(p_shard integer, p_address text)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_address text := nullif(btrim(coalesce(p_address, '')), '');
    v_words text[];
    v_rest text;
    v_dsn text;
BEGIN
    SELECT s.dsn INTO v_dsn FROM txnq_cluster.shards s WHERE s.shard = p_shard FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('the cluster has no shard %s', coalesce(p_shard::text, 'NULL')),
            HINT = 'give a shard number that `txnq cluster status` shows';
    END IF;
    IF v_address IS NOT NULL THEN
        SELECT array_agg(m[2]) INTO v_words
          FROM regexp_matches(v_address, '(^|\s)([A-Za-z_]+)\s*=', 'g') m;
        v_rest := regexp_replace(v_address,
                                 '(^|\s)[A-Za-z_]+\s*=\s*(''((?:[^''\\]|\\.)*)''|[^\s'']+)', '', 'g');
        IF v_words IS NULL OR NOT v_words <@ ARRAY['host', 'hostaddr', 'port', 'dbname']
           OR btrim(v_rest) <> '' THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('%L is no address of a shard: give libpq words host, hostaddr, port '
                                 'and dbname only, e.g. ''host=10.0.0.7 port=5432''', v_address),
                HINT = 'credentials are each client''s own; nothing was changed';
        END IF;
    END IF;
    UPDATE txnq_cluster.shards SET advertised = v_address WHERE shard = p_shard;
    RETURN concat_ws(' ',
        'host=' || txnq_cluster.client_location(v_dsn, v_address, 'host'),
        'hostaddr=' || txnq_cluster.client_location(v_dsn, v_address, 'hostaddr'),
        'port=' || txnq_cluster.client_location(v_dsn, v_address, 'port'),
        'dbname=' || txnq_cluster.client_location(v_dsn, v_address, 'dbname'));
END;
$$;
-- Only the proxy's owner (who ran `txnq cluster init`) may redirect clients.
REVOKE ALL ON FUNCTION txnq_cluster.advertise(integer, text) FROM PUBLIC;
