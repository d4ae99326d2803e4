-- txnq.cluster_end_txn_v1: the decision of a cluster transaction on its home
-- shard (docs/cluster.md, "Transactions across shards"): end_txn_v3, after the
-- proxy collected the participants' votes (cluster_txn_prepare_v1). A commit
-- that a participant vetoed decides ABORTING with the veto's reason instead
-- (timeout or crash; client for a participant that had ended). Durable: the
-- decision waits for the WAL flush (end_txn_v3's), before any marker is
-- written on any shard. Revision 0030.
--
-- Parameters: end_txn_v3's (tc_id, txn_seq, commit, reason, notify), and veto:
--   NULL when every participant voted 'prepared', else the first other vote
--   ('timeout', 'crash' or 'ended').
-- Returns one row: state and reason after the call, as end_txn_v3.
-- Permissions: txnq.authorize_txn_v1 (end_txn_v3's).
-- Locks: end_txn_v3's (the transaction row FOR UPDATE).
-- Errors: end_txn_v3's; TQ005 a veto other than timeout, crash or ended.
CREATE OR REPLACE FUNCTION txnq.cluster_end_txn_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_commit boolean,
    p_reason text,
    p_notify boolean,
    p_veto text,
    OUT state text,
    OUT reason text
)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_veto IS NOT NULL AND p_veto NOT IN ('timeout', 'crash', 'ended') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('cluster_end_txn_v1: veto must be NULL, timeout, crash or ended, not %s',
                             quote_literal(p_veto)),
            HINT = 'pass the participants'' vote (cluster_txn_prepare_v1); nothing was decided';
    END IF;
    IF p_veto IS NULL OR p_commit IS NOT TRUE THEN
        SELECT e.state, e.reason INTO state, reason
          FROM txnq.end_txn_v3(p_tc_id, p_txn_seq, p_commit, p_reason, p_notify) e;
        RETURN;
    END IF;
    -- A vetoed commit: decided ABORTING here with the veto's reason. Bad
    -- arguments get end_txn_v3's errors (it raises before deciding).
    IF p_tc_id IS NULL OR p_txn_seq IS NULL OR p_reason IS NULL OR p_reason NOT IN ('client', 'admin')
       OR p_notify IS NULL THEN
        SELECT e.state, e.reason INTO state, reason
          FROM txnq.end_txn_v3(p_tc_id, p_txn_seq, p_commit, p_reason, p_notify) e;
    END IF;
    SELECT t.state, t.reason INTO state, reason FROM txnq.transactions t
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s does not exist', p_tc_id, p_txn_seq),
            HINT = 'pass the id open_txn_v3 returned; nothing was decided';
    END IF;
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    IF state <> 'OPEN' THEN
        RETURN;
    END IF;
    PERFORM pg_catalog.set_config('synchronous_commit', s.reset_val, true)
       FROM pg_catalog.pg_settings s WHERE s.name = 'synchronous_commit';
    state := 'ABORTING';
    reason := CASE p_veto WHEN 'ended' THEN p_reason ELSE p_veto END;
    UPDATE txnq.transactions t SET state = 'ABORTING', reason = cluster_end_txn_v1.reason, decided_at = now()
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    INSERT INTO txnq.txn_log (tc_id, txn_seq, state, reason, detail)
    VALUES (p_tc_id, p_txn_seq, 'ABORTING', reason, 'a participant shard voted ' || p_veto);
    IF p_notify THEN
        PERFORM pg_notify('txnq_coordinator', p_tc_id::text);
    END IF;
END;
$$;
