-- A txnq cluster (docs/cluster.md): the queries of txnq.cluster. Those named
-- cluster_shard_* run on a shard directly (cluster init), the others on the
-- proxy database, whose schema sql/proxy/*.sql installs.

-- name: cluster_shard_max_ids
-- The largest ids a shard holds: the proxy's id sequences start past them.
SELECT (SELECT coalesce(max(t.topic_id), 0) FROM txnq.topics t) AS topic_id,
       (SELECT coalesce(max(s.subscription_id), 0) FROM txnq.subscriptions s) AS subscription_id,
       (SELECT coalesce(max(p.producer_id), 0) FROM txnq.producers p) AS producer_id,
       (SELECT coalesce(max(c.consumer_id), 0) FROM txnq.consumers c) AS consumer_id

-- name: cluster_shard_topics
-- A shard's topics: every shard of a cluster holds the same ones.
SELECT t.topic_id, t.name, t.partitions FROM txnq.topics t ORDER BY t.topic_id

-- name: cluster_proxy_has_txnq_tables
-- A proxy database holds no txnq tables (it is no shard).
SELECT to_regclass('txnq.topics') IS NOT NULL

-- name: cluster_configure
SELECT txnq_cluster.configure(%(shards)s::text[])

-- name: cluster_align_ids
SELECT txnq_cluster.align_ids('txnq_cluster.topic_ids', %(topic_id)s),
       txnq_cluster.align_ids('txnq_cluster.subscription_ids', %(subscription_id)s),
       txnq_cluster.align_ids('txnq_cluster.producer_ids', %(producer_id)s),
       txnq_cluster.align_ids('txnq_cluster.consumer_ids', %(consumer_id)s)

-- name: cluster_install_refusals
SELECT refused, views, left_out FROM txnq_cluster.install_refusals()

-- name: cluster_shards
SELECT shard, dsn FROM txnq_cluster.shards ORDER BY shard

-- name: cluster_routing
SELECT function_name, rule, note FROM txnq_cluster.routing ORDER BY function_name

-- name: cluster_shard_health
SELECT schema_revision, server_version, database_bytes FROM txnq_cluster.shard_health_on(%(shard)s)

-- name: cluster_shard_lifecycle
SELECT job_failures, last_lifecycle_run FROM txnq_cluster.shard_lifecycle_on(%(shard)s)

-- name: cluster_shard_topics_on
-- One shard's topics, with the entries of its own partitions (the others are
-- empty head rows there) and the backlog of every subscription on them.
SELECT t.topic_id, t.name, t.partitions, t.entries,
       (SELECT count(*) FROM generate_series(0, t.partitions - 1) p
         WHERE txnq_cluster.shard_of(t.topic_id, p) = %(shard)s) AS owned_partitions,
       (SELECT coalesce(sum(s.backlog_entries), 0)
          FROM txnq_cluster.list_subscriptions_on(%(shard)s, t.topic_id) s) AS backlog_entries
  FROM txnq_cluster.list_topics_on(%(shard)s) t
 ORDER BY t.topic_id

-- name: cluster_shard_of
SELECT txnq_cluster.shard_of(%(topic_id)s, %(partition)s)

-- name: cluster_is_proxy
-- Whether this database is a cluster's proxy: the schema txnq_cluster and no
-- txnq tables. The coordinator worker asks at connect (through a proxy it
-- runs the marker phase across shards); the CLI's reads of each shard's own
-- rows then show which shard a row comes from; a client's consumers then
-- LISTEN on the shards, Spark reads them (txnq.database.shards). One catalog
-- lookup, false on one server.
SELECT to_regnamespace('txnq_cluster') IS NOT NULL AND to_regclass('txnq.transactions') IS NULL AS proxy

-- name: cluster_gc_history
-- gc_history on a proxy: every shard's lifecycle runs, with the shard.
SELECT shard, run_id, job, dry_run, started_at, finished_at, items, bytes, details, failures
  FROM txnq_cluster.gc_history
 WHERE (%(job)s::text IS NULL OR job = %(job)s)
 ORDER BY started_at DESC, shard, run_id DESC
 LIMIT %(limit)s

-- name: cluster_job_failures
-- job_failures on a proxy: what every shard's background work fails on now,
-- with the shard.
SELECT shard, job, topic_id, topic, partition, subject, failures, first_failed_at, last_failed_at,
       failing_seconds, error, sqlstate
  FROM txnq_cluster.job_failure_status
 ORDER BY first_failed_at, job, topic_id, partition, subject, shard

-- name: cluster_coordinator_ids
-- Every coordinator of a cluster (TC_COUNT, alike on every shard).
SELECT g AS tc_id FROM txnq.txn_limits_v1() l, generate_series(0, l.tc_count - 1) AS g ORDER BY 1

-- name: cluster_txn_participants
-- A transaction's home shard and the other shards (its participants), in order.
SELECT txnq_cluster.home_shard(%(txn_tc)s) AS home,
       ARRAY(SELECT s FROM generate_series(0, txnq_cluster.shard_count() - 1) s
              WHERE s <> txnq_cluster.home_shard(%(txn_tc)s) ORDER BY s) AS others

-- name: cluster_txn_apply
-- The home shard's decision applied on one participant shard, with its
-- markers and pending acks (one shard transaction, idempotent).
SELECT txnq_cluster.txn_apply(%(shard)s, %(txn_tc)s, %(txn_seq)s, %(commit)s, %(reason)s)

-- name: cluster_txn_complete_home
-- The home shard's own marker phase and finish, after every participant's.
SELECT txnq_cluster.complete_txn_on_home(%(txn_tc)s, %(txn_seq)s)

-- name: cluster_partition_shards
-- On a proxy: the shard that owns each partition of a topic, and where it is
-- (host, hostaddr, port, dbname; never credentials). txnq.database.shards.
SELECT partition, shard, host, hostaddr, port, dbname
  FROM txnq.cluster_shard_map_v1(%(topic_id)s, %(partitions)s)

-- name: cluster_direct_route_usable
-- On a shard, by a client about to take the direct route there
-- (txnq.database.routes): whether this database holds txnq's tables (not a
-- proxy) and the connected role may run the hot path's functions there. Else
-- the client's calls for the shard go through the proxy.
SELECT coalesce(bool_and(pg_catalog.has_function_privilege(p.oid, 'EXECUTE')), false)
       AND pg_catalog.count(*) = 3
       AND pg_catalog.to_regclass('txnq.transactions') IS NOT NULL AS usable
  FROM pg_catalog.pg_proc p
 WHERE p.pronamespace = pg_catalog.to_regnamespace('txnq')
   AND p.proname IN ('append_v6', 'fetch_v4', 'ack_v3')

-- name: cluster_advertise
-- On a proxy: where clients reach a shard (txnq_cluster.advertise); returns
-- its location as clients now get it.
SELECT txnq_cluster.advertise(%(shard)s, %(address)s) AS location
