-- Spark: committed ranges, incremental ingestions, two-phase-commit sinks (docs/spark.md).

-- name: spark_partition_bounds
-- Per partition of a topic: the max read offset now (the upper bound a read
-- fixes when it starts) and the earliest offset retention has kept.
SELECT partition, max_read_offset, earliest_offset FROM txnq.spark_partition_bounds_v1(%(topic_id)s)

-- name: spark_first_offset_at
-- Per partition: the first offset published at or after a time, at or below
-- the max read offset (NULL: none yet, the range ends at the max read offset).
SELECT partition, first_offset FROM txnq.spark_first_offset_at_v1(%(topic_id)s, %(at)s)

-- name: spark_read_range
-- The committed messages of one partition in [start_offset, end_offset).
SELECT topic, partition, entry_offset, batch_index, key, properties, payload, publish_time,
       event_time, txn_id
  FROM txnq.read_committed_v1(%(topic_id)s, %(partition)s, %(start_offset)s, %(end_offset)s)

-- name: spark_ingestion_get
SELECT name, topic_id, committed_run, committed_offsets, planned_run, planned_offsets, updated_at
  FROM txnq.spark_ingestion_get_v1(%(name)s)

-- name: spark_ingestion_list
SELECT name, topic, committed_run, committed_offsets, planned_run, planned_offsets, updated_at
  FROM txnq.spark_ingestion_list_v1()

-- name: spark_ingestion_create
SELECT txnq.spark_ingestion_create_v1(%(name)s, %(topic_id)s)

-- name: spark_ingestion_plan
-- Record the range a run is about to write; only when no plan is pending.
SELECT planned_run FROM txnq.spark_ingestion_plan_v1(%(name)s, %(planned_offsets)s) AS planned_run

-- name: spark_ingestion_commit
-- The sink has the planned range: it becomes the committed position.
SELECT committed_run FROM txnq.spark_ingestion_commit_v1(%(name)s, %(run)s) AS committed_run

-- name: spark_ingestion_delete
SELECT name FROM txnq.spark_ingestion_delete_v1(%(name)s) AS name

-- name: spark_ingestion_try_lock
-- One run of an ingestion at a time: a session advisory lock on its name.
SELECT pg_try_advisory_lock(hashtext('txnq.spark_ingestions'), hashtext(%(name)s))

-- name: spark_ingestion_unlock
SELECT pg_advisory_unlock(hashtext('txnq.spark_ingestions'), hashtext(%(name)s))

-- name: sink_begin
SELECT txnq.sink_begin_v1(%(transactional_id)s, %(txn_tc)s, %(txn_seq)s)

-- name: sink_prepare
-- Only a transaction this sink began and that is still open in txnq.
SELECT state FROM txnq.sink_prepare_v1(%(transactional_id)s, %(txn_tc)s, %(txn_seq)s, %(checkpoint_id)s)
                  AS state

-- name: sink_forget
SELECT txnq.sink_forget_v1(%(transactional_id)s, %(txn_tc)s, %(txn_seq)s)

-- name: sink_pending
SELECT tc_id, txn_seq, state, checkpoint_id, txn_state, txn_reason
  FROM txnq.sink_pending_v1(%(transactional_id)s)

-- name: sink_session_epoch
-- The current session of a transactional id, held FOR SHARE until the caller's
-- commit: a newer session (init_transactional_id_v2 updates the row) waits
-- for it, or it sees the newer epoch.
SELECT epoch FROM txnq.sink_session_epoch_v1(%(transactional_id)s) AS epoch

-- name: sink_session_lock
-- Recovery holds the transactional id's row while it settles and fences.
SELECT epoch FROM txnq.sink_session_lock_v1(%(transactional_id)s) AS epoch
