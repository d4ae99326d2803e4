-- txnq.transaction_status: one row per transaction of the transaction log, for
-- inspection with plain SQL and for `txnq txn list`.
--
-- id is the printable transaction id "tc:seq" (TxnId.parse reads it back);
-- partitions/subscriptions count what it touched and how many of those the
-- marker phase has finished; age_seconds is the time since it opened, and
-- overdue_seconds how far an OPEN one is past its timeout (NULL otherwise).
CREATE OR REPLACE VIEW txnq.transaction_status AS
SELECT t.tc_id || ':' || t.txn_seq AS id,
       t.tc_id,
       t.txn_seq,
       t.state,
       t.reason,
       t.opened_at,
       t.timeout_at,
       t.decided_at,
       t.completed_at,
       t.timeout_seconds,
       t.transactional_id,
       t.producer_epoch,
       (SELECT count(*) FROM txnq.txn_partitions tp
         WHERE tp.tc_id = t.tc_id AND tp.txn_seq = t.txn_seq) AS partitions,
       (SELECT count(*) FROM txnq.txn_partitions tp
         WHERE tp.tc_id = t.tc_id AND tp.txn_seq = t.txn_seq AND tp.marker_offset IS NOT NULL) AS partitions_marked,
       (SELECT count(*) FROM txnq.txn_subscriptions ts
         WHERE ts.tc_id = t.tc_id AND ts.txn_seq = t.txn_seq) AS subscriptions,
       (SELECT count(*) FROM txnq.txn_subscriptions ts
         WHERE ts.tc_id = t.tc_id AND ts.txn_seq = t.txn_seq AND ts.done) AS subscriptions_done,
       extract(epoch FROM (now() - t.opened_at))::float8 AS age_seconds,
       CASE WHEN t.state = 'OPEN' AND t.timeout_at < now()
            THEN extract(epoch FROM (now() - t.timeout_at))::float8 END AS overdue_seconds
  FROM txnq.transactions t;
