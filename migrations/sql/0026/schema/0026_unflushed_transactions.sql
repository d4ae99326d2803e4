-- Revision 0026: a client transaction's writes commit without waiting for
-- the WAL flush; its decision alone is durable (docs/transactions.md, "One
-- WAL flush per transaction").
--
-- Why that is safe: PostgreSQL writes WAL in order and a durable commit
-- flushes all of it up to its own commit record, so the decision's flush
-- makes every append and ack of the transaction durable with it. What can
-- go wrong is a crash of PostgreSQL *before* the decision: the writes of the
-- last moments (the WAL not flushed yet) are lost while the client, told
-- they were written, goes on and commits. So each transaction opened this
-- way records the server's incarnation, and a commit decides ABORTING
-- (reason 'crash') when the incarnation changed since the open.
--
-- The incarnation lives in an UNLOGGED table: crash recovery empties every
-- unlogged table (also after the crash of a single backend, when the
-- postmaster lives on and pg_postmaster_start_time() does not change), and a
-- promoted standby starts with them empty; a clean shutdown keeps them, as
-- it loses no WAL either. Whoever finds the table empty makes a new
-- incarnation (txnq.open_txn_v3).
CREATE UNLOGGED TABLE txnq.server_incarnation (
    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    incarnation uuid NOT NULL DEFAULT gen_random_uuid(),
    since       timestamptz NOT NULL DEFAULT now()
);

-- The incarnation a transaction was opened in when its writes do not wait
-- for the flush (NULL: opened durably, by open_txn_v2 and earlier, by the
-- Spark sink and SQL callers; such a transaction is never checked).
ALTER TABLE txnq.transactions ADD COLUMN incarnation uuid;

ALTER TABLE txnq.transactions DROP CONSTRAINT transactions_reason_check;
ALTER TABLE txnq.transactions ADD CONSTRAINT transactions_reason_check
    CHECK (reason IN ('client', 'timeout', 'fenced', 'admin', 'crash'));

-- Transaction ids are never reused, also when the open that handed one out
-- was lost in a crash: a coordinator hands out numbers only below
-- reserved_txn_seq, which is raised (by blocks) in an open that waits for
-- the flush, and after a crash (another incarnation than the one recorded
-- here) the next open starts above the reserved block.
ALTER TABLE txnq.coordinators
    ADD COLUMN reserved_txn_seq bigint NOT NULL DEFAULT 0,
    ADD COLUMN incarnation uuid;
