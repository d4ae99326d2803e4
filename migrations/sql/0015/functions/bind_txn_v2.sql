-- txnq.bind_txn_v2: tie a transaction to a transactional producer session
-- (transactional id and epoch). Called once per transaction, before that
-- producer's first write in it; a newer session of the id then aborts the
-- transaction (init_transactional_id_v2), so a fenced producer can neither go
-- on writing in it nor commit it (invariant 7). v2 (revision 0015) refuses
-- NULL and malformed arguments and a transactional id never initialised (v1
-- bound a transaction to a NULL epoch of any string), and checks the
-- caller's permission on the transaction; bind_txn_v1 becomes a wrapper of it.
--
-- Parameters: (tc_id, txn_seq), transactional_id (1 to 200 of A-Z a-z 0-9 . _ -,
--   initialised by txnq.init_transactional_id_v2), epoch (the session's, 0 or more).
-- Returns nothing. Idempotent for the same id and epoch.
-- Permissions: txnq.authorize_txn_v1 once the transaction is found open,
--   before anything is changed.
-- Locks: the transactional id row FOR SHARE, then the transaction row FOR UPDATE.
-- Errors: TQ005 NULL or malformed argument, unknown transactional id, or the
--   transaction belongs to another transactional id; TQ002 fenced (the id has
--   a newer epoch, or the transaction belongs to an older one); TQ018 not
--   permitted; and the errors of txn_require_open_v1 (TQ014 unknown, TQ013
--   ended, TQ015 timed out).
CREATE OR REPLACE FUNCTION txnq.bind_txn_v2(
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
    IF p_tc_id IS NULL OR p_txn_seq IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('bind_txn_v2: tc_id (%s) and txn_seq (%s) must not be NULL',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL')),
            HINT = 'pass the id txnq.open_txn_v2 returned; nothing was changed';
    END IF;
    IF p_transactional_id IS NULL OR p_transactional_id !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transactional id %s is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -',
                             coalesce(quote_literal(left(p_transactional_id, 250)), 'NULL')),
            HINT = 'pass the transactional id given to txnq.init_transactional_id_v2; nothing was changed';
    END IF;
    IF p_epoch IS NULL OR p_epoch < 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('bind_txn_v2: epoch must be 0 or more, not %s', coalesce(p_epoch::text, 'NULL')),
            HINT = 'pass the epoch txnq.init_transactional_id_v2 returned; nothing was changed';
    END IF;
    SELECT x.epoch INTO v_current FROM txnq.transactional_ids x
     WHERE x.transactional_id = p_transactional_id FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transactional id %L was never initialised', p_transactional_id),
            HINT = 'call txnq.init_transactional_id_v2 first and bind with the epoch it returns; '
                   'nothing was changed';
    END IF;
    IF v_current <> p_epoch THEN
        RAISE EXCEPTION USING ERRCODE = CASE WHEN p_epoch > v_current THEN 'TQ005' ELSE 'TQ002' END,
            MESSAGE = CASE WHEN p_epoch > v_current
                           THEN format('transactional id %L has no epoch %s (its newest is %s)',
                                       p_transactional_id, p_epoch, v_current)
                           ELSE format('producer session %s of transactional id %L is fenced: epoch %s took over',
                                       p_epoch, p_transactional_id, v_current) END,
            HINT = CASE WHEN p_epoch > v_current
                        THEN 'pass the epoch txnq.init_transactional_id_v2 returned; nothing was changed'
                        ELSE 'close this producer; only the newest session of a transactional id may write' END;
    END IF;
    -- FOR UPDATE first (not FOR SHARE, then an upgrade that could deadlock).
    SELECT t.transactional_id, t.producer_epoch INTO v_bound_id, v_bound_epoch
      FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq FOR UPDATE;
    PERFORM txnq.txn_require_open_v1(p_tc_id, p_txn_seq);
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
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
                             p_tc_id, p_txn_seq, v_bound_epoch, p_transactional_id, p_epoch),
            HINT = 'close this producer; only the newest session of a transactional id may write';
    END IF;
END;
$$;
