-- The message lifecycle: TTL, retention, entry-log GC (txnq/lifecycle.py).

-- name: set_topic_policy
-- Each policy NULL keeps its value; clear_ttl removes the TTL.
SELECT txnq.set_topic_policy_v1(%(topic_id)s, %(retention_seconds)s::double precision,
                                %(retention_bytes)s::bigint, %(ttl_seconds)s::double precision,
                                %(clear_ttl)s)

-- name: ttl_topics
-- (A NaN TTL counts as > 0 in PostgreSQL: such a topic is tried, fails, and
-- is reported with its ttl_seconds.)
SELECT topic_id, name, ttl_seconds FROM txnq.topics WHERE ttl_seconds > 0 ORDER BY topic_id

-- name: expire_ttl
SELECT partition, subscription_id, mark_delete_before, mark_delete_after
  FROM txnq.expire_ttl_v2(%(topic_id)s)

-- name: retention_topics
-- Topics whose retention can delete something (not kept forever).
SELECT topic_id, name, retention_seconds, retention_bytes FROM txnq.topics
 WHERE NOT ((retention_seconds < 0 AND retention_bytes <= 0)
            OR (retention_bytes < 0 AND retention_seconds <= 0))
 ORDER BY topic_id

-- name: apply_retention
SELECT partition, ledger_id, first_offset, last_offset, size_bytes
  FROM txnq.apply_retention_v2(%(topic_id)s)

-- name: gc_try_lock
-- One entry-log GC at a time across processes (session-level, on GC's own connection).
SELECT pg_try_advisory_lock(hashtext('txnq.gc'))

-- name: gc_unlock
SELECT pg_advisory_unlock(hashtext('txnq.gc'))

-- name: gc_sealed_entry_logs
-- Sealed entry logs that no append can still be writing to: sealed longer ago
-- than the grace (an append that read the old active log just before the roll
-- inserts within milliseconds).
SELECT l.entry_log_id, l.table_name, l.sealed_at
  FROM txnq.entry_logs l
 WHERE l.state = 'SEALED' AND l.sealed_at <= now() - make_interval(secs => %(grace_seconds)s)
 ORDER BY l.entry_log_id

-- name: entry_log_usage
SELECT entries, bytes, live_entries, live_bytes FROM txnq.entry_log_usage_v2(%(entry_log_id)s)

-- name: entry_log_table_state
-- exists: the table is there; attached: it is a partition of txnq.entries;
-- detach_pending: a DETACH ... CONCURRENTLY was interrupted (FINALIZE it);
-- total_bytes: its size on disk, indexes and TOAST included.
SELECT c.oid IS NOT NULL AS exists,
       i.inhrelid IS NOT NULL AS attached,
       coalesce(i.inhdetachpending, false) AS detach_pending,
       coalesce(pg_total_relation_size(c.oid), 0) AS total_bytes
  FROM (SELECT to_regclass(format('txnq.%%I', %(table_name)s::text)) AS oid) r
  LEFT JOIN pg_class c ON c.oid = r.oid
  LEFT JOIN pg_inherits i ON i.inhrelid = c.oid

-- name: mark_entry_log_dropped
UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now()
 WHERE entry_log_id = %(entry_log_id)s AND state = 'SEALED'

-- name: record_gc_run
INSERT INTO txnq.gc_runs (job, dry_run, started_at, items, bytes, details, failures)
VALUES (%(job)s, %(dry_run)s, %(started_at)s, %(items)s, %(bytes)s, %(details)s, %(failures)s)

-- name: replace_job_failures
-- After a run of a job: what it failed on now (one row per topic, partition
-- or subject; counted up when it failed there before), and no other row of
-- the job (of scope_topic_id only, when the run checked one topic): what no
-- longer fails is gone. One statement per run.
WITH failed AS (
    SELECT * FROM unnest(%(topic_ids)s::int[], %(partitions)s::int[], %(subjects)s::text[],
                         %(topics)s::text[], %(errors)s::text[], %(sqlstates)s::text[])
           AS u(topic_id, partition, subject, topic, error, sqlstate)
), gone AS (
    DELETE FROM txnq.job_failures f
     WHERE f.job = %(job)s
       AND (%(scope_topic_id)s::int IS NULL OR f.topic_id = %(scope_topic_id)s::int)
       AND NOT EXISTS (SELECT 1 FROM failed x WHERE x.topic_id = f.topic_id
                          AND x.partition = f.partition AND x.subject = f.subject)
)
INSERT INTO txnq.job_failures AS f (job, topic_id, partition, subject, topic, error, sqlstate)
SELECT %(job)s, x.topic_id, x.partition, x.subject, x.topic, x.error, x.sqlstate FROM failed x
ON CONFLICT (job, topic_id, partition, subject) DO UPDATE
   SET topic = excluded.topic, error = excluded.error, sqlstate = excluded.sqlstate,
       failures = f.failures + 1, last_failed_at = now()

-- name: job_failures
SELECT job, topic_id, topic, partition, subject, failures, first_failed_at, last_failed_at,
       failing_seconds, error, sqlstate
  FROM txnq.job_failure_status
 ORDER BY first_failed_at, job, topic_id, partition, subject

-- name: gc_history
-- The view, not txnq.gc_runs: a cluster's proxy answers it too (the shards'
-- runs; cluster_gc_history adds which shard).
SELECT run_id, job, dry_run, started_at, finished_at, items, bytes, details, failures
  FROM txnq.gc_history
 WHERE (%(job)s::text IS NULL OR job = %(job)s)
 ORDER BY started_at DESC, run_id DESC
 LIMIT %(limit)s

