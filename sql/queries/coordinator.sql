-- The coordinator worker: leases of transaction coordinators and the marker phase.
--
-- A coordinator's lease is a session-level advisory lock (two-key form, first
-- key 7301, second the tc_id) on the worker's session connection: PostgreSQL
-- drops it with the session, so a dead worker's coordinators are free at once
-- and another worker takes them over at its next rebalance. Live workers hold
-- one membership lock each (first key 7302), which is how they count each other.

-- name: coordinator_join
SELECT pg_try_advisory_lock(7302, %(member_key)s)

-- name: coordinator_live_workers
SELECT count(*) AS workers FROM pg_locks
 WHERE locktype = 'advisory' AND classid = 7302 AND objsubid = 2 AND granted
   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())

-- name: coordinator_ids
-- Every coordinator to serve: those the settings configure and any that still
-- has transactions (after TC_COUNT was lowered).
SELECT g AS tc_id FROM generate_series(0, (SELECT tc_count FROM txnq.config) - 1) AS g
UNION
SELECT tc_id FROM txnq.coordinators
ORDER BY 1

-- name: coordinator_try_lease
SELECT pg_try_advisory_lock(7301, %(tc_id)s)

-- name: coordinator_release_lease
SELECT pg_advisory_unlock(7301, %(tc_id)s)

-- name: coordinator_record_owner
SELECT txnq.coordinator_record_owner_v1(%(owner)s, %(tc_ids)s::int[])

-- name: coordinator_decided
-- Decided transactions of the given coordinators, oldest decision first. A
-- client runs the marker phase of its own commit inline, so the periodic scan
-- leaves fresh decisions alone for a grace period; a NOTIFY asks for them at
-- once. SKIP LOCKED passes over a transaction whose marker phase someone (its
-- client, txnq txn abort) is running right now: the worker does not queue
-- behind it, and the next scan finds it again if it is still unfinished. The
-- worker runs this in autocommit, so the lock ends with the statement; each
-- step of the marker phase takes its own locks.
SELECT tc_id, txn_seq, state
  FROM txnq.coordinator_decided_v1(%(tc_ids)s::int[], %(grace_seconds)s, %(limit)s)

-- name: coordinator_unmarked_partitions
SELECT topic_id, partition FROM txnq.txn_partitions
 WHERE tc_id = %(txn_tc)s AND txn_seq = %(txn_seq)s AND marker_offset IS NULL
 ORDER BY topic_id, partition

-- name: coordinator_open_subscriptions
SELECT topic_id, partition, subscription_id FROM txnq.txn_subscriptions
 WHERE tc_id = %(txn_tc)s AND txn_seq = %(txn_seq)s AND NOT done
 ORDER BY topic_id, partition, subscription_id

-- name: complete_txn_partition
SELECT txnq.complete_txn_partition_v2(%(txn_tc)s, %(txn_seq)s, %(topic_id)s, %(partition)s)

-- name: complete_txn_subscription
SELECT txnq.complete_txn_subscription_v2(%(txn_tc)s, %(txn_seq)s, %(topic_id)s, %(partition)s,
                                         %(subscription_id)s)

-- name: finish_txn
SELECT txnq.finish_txn_v2(%(txn_tc)s, %(txn_seq)s)

-- name: abort_timed_out
SELECT tc_id, txn_seq FROM txnq.abort_timed_out_v2(%(max_count)s)

-- name: coordinator_members
-- The membership keys of the live workers of this database, in order: a
-- worker's rank among them decides whether its fair share is the larger or
-- the smaller one (16 coordinators over 3 workers: 6, 5, 5).
SELECT objid::bigint AS member_key FROM pg_locks
 WHERE locktype = 'advisory' AND classid = 7302 AND objsubid = 2 AND granted
   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
 ORDER BY objid

-- name: coordinator_held_leases
-- The coordinator leases this session holds right now, as PostgreSQL sees
-- them: a worker confirms its leases with this before it acts on them.
SELECT objid::integer AS tc_id FROM pg_locks
 WHERE locktype = 'advisory' AND classid = 7301 AND objsubid = 2 AND granted
   AND pid = pg_backend_pid()
   AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
