-- The web console's reads (txnq/console/reads.py, docs/console.md): only
-- inspection views and public txnq functions, never the tables, so a console
-- run as a member of txnq_reader shows everything but payloads.

-- name: console_role
SELECT r.role, r.may_administer, txnq.schema_revision_v1() AS revision
  FROM txnq.console_role_v1() r

-- name: console_topics
SELECT topic, partitions, retention_seconds, retention_bytes, ttl_seconds, max_message_bytes,
       subscriptions, entries_written, live_ledgers, live_messages, live_bytes, ongoing_txns,
       last_publish_time, created_at
  FROM txnq.topic_status
 ORDER BY topic

-- name: console_partitions
SELECT topic, partition, next_offset, high_watermark, max_read_offset, ongoing_txns,
       oldest_ongoing_txn, oldest_ongoing_txn_age_seconds, live_ledgers, live_bytes,
       live_first_offset, last_publish_time
  FROM txnq.partition_status
 ORDER BY topic, partition

-- name: console_topic_history
SELECT topic, sampled_at, entries_written, entries_acked, backlog_entries, live_ledgers,
       live_bytes
  FROM txnq.topic_history
 WHERE sampled_at > now() - make_interval(secs => %(seconds)s)
 ORDER BY topic, sampled_at

-- name: console_storage_history
SELECT sampled_at, entry_logs, entry_log_bytes, ledgers
  FROM txnq.storage_history
 WHERE sampled_at > now() - make_interval(secs => %(seconds)s)
 ORDER BY sampled_at

-- name: console_subscriptions
SELECT topic, subscription, subscription_type, isolation, consumers, partitions,
       backlog_messages, backlog_bytes, oldest_unacked_age_seconds, pending_acks, created_at
  FROM txnq.subscription_status
 ORDER BY topic, subscription

-- name: console_cursors
SELECT topic, subscription, partition, mark_delete_offset, readable_offset, lag_entries,
       individual_acks, in_flight, redelivering, redeliveries, dead_letters, updated_at
  FROM txnq.cursor_status
 ORDER BY topic, subscription, partition

-- name: console_transactions
SELECT id, state, reason, opened_at, timeout_at, decided_at, transactional_id, partitions,
       partitions_marked, subscriptions, subscriptions_done, age_seconds, overdue_seconds,
       time_to_timeout_seconds
  FROM txnq.transaction_status
 WHERE state IN ('OPEN', 'COMMITTING', 'ABORTING')
    OR (state = 'ABORTED' AND completed_at > now() - make_interval(secs => %(seconds)s))
 ORDER BY (overdue_seconds IS NULL), opened_at DESC
 LIMIT %(limit)s

-- name: console_ledgers
SELECT topic, partition, ledger_id, state, first_offset, last_offset, entries, size_bytes,
       created_at, closed_at, age_seconds, orphan
  FROM txnq.ledger_status
 WHERE state <> 'DELETED'
 ORDER BY topic, partition, ledger_id
 LIMIT %(limit)s

-- name: console_gc_history
SELECT run_id, job, dry_run, started_at, duration_seconds, items, bytes, failures
  FROM txnq.gc_history
 ORDER BY started_at DESC
 LIMIT %(limit)s

-- name: console_job_failures
SELECT job, topic, partition, subject, failures, failing_seconds, error
  FROM txnq.job_failure_status
 ORDER BY last_failed_at DESC

-- name: console_actions
SELECT action_id, at, role, action, target, details, error, succeeded
  FROM txnq.console_action_log
 ORDER BY at DESC
 LIMIT %(limit)s

-- name: console_messages_from_offset
SELECT partition, entry_offset, batch_index, key, properties, payload, publish_time, txn_id
  FROM txnq.committed_messages
 WHERE topic = %(topic)s AND partition = %(partition)s AND entry_offset >= %(offset)s
 ORDER BY entry_offset, batch_index
 LIMIT %(limit)s

-- name: console_messages_from_time
SELECT partition, entry_offset, batch_index, key, properties, payload, publish_time, txn_id
  FROM txnq.committed_messages
 WHERE topic = %(topic)s AND partition = %(partition)s AND publish_time >= %(time)s
 ORDER BY entry_offset, batch_index
 LIMIT %(limit)s

-- name: console_record_action
SELECT txnq.console_record_action_v1(%(action)s, %(target)s, %(details)s, %(error)s)

-- name: console_sample
SELECT txnq.console_sample_v1(%(keep_seconds)s)
