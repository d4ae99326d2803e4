-- Spark: committed ranges, incremental ingestions, two-phase-commit sinks (docs/spark.md).

-- name: spark_partition_bounds
-- Per partition of a topic: the max read offset now (the upper bound a read
-- fixes when it starts) and the earliest offset retention has kept.
SELECT h.partition, h.max_read_offset, txnq.earliest_offset_v2(h.topic_id, h.partition) AS earliest_offset
  FROM txnq.partitions h WHERE h.topic_id = %(topic_id)s ORDER BY h.partition

-- name: spark_first_offset_at
-- Per partition: the first offset published at or after a time, at or below
-- the max read offset (NULL: none yet, the range ends at the max read offset).
SELECT h.partition,
       (SELECT min(e.entry_offset) FROM txnq.entries e
         WHERE e.topic_id = h.topic_id AND e.partition = h.partition
           AND e.entry_offset <= h.max_read_offset AND e.publish_time >= %(at)s) AS first_offset
  FROM txnq.partitions h WHERE h.topic_id = %(topic_id)s ORDER BY h.partition

-- name: spark_read_range
-- The committed messages of one partition in [start_offset, end_offset).
SELECT topic, partition, entry_offset, batch_index, key, properties, payload, publish_time,
       event_time, txn_id
  FROM txnq.committed_messages
 WHERE topic_id = %(topic_id)s AND partition = %(partition)s
   AND entry_offset >= %(start_offset)s AND entry_offset < %(end_offset)s
 ORDER BY entry_offset, batch_index

-- name: spark_ingestion_get
SELECT name, topic_id, committed_run, committed_offsets, planned_run, planned_offsets, updated_at
  FROM txnq.spark_ingestions WHERE name = %(name)s

-- name: spark_ingestion_list
SELECT i.name, t.name AS topic, i.committed_run, i.committed_offsets, i.planned_run,
       i.planned_offsets, i.updated_at
  FROM txnq.spark_ingestions i LEFT JOIN txnq.topics t USING (topic_id)
 ORDER BY i.name

-- name: spark_ingestion_create
INSERT INTO txnq.spark_ingestions (name, topic_id) VALUES (%(name)s, %(topic_id)s)
ON CONFLICT (name) DO NOTHING

-- name: spark_ingestion_plan
-- Record the range a run is about to write; only when no plan is pending.
UPDATE txnq.spark_ingestions
   SET planned_run = committed_run + 1, planned_offsets = %(planned_offsets)s, updated_at = now()
 WHERE name = %(name)s AND planned_run IS NULL
RETURNING planned_run

-- name: spark_ingestion_commit
-- The sink has the planned range: it becomes the committed position.
UPDATE txnq.spark_ingestions
   SET committed_run = planned_run, committed_offsets = planned_offsets,
       planned_run = NULL, planned_offsets = NULL, updated_at = now()
 WHERE name = %(name)s AND planned_run = %(run)s
RETURNING committed_run

-- name: spark_ingestion_delete
DELETE FROM txnq.spark_ingestions WHERE name = %(name)s RETURNING name

-- name: spark_ingestion_try_lock
-- One run of an ingestion at a time: a session advisory lock on its name.
SELECT pg_try_advisory_lock(hashtext('txnq.spark_ingestions'), hashtext(%(name)s))

-- name: spark_ingestion_unlock
SELECT pg_advisory_unlock(hashtext('txnq.spark_ingestions'), hashtext(%(name)s))

-- name: sink_begin
INSERT INTO txnq.sink_transactions (transactional_id, tc_id, txn_seq)
VALUES (%(transactional_id)s, %(txn_tc)s, %(txn_seq)s)

-- name: sink_prepare
-- Only a transaction this sink began and that is still open in txnq.
UPDATE txnq.sink_transactions s
   SET state = 'PREPARED', checkpoint_id = %(checkpoint_id)s, prepared_at = now()
  FROM txnq.transactions t
 WHERE s.transactional_id = %(transactional_id)s AND s.tc_id = %(txn_tc)s AND s.txn_seq = %(txn_seq)s
   AND t.tc_id = s.tc_id AND t.txn_seq = s.txn_seq AND t.state = 'OPEN'
RETURNING s.state

-- name: sink_forget
DELETE FROM txnq.sink_transactions
 WHERE transactional_id = %(transactional_id)s AND tc_id = %(txn_tc)s AND txn_seq = %(txn_seq)s

-- name: sink_pending
SELECT s.tc_id, s.txn_seq, s.state, s.checkpoint_id, t.state AS txn_state, t.reason AS txn_reason
  FROM txnq.sink_transactions s
  LEFT JOIN txnq.transactions t ON t.tc_id = s.tc_id AND t.txn_seq = s.txn_seq
 WHERE s.transactional_id = %(transactional_id)s
 ORDER BY s.checkpoint_id NULLS LAST, s.tc_id, s.txn_seq

-- name: sink_session_epoch
-- The current session of a transactional id, held FOR SHARE until the caller's
-- commit: a newer session (init_transactional_id_v1 updates the row) waits
-- for it, or it sees the newer epoch.
SELECT epoch FROM txnq.transactional_ids WHERE transactional_id = %(transactional_id)s FOR SHARE

-- name: sink_session_lock
-- Recovery holds the transactional id's row while it settles and fences.
SELECT epoch FROM txnq.transactional_ids WHERE transactional_id = %(transactional_id)s FOR UPDATE
