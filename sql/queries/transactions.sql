-- Transactions: each query is one call of a versioned txnq function, one round trip.

-- name: open_txn
SELECT tc_id, txn_seq, timeout_at FROM txnq.open_txn_v2(%(tc_id)s, %(timeout_seconds)s)

-- name: txn_limits
SELECT tc_count, txn_max_timeout_seconds FROM txnq.config

-- name: end_txn
SELECT state, reason
  FROM txnq.end_txn_v2(%(txn_tc)s, %(txn_seq)s, %(commit)s, %(reason)s, %(notify)s)

-- name: end_and_complete_txn
-- Decision and marker phase in one statement, so one PostgreSQL transaction
-- and one commit: the client's commit(wait=True) / abort(). end_txn_v2 (in
-- FROM) runs first; complete_txn_v2's statements then see its decision. If
-- anything fails, nothing is decided and the call can be repeated.
SELECT e.state, e.reason, txnq.complete_txn_v2(%(txn_tc)s, %(txn_seq)s) AS final_state
  FROM txnq.end_txn_v2(%(txn_tc)s, %(txn_seq)s, %(commit)s, %(reason)s, false) AS e

-- name: complete_txn
SELECT txnq.complete_txn_v2(%(txn_tc)s, %(txn_seq)s)

-- name: bind_txn
SELECT txnq.bind_txn_v2(%(txn_tc)s, %(txn_seq)s, %(transactional_id)s, %(epoch)s)

-- name: init_transactional_id
SELECT epoch, fenced_tc_ids, fenced_txn_seqs FROM txnq.init_transactional_id_v2(%(transactional_id)s)

-- name: txn_state
SELECT state, reason FROM txnq.transactions WHERE tc_id = %(txn_tc)s AND txn_seq = %(txn_seq)s

-- name: txn_list
-- Newest first; state NULL for every state, older_than in seconds (0: all).
-- Columns named, not *: a view that gains a column (a newer schema) must not
-- break TransactionInfo(**row) of this library.
SELECT id, tc_id, txn_seq, state, reason, opened_at, timeout_at, decided_at, completed_at,
       timeout_seconds, transactional_id, producer_epoch, partitions, partitions_marked,
       subscriptions, subscriptions_done, age_seconds, overdue_seconds, time_to_timeout_seconds
  FROM txnq.transaction_status
 WHERE (%(state)s::text IS NULL OR state = %(state)s)
   AND opened_at <= now() - make_interval(secs => %(older_than)s)
 ORDER BY opened_at DESC, tc_id, txn_seq
 LIMIT %(limit)s

-- name: txn_describe
SELECT id, tc_id, txn_seq, state, reason, opened_at, timeout_at, decided_at, completed_at,
       timeout_seconds, transactional_id, producer_epoch, partitions, partitions_marked,
       subscriptions, subscriptions_done, age_seconds, overdue_seconds, time_to_timeout_seconds
  FROM txnq.transaction_status WHERE tc_id = %(txn_tc)s AND txn_seq = %(txn_seq)s

-- name: txn_describe_partitions
SELECT t.name AS topic, tp.partition, tp.first_offset, tp.marker_offset
  FROM txnq.txn_partitions tp LEFT JOIN txnq.topics t USING (topic_id)
 WHERE tp.tc_id = %(txn_tc)s AND tp.txn_seq = %(txn_seq)s
 ORDER BY t.name, tp.partition

-- name: txn_describe_subscriptions
SELECT t.name AS topic, ts.partition, s.name AS subscription, ts.done,
       (SELECT count(*) FROM txnq.pending_acks pa
         WHERE pa.topic_id = ts.topic_id AND pa.partition = ts.partition
           AND pa.subscription_id = ts.subscription_id
           AND pa.tc_id = ts.tc_id AND pa.txn_seq = ts.txn_seq) AS pending_acks
  FROM txnq.txn_subscriptions ts
  LEFT JOIN txnq.topics t USING (topic_id)
  LEFT JOIN txnq.subscriptions s USING (subscription_id)
 WHERE ts.tc_id = %(txn_tc)s AND ts.txn_seq = %(txn_seq)s
 ORDER BY t.name, ts.partition, s.name

-- name: txn_history
SELECT at, state, reason, detail FROM txnq.txn_log
 WHERE tc_id = %(txn_tc)s AND txn_seq = %(txn_seq)s
 ORDER BY at

-- name: txn_find_hanging
-- Open transactions past their timeout by more than a grace period (the
-- scheduler aborts them within seconds, so these mean no scheduler runs), and
-- transactions holding a partition's max read offset for longer than the
-- maximum transaction timeout (Kafka KIP-664's hanging transactions).
SELECT o.tc_id || ':' || o.txn_seq AS id, t.name AS topic, o.partition, o.first_offset,
       h.max_read_offset, tx.state, tx.opened_at, tx.timeout_at,
       extract(epoch FROM (now() - tx.opened_at))::float8 AS age_seconds,
       CASE WHEN tx.state IS NULL THEN 'no transaction row'
            WHEN tx.state = 'OPEN' AND tx.timeout_at < now() - make_interval(secs => %(grace_seconds)s)
                THEN 'open past its timeout'
            WHEN tx.state <> 'OPEN' THEN 'decided but its marker is missing'
            ELSE 'holds the max read offset longer than the maximum timeout' END AS why
  FROM txnq.txn_buffer_ongoing o
  JOIN txnq.partitions h USING (topic_id, partition)
  LEFT JOIN txnq.topics t USING (topic_id)
  LEFT JOIN txnq.transactions tx ON tx.tc_id = o.tc_id AND tx.txn_seq = o.txn_seq
 WHERE tx.state IS NULL
    OR (tx.state = 'OPEN' AND tx.timeout_at < now() - make_interval(secs => %(grace_seconds)s))
    OR (tx.state <> 'OPEN' AND tx.decided_at < now() - make_interval(secs => %(grace_seconds)s))
    OR tx.opened_at < now() - make_interval(secs => (SELECT txn_max_timeout_seconds FROM txnq.config))
UNION ALL
SELECT tx.tc_id || ':' || tx.txn_seq, NULL, NULL, NULL, NULL, tx.state, tx.opened_at, tx.timeout_at,
       extract(epoch FROM (now() - tx.opened_at))::float8,
       'open past its timeout (no partition written)'
  FROM txnq.transactions tx
 WHERE tx.state = 'OPEN' AND tx.timeout_at < now() - make_interval(secs => %(grace_seconds)s)
   AND NOT EXISTS (SELECT 1 FROM txnq.txn_buffer_ongoing o
                    WHERE o.tc_id = tx.tc_id AND o.txn_seq = tx.txn_seq)
ORDER BY 9 DESC

-- name: txn_admin_abort
SELECT state, reason FROM txnq.end_txn_v2(%(txn_tc)s, %(txn_seq)s, false, 'admin', true)
