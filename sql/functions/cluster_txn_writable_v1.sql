-- txnq.cluster_txn_writable_v1: the guard a cluster proxy puts before an
-- append or an acknowledgement in a transaction on a participant shard
-- (docs/cluster.md, "Transactions across shards"): a mirror that voted
-- 'prepared' (cluster_txn_prepare_v1) takes no more writes, as one server's
-- decision rejects a write that arrives after it (invariant 7). The proxy
-- passes its result as the txn_seq argument of append_v5 / append_packed_v1 /
-- ack_v3 on the shard, so it runs first in the same statement, and its row
-- lock (FOR SHARE, to the end of the statement's transaction) orders the
-- write before a prepare or the prepare before it. Revision 0030.
--
-- Parameters: (tc_id, txn_seq) of the write; NULLs (no transaction) pass.
-- Returns txn_seq unchanged when the write may go on (the function it is
--   passed to checks the rest: unknown, ended, timed out, fenced).
-- Permissions: none (it reads one row's state; the write checks them).
-- Locks: the transaction row FOR SHARE.
-- Errors: TQ013 the transaction's mirror here is prepared for its decision.
CREATE OR REPLACE FUNCTION txnq.cluster_txn_writable_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS bigint
LANGUAGE plpgsql AS $$
BEGIN
    IF p_tc_id IS NOT NULL AND p_txn_seq IS NOT NULL AND EXISTS (
        SELECT FROM txnq.transactions t
         WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq AND t.state = 'OPEN' AND t.timeout_at = 'infinity'
           FOR SHARE) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ013',
            MESSAGE = format('transaction %s:%s has ended on this shard: it is prepared for its decision, '
                             'and a write that arrives after commit() began is refused', p_tc_id, p_txn_seq),
            HINT = 'open a new transaction; nothing was written';
    END IF;
    RETURN p_txn_seq;
END;
$$;
