-- The inspection views an operator reads first, over the whole cluster
-- (docs/cluster.md, "Inspection views"): the proxy's txnq.partition_status,
-- ledger_status, topic_status, cursor_status and subscription_status have the columns of the
-- shards' views and read every shard. Run by `txnq cluster init` after
-- txnq_cluster.install_refusals, which made every view of the shards' schema
-- a refusing view of the same columns: these replace five of them (same
-- columns, so CREATE OR REPLACE VIEW takes them), and the PL/Proxy functions
-- return those views' row types. PL/Proxy receives these rows as text
-- (timestamptz, arrays, txnq's enums): fine for inspection, not a data path.
--
-- Per-partition rows (partition_status, ledger_status, cursor_status) come only from the
-- shard that owns the partition (txnq_cluster.shard_of), so the empty head
-- rows the other shards keep never show, twice or at all. Per-topic and
-- per-subscription rows (topic_status, subscription_status) take the metadata
-- from shard 0 (alike on every shard) and add the counts up: topic_status over
-- the proxy's partition_status, subscription_status over every shard's own
-- subscription_status (a shard's backlog on a partition it does not own is 0:
-- its head row is empty).

-- A shard's rows of one view; RUN ON a shard number (0 .. N - 1).
CREATE OR REPLACE FUNCTION txnq_cluster.partition_status_on(p_shard integer)
RETURNS SETOF txnq.partition_status
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT * FROM txnq.partition_status;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.ledger_status_on(p_shard integer)
RETURNS SETOF txnq.ledger_status
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT * FROM txnq.ledger_status;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.topic_status_on(p_shard integer)
RETURNS SETOF txnq.topic_status
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT * FROM txnq.topic_status;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.cursor_status_on(p_shard integer)
RETURNS SETOF txnq.cursor_status
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT * FROM txnq.cursor_status;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.subscription_status_on(p_shard integer)
RETURNS SETOF txnq.subscription_status
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT * FROM txnq.subscription_status;
$$;

-- Each partition from its owner.
CREATE OR REPLACE VIEW txnq.partition_status AS
SELECT r.*
  FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
       LATERAL txnq_cluster.partition_status_on(s) r
 WHERE txnq_cluster.shard_of(r.topic_id, r.partition) = s;

-- Each partition's ledgers from its owner (the other shards hold an empty
-- open ledger of it).
CREATE OR REPLACE VIEW txnq.ledger_status AS
SELECT r.*
  FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
       LATERAL txnq_cluster.ledger_status_on(s) r
 WHERE txnq_cluster.shard_of(r.topic_id, r.partition) = s;

