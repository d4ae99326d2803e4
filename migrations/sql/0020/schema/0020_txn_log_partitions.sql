-- Revision 0020: txn_log partitioned by time. Each range partition is
-- dropped whole once every transaction with a row in it has been purged
-- (txnq.txn_log_maintain_v1, docs/lifecycle.md); rows outside every range
-- (the partitions were not made ahead in time) land in txn_log_default,
-- from which the history purge deletes them row by row.
ALTER TABLE txnq.txn_log RENAME TO txn_log_unpartitioned;
ALTER INDEX txnq.txn_log_by_txn RENAME TO txn_log_unpartitioned_by_txn;
CREATE TABLE txnq.txn_log (
    tc_id   integer NOT NULL,
    txn_seq bigint NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    state   text NOT NULL,
    reason  text,
    detail  text
) PARTITION BY RANGE (at);
CREATE INDEX txn_log_by_txn ON txnq.txn_log (tc_id, txn_seq);
CREATE TABLE txnq.txn_log_default PARTITION OF txnq.txn_log DEFAULT;
INSERT INTO txnq.txn_log (tc_id, txn_seq, at, state, reason, detail)
SELECT tc_id, txn_seq, at, state, reason, detail FROM txnq.txn_log_unpartitioned;
DROP TABLE txnq.txn_log_unpartitioned;
