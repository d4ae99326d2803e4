-- txnq.cluster_txn_prepare_v1: a participant shard's vote before a cluster
-- transaction's commit is decided on its home shard (docs/cluster.md,
-- "Transactions across shards"). It checks this shard's mirror
-- (cluster_txn_mirror_v1): still OPEN, within its timeout, and opened in this
-- server's current incarnation (no crash since, which could have lost writes
-- of it that were not flushed yet); then it moves the mirror's timeout_at to
-- infinity, so this shard's own timeout job can no longer abort what the home
-- shard may now commit, and commits waiting for the WAL flush, which makes
-- every earlier write of the transaction on this shard durable with it (WAL
-- is flushed in order). Revision 0030.
--
-- Parameters: (tc_id, txn_seq).
-- Returns the vote: 'prepared' (the home shard may decide commit), or why it
--   must abort: 'timeout' (past its timeout, or aborted here for it), 'crash'
--   (this shard restarted after a crash since the open, or has no mirror: the
--   open never reached it), 'ended' (decided here already otherwise).
--   Idempotent: a prepared mirror votes 'prepared' again.
-- Permissions: txnq.authorize_txn_v1 once the mirror is found.
-- Locks: the transaction row FOR UPDATE (waits for appends and acks in flight).
-- Errors: TQ005 a NULL id; TQ018 not permitted.
CREATE OR REPLACE FUNCTION txnq.cluster_txn_prepare_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_reason text;
    v_timeout_at timestamptz;
    v_incarnation uuid;
    v_current uuid;
BEGIN
    IF p_tc_id IS NULL OR p_txn_seq IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('cluster_txn_prepare_v1: tc_id (%s) and txn_seq (%s) must not be NULL',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL')),
            HINT = 'pass the transaction id open_txn_v3 returned; nothing was changed';
    END IF;
    -- Durable whatever the caller's session says: the vote covers the writes before it.
    PERFORM pg_catalog.set_config('synchronous_commit', s.reset_val, true)
       FROM pg_catalog.pg_settings s WHERE s.name = 'synchronous_commit';
    SELECT t.state, t.reason, t.timeout_at, t.incarnation INTO v_state, v_reason, v_timeout_at, v_incarnation
      FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq
       FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'crash';
    END IF;
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    IF v_state <> 'OPEN' THEN
        RETURN CASE WHEN v_reason IN ('timeout', 'crash') THEN v_reason ELSE 'ended' END;
    END IF;
    IF v_timeout_at = 'infinity' THEN
        RETURN 'prepared';
    END IF;
    IF v_timeout_at <= now() THEN
        RETURN 'timeout';
    END IF;
    SELECT i.incarnation INTO v_current FROM txnq.server_incarnation i;
    IF v_incarnation IS NOT NULL AND v_incarnation IS DISTINCT FROM v_current THEN
        RETURN 'crash';
    END IF;
    UPDATE txnq.transactions t SET timeout_at = 'infinity'
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    INSERT INTO txnq.txn_log (tc_id, txn_seq, state, detail)
    VALUES (p_tc_id, p_txn_seq, 'OPEN', 'prepared: the home shard may decide commit');
    RETURN 'prepared';
END;
$$;
