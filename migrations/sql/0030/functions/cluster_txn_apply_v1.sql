-- txnq.cluster_txn_apply_v1: a cluster transaction's decision, taken on its
-- home shard, applied on a participant shard with its whole marker phase, in
-- one PostgreSQL transaction of this shard (docs/cluster.md, "Transactions
-- across shards"): the mirror (cluster_txn_mirror_v1) is decided as the home
-- shard decided, then complete_txn_v2 writes the COMMIT or ABORT markers of
-- its partitions here, applies or releases its pending acks here and finishes
-- the mirror. Run by the proxy's complete_txn_v2 and by the coordinator
-- worker's recovery, for every participant, before the home shard finishes.
-- Revision 0030.
--
-- Parameters: (tc_id, txn_seq), commit (the home shard's decision), reason
--   (the home shard's reason: client, admin, timeout, fenced or crash).
-- Returns the mirror's state after the call (COMMITTED or ABORTED), or
--   'MISSING' when this shard has no mirror (the open never reached it: none
--   of the transaction's writes are here). Idempotent.
-- Permissions: txnq.authorize_txn_v1 (complete_txn_v2's).
-- Locks: the transaction row FOR UPDATE, then complete_txn_v2's.
-- Errors: TQ005 NULL argument or bad reason; TQ031 the mirror disagrees with
--   the decision (decided the other way here, or a commit of a mirror that
--   never voted 'prepared'); TQ018 not permitted.
CREATE OR REPLACE FUNCTION txnq.cluster_txn_apply_v1(
    p_tc_id integer, p_txn_seq bigint, p_commit boolean, p_reason text)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_timeout_at timestamptz;
BEGIN
    IF p_tc_id IS NULL OR p_txn_seq IS NULL OR p_commit IS NULL
       OR p_reason IS NULL OR p_reason NOT IN ('client', 'admin', 'timeout', 'fenced', 'crash') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('cluster_txn_apply_v1: tc_id (%s), txn_seq (%s), commit (%s) must not be NULL '
                             'and reason (%s) is client, admin, timeout, fenced or crash',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL'),
                             coalesce(p_commit::text, 'NULL'), coalesce(quote_literal(p_reason), 'NULL')),
            HINT = 'pass the home shard''s decision; nothing was changed';
    END IF;
    SELECT t.state, t.timeout_at INTO v_state, v_timeout_at FROM txnq.transactions t
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'MISSING';
    END IF;
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    IF (p_commit AND v_state IN ('ABORTING', 'ABORTED'))
       OR (NOT p_commit AND v_state IN ('COMMITTING', 'COMMITTED'))
       OR (p_commit AND v_state = 'OPEN' AND v_timeout_at <> 'infinity') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ031',
            MESSAGE = format('transaction %s:%s is %s on this shard (%s), but its home shard decided %s',
                             p_tc_id, p_txn_seq, lower(v_state),
                             CASE WHEN v_state = 'OPEN' THEN 'never prepared' ELSE 'decided here' END,
                             CASE WHEN p_commit THEN 'commit' ELSE 'abort' END),
            HINT = 'a cluster''s transactions are opened, ended and recovered through the proxy only '
                   '(docs/cluster.md); nothing was changed';
    END IF;
    IF v_state = 'OPEN' THEN
        v_state := CASE WHEN p_commit THEN 'COMMITTING' ELSE 'ABORTING' END;
        UPDATE txnq.transactions t SET state = v_state, reason = p_reason, decided_at = now()
         WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
        INSERT INTO txnq.txn_log (tc_id, txn_seq, state, reason, detail)
        VALUES (p_tc_id, p_txn_seq, v_state, p_reason, 'decided on the home shard');
    END IF;
    RETURN txnq.complete_txn_v2(p_tc_id, p_txn_seq);
END;
$$;
