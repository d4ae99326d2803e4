-- The rest of the inspection views over the whole cluster (docs/cluster.md,
-- "Inspection views over the whole cluster"), after views.sql: every view of
-- a shard's schema txnq answers through the proxy with the same columns
-- (txnq.transaction_status: txn_inspection.sql, run after this file).
--
-- Two kinds:
--
--   - The messages (txnq.messages, txnq.committed_messages): each partition's
--     rows from the shard that owns it, one PL/Proxy call per partition
--     (RUN ON txnq_cluster.route(topic_id, partition)) over the list of the
--     partitions of the topics the caller may see (shard 0's
--     txnq.list_topics_v1). The view's topic, topic_id and partition columns
--     come from that list, so a caller's WHERE on them filters the list
--     before any call is made: only the partitions asked for are read. A
--     condition on entry_offset (or anything else) cannot reach a PL/Proxy
--     call from a view: the whole partition crosses the proxy, as text, and
--     is filtered here. For an offset range call txnq.read_committed_v1
--     (committed messages, routed) or txnq_cluster.messages_of /
--     committed_messages_of below with their offset bounds.
--
--   - What each shard keeps of its own (entry logs, job failures, lifecycle
--     runs, console samples and actions, grants): every shard's rows
--     unioned, with the shard's own columns (ids such as run_id or
--     entry_log_id are per shard and repeat across shards). Which shard a
--     row comes from does not fit those columns; txnq_cluster.<view> has the
--     same rows with a first column `shard` (e.g.
--     SELECT * FROM txnq_cluster.job_failure_status). topic_grants is
--     merged instead: one row per grant any shard holds (below), and
--     txnq_cluster.topic_grants says which shards hold it.
--
-- The PL/Proxy functions return the proxy views' row types (made by
-- txnq_cluster.install_refusals with the shards' columns), so views.sql's
-- note holds here too: after an upgrade that changes one of these views'
-- columns, drop the proxy's view with CASCADE and run `cluster init` again.

-- ---------------------------------------------------------------- messages

-- The partitions of the topics the caller may see, from shard 0 (every shard
-- holds every topic's metadata alike).
CREATE OR REPLACE FUNCTION txnq_cluster.topic_partitions_on(p_shard integer)
RETURNS TABLE (topic_id integer, topic text, partition integer)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT l.topic_id, l.name AS topic, p.partition
      FROM txnq.list_topics_v1() l
     CROSS JOIN LATERAL generate_series(0, l.partitions - 1) AS p(partition);
$$;

-- One partition's messages (txnq.messages) from its owner, at offsets from
-- p_from_offset to p_to_offset (NULL: unbounded).
CREATE OR REPLACE FUNCTION txnq_cluster.messages_of(
    p_topic_id integer, p_topic text, p_partition integer,
    p_from_offset bigint DEFAULT NULL, p_to_offset bigint DEFAULT NULL)
RETURNS SETOF txnq.messages
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT m.* FROM txnq.messages m
     WHERE m.topic = p_topic AND m.partition = p_partition
       AND (p_from_offset IS NULL OR m.entry_offset >= p_from_offset)
       AND (p_to_offset IS NULL OR m.entry_offset <= p_to_offset);
$$;

-- One partition's committed messages (txnq.committed_messages) from its
-- owner, at offsets from p_from_offset to p_to_offset (NULL: unbounded).
CREATE OR REPLACE FUNCTION txnq_cluster.committed_messages_of(
    p_topic_id integer, p_partition integer,
    p_from_offset bigint DEFAULT NULL, p_to_offset bigint DEFAULT NULL)
RETURNS SETOF txnq.committed_messages
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT m.* FROM txnq.committed_messages m
     WHERE m.topic_id = p_topic_id AND m.partition = p_partition
       AND (p_from_offset IS NULL OR m.entry_offset >= p_from_offset)
       AND (p_to_offset IS NULL OR m.entry_offset <= p_to_offset);
$$;

-- Each partition's messages from its owner; WHERE topic / partition picks the
-- partitions before they are read.
CREATE OR REPLACE VIEW txnq.messages AS
SELECT p.topic,
       p.partition,
       m.entry_offset,
       m.batch_index,
       m.publish_time,
       m.event_time,
       m.key,
       m.properties,
       m.payload,
       m.producer_id,
       m.sequence,
       m.entry_log_id,
       m.ledger_id
  FROM txnq_cluster.topic_partitions_on(0) p
 CROSS JOIN LATERAL txnq_cluster.messages_of(p.topic_id, p.topic, p.partition) m;

-- Each partition's committed messages from its owner; WHERE topic, topic_id
-- / partition picks the partitions before they are read.
CREATE OR REPLACE VIEW txnq.committed_messages AS
SELECT p.topic,
       p.topic_id,
       p.partition,
       m.entry_offset,
       m.batch_index,
       m.batch_size,
       m.key,
       m.properties,
       m.payload,
       m.publish_time,
       m.event_time,
       m.txn_id
  FROM txnq_cluster.topic_partitions_on(0) p
 CROSS JOIN LATERAL txnq_cluster.committed_messages_of(p.topic_id, p.partition) m;

-- ---------------------------------------------------------------- each shard's own

-- For each view: txnq_cluster.<view>_on(shard) (a shard's rows, RUN ON a
-- shard number), txnq_cluster.<view> (every shard's rows, `shard` first) and
-- the proxy's txnq.<view> (the same rows with the shard's columns only).
DO $$
DECLARE
    v_view text;
    v_columns text;
BEGIN
    FOREACH v_view IN ARRAY ARRAY['entry_log_status', 'job_failure_status', 'gc_history',
                                  'storage_history', 'topic_history', 'console_action_log',
                                  'topic_grants'] LOOP
        EXECUTE format(
            'CREATE OR REPLACE FUNCTION txnq_cluster.%I(p_shard integer) RETURNS SETOF txnq.%I '
            'LANGUAGE plproxy AS %L',
            v_view || '_on', v_view,
            format('CLUSTER %L; RUN ON p_shard; SELECT * FROM txnq.%I;', 'txnq', v_view));
        EXECUTE format(
            'CREATE OR REPLACE VIEW txnq_cluster.%I AS '
            'SELECT s AS shard, r.* FROM generate_series(0, txnq_cluster.shard_count() - 1) s, '
            'LATERAL txnq_cluster.%I(s) r',
            v_view, v_view || '_on');
        CONTINUE WHEN v_view = 'topic_grants';  -- merged below
        SELECT string_agg(format('r.%I', a.attname), ', ' ORDER BY a.attnum)
          INTO v_columns
          FROM pg_catalog.pg_attribute a
         WHERE a.attrelid = format('txnq.%I', v_view)::regclass AND a.attnum > 0 AND NOT a.attisdropped;
        EXECUTE format('CREATE OR REPLACE VIEW txnq.%I AS SELECT %s FROM txnq_cluster.%I r',
                       v_view, v_columns, v_view);
    END LOOP;
END $$;

-- One row per grant that any shard holds (grants are given on each shard, at
-- different moments): granted_by and granted_at of the shard that holds it
-- longest, role_exists only if the role exists on every shard that holds it.
-- A grant some shards lack still shows (each shard enforces it on the
-- partitions it owns): txnq_cluster.topic_grants says which shards hold it.
CREATE OR REPLACE VIEW txnq.topic_grants AS
SELECT DISTINCT ON (g.role, g.resource, g.kind, g.action)
       g.role, g.resource, g.kind, g.action, g.granted_by, g.granted_at,
       bool_and(g.role_exists) OVER (PARTITION BY g.role, g.resource, g.kind, g.action) AS role_exists
  FROM txnq_cluster.topic_grants g
 ORDER BY g.role, g.resource, g.kind, g.action, g.granted_at, g.shard;

-- The grants the caller may see (`txnq topics permissions`, the admin's
-- permissions()): each shard's txnq.topic_permissions_v1 (it checks its
-- arguments and who sees what), merged as txnq.topic_grants is, in its order.
CREATE OR REPLACE FUNCTION txnq_cluster.topic_permissions_on(p_shard integer, p_role text, p_topic text)
RETURNS TABLE (role text, resource text, kind text, action text, granted_by text,
               granted_at timestamptz, role_exists boolean)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT g.role, g.resource, g.kind, g.action, g.granted_by, g.granted_at, g.role_exists
      FROM txnq.topic_permissions_v1(p_role, p_topic) g;
