-- The message lifecycle: TTL, retention, entry-log GC (txnq/lifecycle.py).

-- name: set_topic_policy
-- Each policy NULL keeps its value; clear_ttl removes the TTL.
UPDATE txnq.topics
   SET retention_seconds = coalesce(%(retention_seconds)s, retention_seconds),
       retention_bytes = coalesce(%(retention_bytes)s, retention_bytes),
       ttl_seconds = CASE WHEN %(clear_ttl)s THEN NULL
                          ELSE coalesce(%(ttl_seconds)s, ttl_seconds) END
 WHERE topic_id = %(topic_id)s

-- name: ttl_topics
SELECT topic_id, name FROM txnq.topics WHERE ttl_seconds > 0 ORDER BY topic_id

-- name: expire_ttl
SELECT partition, subscription_id, mark_delete_before, mark_delete_after
  FROM txnq.expire_ttl_v1(%(topic_id)s)

-- name: retention_topics
-- Topics whose retention can delete something (not kept forever).
SELECT topic_id, name FROM txnq.topics
 WHERE NOT ((retention_seconds < 0 AND retention_bytes <= 0)
            OR (retention_bytes < 0 AND retention_seconds <= 0))
 ORDER BY topic_id

-- name: apply_retention
SELECT partition, ledger_id, first_offset, last_offset, size_bytes
  FROM txnq.apply_retention_v1(%(topic_id)s)

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
SELECT entries, bytes, live_entries, live_bytes FROM txnq.entry_log_usage_v1(%(entry_log_id)s)

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
INSERT INTO txnq.gc_runs (job, dry_run, started_at, items, bytes, details)
VALUES (%(job)s, %(dry_run)s, %(started_at)s, %(items)s, %(bytes)s, %(details)s)

-- name: gc_history
SELECT run_id, job, dry_run, started_at, finished_at, items, bytes, details
  FROM txnq.gc_runs
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