-- name: entry_logs_overview
SELECT l.entry_log_id, l.table_name, l.state, l.created_at, l.sealed_at, l.dropped_at,
       CASE WHEN l.state = 'DROPPED' THEN 0
            ELSE coalesce(pg_total_relation_size(to_regclass(format('txnq.%%I', l.table_name))), 0)
       END AS total_bytes
  FROM txnq.entry_logs l
 ORDER BY l.entry_log_id

-- name: compaction_begin
SELECT txnq.compaction_begin_v3(%(source)s)

-- name: compaction_copy
SELECT rows, bytes, last_topic, last_partition, last_offset
  FROM txnq.compaction_copy_v2(%(target)s, %(after_topic)s, %(after_partition)s, %(after_offset)s,
                               %(max_rows)s, %(max_bytes)s)

-- name: compaction_resume_key
-- Where an interrupted compaction's copy goes on: the last key in its target
-- (the copy runs in key order). NULL: start from the beginning.
SELECT topic_id, partition, entry_offset FROM txnq.compaction_last_key_v2(%(target)s)

-- name: compaction_catch_up
SELECT copied, source_rows FROM txnq.compaction_catch_up_v2(%(target)s)

-- name: compaction_swap
SELECT txnq.compaction_swap_v2(%(target)s, %(source_rows)s, %(lock_timeout)s)

-- name: compaction_abandon
SELECT txnq.compaction_abandon_v2(%(target)s)

-- name: compactions_without_source
-- Compaction targets whose source is no longer a sealed log (dropped by GC
-- meanwhile): nothing to finish, drop them.
SELECT t.entry_log_id FROM txnq.entry_logs t
  LEFT JOIN txnq.entry_logs s ON s.entry_log_id = t.compacted_from
 WHERE t.state = 'COMPACTING' AND s.state IS DISTINCT FROM 'SEALED'

-- The dirty-data sweep (`txnq gc doctor`, lifecycle.doctor).

-- name: doctor_orphan_ledgers
-- Ledgers not yet DELETED that nothing owns: their topic is gone, their
-- partition is gone (a topic's partitions never shrink, so only by a bug or a
-- hand edit), or an OPEN ledger that is not its partition's current one.
SELECT l.topic_id, l.partition, l.ledger_id, l.state, l.first_offset, l.last_offset,
       l.metadata,
       CASE WHEN t.topic_id IS NULL THEN 'owner topic deleted'
            WHEN h.topic_id IS NULL THEN 'owner partition missing'
            ELSE 'not reachable from its partition' END AS reason
  FROM txnq.ledgers l
  LEFT JOIN txnq.topics t ON t.topic_id = l.topic_id
  LEFT JOIN txnq.partitions h ON h.topic_id = l.topic_id AND h.partition = l.partition
 WHERE l.state <> 'DELETED'
   AND (t.topic_id IS NULL OR h.topic_id IS NULL OR l.ledger_id > h.ledger_id
        OR (l.state = 'OPEN' AND l.ledger_id <> h.ledger_id))
 ORDER BY l.topic_id, l.partition, l.ledger_id