$$;

CREATE OR REPLACE FUNCTION txnq.topic_permissions_v1(p_role text DEFAULT NULL, p_topic text DEFAULT NULL)
RETURNS TABLE (role text, resource text, kind text, action text, granted_by text,
               granted_at timestamptz, role_exists boolean)
LANGUAGE sql STABLE AS $$
    SELECT m.role, m.resource, m.kind, m.action, m.granted_by, m.granted_at, m.role_exists
      FROM (SELECT DISTINCT ON (g.role, g.resource, g.kind, g.action)
                   g.role, g.resource, g.kind, g.action, g.granted_by, g.granted_at,
                   bool_and(g.role_exists) OVER (PARTITION BY g.role, g.resource, g.kind, g.action)
                       AS role_exists
              FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
                   LATERAL txnq_cluster.topic_permissions_on(s, p_role, p_topic) g
             ORDER BY g.role, g.resource, g.kind, g.action, g.granted_at, s) m
     ORDER BY m.resource, m.kind, m.role, m.action
$$;

-- ---------------------------------------------------------------- routing

-- 'union': every shard's own rows (cluster.sql's check of the rules has it).
INSERT INTO txnq_cluster.routing (function_name, rule, note) VALUES
    ('messages', 'partition', 'view: each partition from its owner, one call per partition; '
                              'WHERE topic/partition picks the partitions, offsets are filtered on the proxy'),
    ('committed_messages', 'partition', 'view: each partition from its owner, one call per partition; '
                                        'WHERE topic/topic_id/partition picks the partitions, offsets are '
                                        'filtered on the proxy'),
    ('entry_log_status', 'union', 'view: every shard''s entry logs (txnq_cluster.entry_log_status: with the shard)'),
    ('job_failure_status', 'union', 'view: every shard''s job failures (txnq_cluster.job_failure_status: with the shard)'),
    ('gc_history', 'union', 'view: every shard''s lifecycle runs (txnq_cluster.gc_history: with the shard)'),
    ('storage_history', 'union', 'view: every shard''s storage samples (txnq_cluster.storage_history: with the shard)'),
    ('topic_history', 'union', 'view: every shard''s samples of its partitions (txnq_cluster.topic_history: with the shard)'),
    ('console_action_log', 'union', 'view: every shard''s console actions (txnq_cluster.console_action_log: with the shard)'),
    ('topic_permissions_v1', 'union', 'the grants the caller may see, merged as view topic_grants'),
    ('topic_grants', 'union', 'view: one row per grant any shard holds, the earliest '
                              '(txnq_cluster.topic_grants: every shard''s, with the shard)')
ON CONFLICT (function_name) DO UPDATE SET rule = EXCLUDED.rule, note = EXCLUDED.note;
