-- Transactions: each query is one call of a versioned txnq function, one round trip.

-- name: open_txn
SELECT tc_id, txn_seq, timeout_at FROM txnq.open_txn_v2(%(tc_id)s, %(timeout_seconds)s)

-- name: open_txn_unflushed
-- A client transaction (txnq.Transaction): its open, appends and acks commit
-- without waiting for the WAL flush, its decision waits for all of them
-- (open_txn_v3; docs/transactions.md, "One WAL flush per transaction").
SELECT tc_id, txn_seq, timeout_at FROM txnq.open_txn_v3(%(tc_id)s, %(timeout_seconds)s, true)

-- name: txn_limits
SELECT tc_count, txn_max_timeout_seconds FROM txnq.txn_limits_v1()

-- name: end_txn
SELECT state, reason
  FROM txnq.end_txn_v3(%(txn_tc)s, %(txn_seq)s, %(commit)s, %(reason)s, %(notify)s)

-- name: end_and_complete_txn
-- Decision and marker phase in one function, so one PostgreSQL transaction
-- and one commit: the client's commit(wait=True) / abort()
-- (end_and_complete_txn_v1: end_txn_v3 then complete_txn_v2, done once). If
-- anything fails, nothing is decided and the call can be repeated.
SELECT state, reason, final_state
  FROM txnq.end_and_complete_txn_v1(%(txn_tc)s, %(txn_seq)s, %(commit)s, %(reason)s)

-- name: complete_txn
SELECT txnq.complete_txn_v2(%(txn_tc)s, %(txn_seq)s)

-- name: bind_txn
SELECT txnq.bind_txn_v2(%(txn_tc)s, %(txn_seq)s, %(transactional_id)s, %(epoch)s)

-- name: bind_txn_unflushed
-- bind_txn in a client transaction (open_txn_unflushed): committed without
-- waiting for the WAL flush, as the transaction's appends and acks.
SELECT txnq.bind_txn_v2(%(txn_tc)s, %(txn_seq)s, %(transactional_id)s, %(epoch)s)
  FROM pg_catalog.set_config('synchronous_commit', 'off', true) AS lazy

-- name: init_transactional_id
SELECT epoch, fenced_tc_ids, fenced_txn_seqs FROM txnq.init_transactional_id_v3(%(transactional_id)s)

-- name: txn_state
SELECT state, reason FROM txnq.txn_state_v1(%(txn_tc)s, %(txn_seq)s)

-- name: txn_list
-- Newest first; state NULL for every state, older_than in seconds (0: all);
-- a role sees the transactions it opened (txn_list_v1).
-- Columns named, not *: a view that gains a column (a newer schema) must not
-- break TransactionInfo(**row) of this library.
SELECT id, tc_id, txn_seq, state, reason, opened_at, timeout_at, decided_at, completed_at,
       timeout_seconds, transactional_id, producer_epoch, partitions, partitions_marked,
       subscriptions, subscriptions_done, age_seconds, overdue_seconds, time_to_timeout_seconds
  FROM txnq.txn_list_v1(%(state)s, %(older_than)s, %(limit)s)

-- name: txn_describe
SELECT id, tc_id, txn_seq, state, reason, opened_at, timeout_at, decided_at, completed_at,
       timeout_seconds, transactional_id, producer_epoch, partitions, partitions_marked,
       subscriptions, subscriptions_done, age_seconds, overdue_seconds, time_to_timeout_seconds
  FROM txnq.txn_describe_v1(%(txn_tc)s, %(txn_seq)s)

-- name: txn_describe_partitions
SELECT topic, partition, first_offset, marker_offset
  FROM txnq.txn_describe_partitions_v1(%(txn_tc)s, %(txn_seq)s)

-- name: txn_describe_subscriptions
SELECT topic, partition, subscription, done, pending_acks
  FROM txnq.txn_describe_subscriptions_v1(%(txn_tc)s, %(txn_seq)s)

-- name: txn_history
SELECT at, state, reason, detail FROM txnq.txn_history_v1(%(txn_tc)s, %(txn_seq)s)

-- name: txn_find_hanging
-- Open transactions past their timeout by more than a grace period (the
-- scheduler aborts them within seconds, so these mean no scheduler runs), and
-- transactions holding a partition's max read offset for longer than the
-- maximum transaction timeout (Kafka KIP-664's hanging transactions).
SELECT id, topic, partition, first_offset, max_read_offset, state, opened_at, timeout_at,
       age_seconds, why
  FROM txnq.txn_find_hanging_v1(%(grace_seconds)s)

-- name: txn_admin_abort
SELECT state, reason FROM txnq.end_txn_v3(%(txn_tc)s, %(txn_seq)s, false, 'admin', true)
