-- txnq.transaction_status, second version (revision 0005): the first version
-- (transactions.sql) with time_to_timeout_seconds added as its last column, so
-- CREATE OR REPLACE keeps every column a reader already uses.
--
-- One row per transaction of the transaction log. id is the printable
-- transaction id "tc:seq" (TxnId.parse reads it back); partitions/subscriptions
-- count what it touched and how many of those the marker phase has finished;
-- age_seconds is the time since it opened, overdue_seconds how far an OPEN one
-- is past its timeout (NULL otherwise), time_to_timeout_seconds how long an
-- OPEN one has left before the system aborts it (negative once overdue; NULL
-- when it is no longer OPEN).
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
            THEN extract(epoch FROM (now() - t.timeout_at))::float8 END AS overdue_seconds,
       CASE WHEN t.state = 'OPEN'
            THEN extract(epoch FROM (t.timeout_at - now()))::float8 END AS time_to_timeout_seconds
  FROM txnq.transactions t;