-- name: doctor_delete_orphan_ledger
-- Marks one orphan ledger DELETED (GC then reclaims its entries), checking
-- again that it is still an orphan.
UPDATE txnq.ledgers l
   SET state = 'DELETED', deleted_at = now(),
       metadata = l.metadata || jsonb_build_object('deleted_by', 'gc doctor', 'reason', %(reason)s::text)
 WHERE l.topic_id = %(topic_id)s AND l.partition = %(partition)s AND l.ledger_id = %(ledger_id)s
   AND l.state <> 'DELETED'
   AND (NOT EXISTS (SELECT 1 FROM txnq.topics t WHERE t.topic_id = l.topic_id)
        OR NOT EXISTS (SELECT 1 FROM txnq.partitions h
                        WHERE h.topic_id = l.topic_id AND h.partition = l.partition
                          AND l.ledger_id <= h.ledger_id
                          AND (l.state <> 'OPEN' OR l.ledger_id = h.ledger_id)))
RETURNING l.ledger_id

-- name: doctor_entries_without_ledger
-- Entries whose ledger has no metadata row, grouped by ledger, with the entry
-- logs they are in. Reads every entry log: a sweep for `txnq gc doctor`, not
-- for a tight schedule.
SELECT e.topic_id, e.partition, e.ledger_id,
       array_agg(DISTINCT e.entry_log_id ORDER BY e.entry_log_id) AS entry_logs,
       count(*) AS entries, min(e.entry_offset) AS first_offset,
       max(e.entry_offset) AS last_offset, sum(e.payload_bytes)::bigint AS bytes
  FROM txnq.entries e
 WHERE NOT EXISTS (SELECT 1 FROM txnq.ledgers l
                    WHERE l.topic_id = e.topic_id AND l.partition = e.partition
                      AND l.ledger_id = e.ledger_id)
 GROUP BY e.topic_id, e.partition, e.ledger_id
 ORDER BY e.topic_id, e.partition, e.ledger_id

-- name: doctor_adopt_entries
-- Gives entries without a ledger a DELETED ledger row, so GC drops or compacts
-- them away like any deleted ledger's entries (no row deletes).
INSERT INTO txnq.ledgers (topic_id, partition, ledger_id, first_offset, last_offset, size_bytes,
                          state, closed_at, deleted_at, metadata)
SELECT %(topic_id)s, %(partition)s, %(ledger_id)s, %(first_offset)s, %(last_offset)s, %(bytes)s,
       'DELETED', now(), now(),
       jsonb_build_object('created_by', 'gc doctor', 'reason', 'entries without a ledger',
                          'topic_id', %(topic_id)s, 'partition', %(partition)s)
ON CONFLICT (topic_id, partition, ledger_id) DO NOTHING
RETURNING ledger_id

-- name: doctor_inactive_subscriptions
-- Subscriptions with no live consumer whose cursors have not moved for
-- inactive_seconds (or, never acknowledged, created that long ago), with
-- their backlog in entries.
SELECT t.name AS topic, s.name AS subscription, s.subscription_id, s.subscription_type,
       greatest(s.created_at, max(c.updated_at)) AS last_active,
       coalesce(sum(greatest(h.max_read_offset - c.mark_delete_offset, 0)), 0)::bigint AS backlog
  FROM txnq.subscriptions s
  JOIN txnq.topics t ON t.topic_id = s.topic_id
  LEFT JOIN txnq.cursors c ON c.subscription_id = s.subscription_id
  LEFT JOIN txnq.partitions h ON h.topic_id = c.topic_id AND h.partition = c.partition
 WHERE NOT EXISTS (SELECT 1 FROM txnq.consumers k
                    WHERE k.subscription_id = s.subscription_id AND k.lease_expires_at > now())
 GROUP BY t.name, s.name, s.subscription_id, s.subscription_type, s.created_at
