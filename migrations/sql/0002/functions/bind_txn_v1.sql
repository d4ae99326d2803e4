-- txnq.bind_txn_v1: tie a transaction to a transactional producer session
-- (transactional id and epoch). Called once per transaction, before that
-- producer's first write in it; a newer session of the id then aborts the
-- transaction (init_transactional_id_v1), so a fenced producer can neither go
-- on writing in it nor commit it (invariant 7).
--
-- Parameters: (tc_id, txn_seq), transactional_id, epoch.
-- Returns nothing. Idempotent for the same id and epoch.
-- Locks: the transactional id row FOR SHARE, then the transaction row FOR UPDATE.
-- Errors: TQ002 fenced (the id has a newer epoch, or the transaction belongs to
--   an older one), TQ005 the transaction belongs to another transactional id,
--   and the errors of txn_require_open_v1.
CREATE OR REPLACE FUNCTION txnq.bind_txn_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_transactional_id text,
    p_epoch integer
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_current integer;
    v_bound_id text;
    v_bound_epoch integer;
BEGIN
    SELECT x.epoch INTO v_current FROM txnq.transactional_ids x
     WHERE x.transactional_id = p_transactional_id FOR SHARE;
    IF v_current IS DISTINCT FROM p_epoch THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ002',
            MESSAGE = format('producer session %s of transactional id %L is fenced: epoch %s took over',
                             p_epoch, p_transactional_id, v_current),
            HINT = 'close this producer; only the newest session of a transactional id may write';
    END IF;
    -- FOR UPDATE first (not FOR SHARE, then an upgrade that could deadlock).
    SELECT t.transactional_id, t.producer_epoch INTO v_bound_id, v_bound_epoch
      FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq FOR UPDATE;
    PERFORM txnq.txn_require_open_v1(p_tc_id, p_txn_seq);
    IF v_bound_id IS NULL THEN
        UPDATE txnq.transactions t SET transactional_id = p_transactional_id, producer_epoch = p_epoch
         WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    ELSIF v_bound_id <> p_transactional_id THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transaction %s:%s belongs to transactional id %L, not %L',
                             p_tc_id, p_txn_seq, v_bound_id, p_transactional_id),
            HINT = 'a transaction is written by the producers of one transactional id';
    ELSIF v_bound_epoch <> p_epoch THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ002',
            MESSAGE = format('transaction %s:%s belongs to epoch %s of %L, not %s',
                             p_tc_id, p_txn_seq, v_bound_epoch, p_transactional_id, p_epoch);
    END IF;
END;
$$;