-- The partitions of the default dead-letter topics (<topic>-<subscription>-DLQ)
-- a shard holds: name, partition, next offset, the topic's partition count.
CREATE OR REPLACE FUNCTION txnq_cluster.dead_letter_heads_on(p_shard integer)
RETURNS TABLE (topic text, topic_id integer, partition integer, next_offset bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT ps.topic::text AS topic, ps.topic_id, ps.partition, ps.next_offset
      FROM txnq.partition_status ps
     WHERE ps.topic LIKE '%-DLQ';
$$;

-- Each cursor from the owner of its partition. dead_letters (the entries of
-- the default dead-letter topic's partition p % n, NULL without that topic)
-- from the owner of that partition: a cursor's shard need not own it
-- (shared.sql moves dead letters to the dead-letter partition's owner).
CREATE OR REPLACE VIEW txnq.cursor_status AS
WITH owned AS (
    SELECT r.*
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.cursor_status_on(s) r
     WHERE txnq_cluster.shard_of(r.topic_id, r.partition) = s
), letters AS MATERIALIZED (
    SELECT d.topic, d.partition, d.next_offset, count(*) OVER (PARTITION BY d.topic_id) AS partitions
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.dead_letter_heads_on(s) d
     WHERE txnq_cluster.shard_of(d.topic_id, d.partition) = s
)
SELECT c.topic, c.topic_id, c.subscription, c.subscription_id, c.subscription_type, c.isolation,
       c.partition, c.mark_delete_offset, c.readable_offset, c.lag_entries, c.individual_acks,
       c.in_flight, c.redelivering, c.redeliveries,
       CASE WHEN c.dead_letters IS NULL THEN NULL
            ELSE coalesce((SELECT l.next_offset FROM letters l
                            WHERE l.topic = c.topic || '-' || c.subscription || '-DLQ'
                              AND l.partition = c.partition % l.partitions),
                          c.dead_letters) END AS dead_letters,
       c.updated_at
  FROM owned c;

-- Policies and subscription count from shard 0; what the partitions hold
-- summed over the proxy's partition_status (each partition once, from its
-- owner), as a shard's topic_status sums its own partition_status.
CREATE OR REPLACE VIEW txnq.topic_status AS
SELECT m.topic,
       m.topic_id,
       m.partitions,
       m.retention_seconds,
       m.retention_bytes,
       m.ttl_seconds,
       m.max_message_bytes,
       m.created_at,
       m.subscriptions,
       coalesce(p.entries_written, 0)::bigint AS entries_written,
       coalesce(p.live_ledgers, 0)::bigint AS live_ledgers,
       coalesce(p.live_entries, 0)::bigint AS live_entries,
       coalesce(p.live_messages, 0)::bigint AS live_messages,
       coalesce(p.live_bytes, 0)::bigint AS live_bytes,
       coalesce(p.ongoing_txns, 0)::bigint AS ongoing_txns,
       p.last_publish_time
  FROM txnq_cluster.topic_status_on(0) m
  LEFT JOIN (
        SELECT ps.topic_id,
               sum(ps.next_offset) AS entries_written,
               sum(ps.live_ledgers) AS live_ledgers,
               sum(ps.live_entries) AS live_entries,
               sum(ps.live_messages) AS live_messages,
               sum(ps.live_bytes) AS live_bytes,
               sum(ps.ongoing_txns) AS ongoing_txns,
               max(ps.last_publish_time) AS last_publish_time
          FROM txnq.partition_status ps
         GROUP BY ps.topic_id) p ON p.topic_id = m.topic_id;

-- Metadata, live consumers and partition count from shard 0; backlog and
-- pending acks added up over every shard, the oldest unacknowledged message
-- the earliest of any shard.
CREATE OR REPLACE VIEW txnq.subscription_status AS
WITH per_shard AS (
    SELECT s AS shard, r.*
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.subscription_status_on(s) r
), summed AS (
    SELECT a.subscription_id,
           sum(a.backlog_entries) AS backlog_entries,
           sum(a.backlog_messages) AS backlog_messages,
           sum(a.backlog_bytes) AS backlog_bytes,
           min(a.oldest_unacked_publish_time) AS oldest_unacked_publish_time,
           sum(a.pending_acks) AS pending_acks
      FROM per_shard a
     GROUP BY a.subscription_id
)
SELECT m.topic,
       m.topic_id,
       m.subscription,
       m.subscription_id,
       m.subscription_type,
       m.isolation,
       m.created_at,
       m.consumers,
       m.partitions,
       coalesce(b.backlog_entries, 0)::bigint AS backlog_entries,
       coalesce(b.backlog_messages, 0)::bigint AS backlog_messages,
       coalesce(b.backlog_bytes, 0)::bigint AS backlog_bytes,
       b.oldest_unacked_publish_time,
       extract(epoch FROM (now() - b.oldest_unacked_publish_time))::float8 AS oldest_unacked_age_seconds,
       coalesce(b.pending_acks, 0)::bigint AS pending_acks
  FROM per_shard m
  LEFT JOIN summed b ON b.subscription_id = m.subscription_id
 WHERE m.shard = 0;

-- A shard's lifecycle at a glance, for `txnq cluster status`: the topics,
-- partitions or entry logs its jobs fail on now (job_failure_status) and when
-- its latest recorded lifecycle run finished (gc_history keeps the runs that
-- changed something or failed). A shard whose scheduler is not running shows
-- no recent run.
CREATE OR REPLACE FUNCTION txnq_cluster.shard_lifecycle_on(
    p_shard integer, OUT job_failures bigint, OUT last_lifecycle_run timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT (SELECT count(*) FROM txnq.job_failure_status) AS job_failures,
           (SELECT max(h.finished_at) FROM txnq.gc_history h) AS last_lifecycle_run;
$$;

-- The routing table says which views the proxy answers (rule as for the
-- functions: owned = each row from its owner, summed = metadata from shard 0,
-- counts added up).
INSERT INTO txnq_cluster.routing (function_name, rule, note) VALUES
    ('partition_status', 'owned', 'view: each partition from its owner'),
    ('ledger_status', 'owned', 'view: each partition''s ledgers from its owner'),
    ('cursor_status', 'owned', 'view: each cursor from the owner of its partition'),
    ('topic_status', 'summed', 'view: policies from shard 0, partitions summed from their owners'),
    ('subscription_status', 'summed', 'view: metadata from shard 0, backlog and pending acks added up')
ON CONFLICT (function_name) DO UPDATE SET rule = EXCLUDED.rule, note = EXCLUDED.note;