HAVING greatest(s.created_at, max(c.updated_at)) < now() - make_interval(secs => %(inactive_seconds)s)
 ORDER BY t.name, s.name

-- name: doctor_remove_subscription
-- Unsubscribes an inactive subscription, checking again that it still is.
SELECT txnq.unsubscribe_v2(s.subscription_id, NULL, false)
  FROM txnq.subscriptions s
 WHERE s.subscription_id = %(subscription_id)s
   AND greatest(s.created_at, (SELECT max(c.updated_at) FROM txnq.cursors c
                                WHERE c.subscription_id = s.subscription_id))
       < now() - make_interval(secs => %(inactive_seconds)s)

-- name: hot_tables_to_vacuum
-- The small, constantly updated tables of txnq with more dead tuples than
-- min_dead and than a fifth of their live ones: what autovacuum would pick,
-- for servers where it is off or behind.
-- may_vacuum: this role may VACUUM it (its owner's privileges, or
-- PostgreSQL 17's MAINTAIN, which grant_roles_v2 gives txnq_scheduler).
SELECT s.relname, s.n_dead_tup, s.n_live_tup,
       CASE WHEN current_setting('server_version_num')::integer >= 170000
            THEN has_table_privilege(s.relid, 'MAINTAIN')
            ELSE pg_has_role(current_user, c.relowner, 'USAGE') END AS may_vacuum
  FROM pg_stat_user_tables s
  JOIN pg_class c ON c.oid = s.relid
 WHERE s.schemaname = 'txnq' AND s.relname = ANY(%(tables)s::text[])
   AND s.n_dead_tup >= %(min_dead)s AND s.n_dead_tup >= s.n_live_tup / 5
 ORDER BY s.n_dead_tup DESC

-- name: gc_owns_entries
-- May this role DETACH and DROP entry logs itself (it has the privileges of
-- the owner of txnq.entries)? Else GC drops through gc_drop_entry_log_v1.
SELECT pg_has_role(current_user, c.relowner, 'USAGE') FROM pg_class c
 WHERE c.oid = 'txnq.entries'::regclass

-- name: gc_drop_entry_log
SELECT txnq.gc_drop_entry_log_v1(%(entry_log_id)s, %(lock_timeout)s)

-- name: hot_tables_to_shrink
-- The hot tables whose heap holds more than min_bytes: candidates for a
-- rewrite once a held snapshot let them grow (txnq.lifecycle.vacuum). The
-- live size is measured per table afterwards, only on small tables.
-- fillfactor: the table's own, else PostgreSQL's 100.
SELECT s.relname, pg_relation_size(c.oid) AS heap_bytes,
       pg_total_relation_size(c.oid) AS total_bytes, s.n_live_tup, s.n_dead_tup,
       coalesce((SELECT o.option_value::integer FROM pg_options_to_table(c.reloptions) o
                  WHERE o.option_name = 'fillfactor'), 100) AS fillfactor,
       CASE WHEN current_setting('server_version_num')::integer >= 170000
            THEN has_table_privilege(s.relid, 'MAINTAIN')
            ELSE pg_has_role(current_user, c.relowner, 'USAGE') END AS may_vacuum
  FROM pg_stat_user_tables s
  JOIN pg_class c ON c.oid = s.relid
 WHERE s.schemaname = 'txnq' AND s.relname = ANY(%(tables)s::text[])
   AND pg_relation_size(c.oid) > %(min_bytes)s
 ORDER BY pg_relation_size(c.oid) DESC

-- name: active_entry_log
SELECT active_entry_log_id FROM txnq.config

-- name: purge_history
SELECT relation, purged, more
  FROM txnq.purge_history_v1(%(finished_seconds)s, %(history_seconds)s, %(producer_seconds)s,
                               %(limit)s)

-- name: txn_log_maintain
SELECT action, partition_name
  FROM txnq.txn_log_maintain_v1(%(partition_seconds)s, %(ahead)s, %(keep_seconds)s)

-- name: compaction_merge
SELECT moved_entries, moved_bytes
  FROM txnq.compaction_merge_v1(%(target)s, %(source)s, %(lock_timeout)s)
