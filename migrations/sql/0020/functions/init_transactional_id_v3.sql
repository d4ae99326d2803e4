-- txnq.init_transactional_id_v3: start a producer session for a transactional
-- id (Kafka's InitProducerId): bump its epoch, which fences every older
-- session, and decide ABORTING (reason fenced) for the transactions the older
-- sessions left open (invariant 6). v3 (revision 0020): a new id starts at
-- txnq.config.transactional_epoch_floor instead of 0. The history purge
-- (txnq.purge_history_v1) forgets an id idle for PRODUCER_EXPIRY_SECONDS and
-- raises the floor above its epoch: a session of the forgotten id that wakes
-- up later holds an epoch below the new session's and is fenced, where with
-- 0 it could have matched it. Otherwise v2's, which becomes a wrapper of it.
--
-- Parameters: transactional_id (1 to 200 of A-Z a-z 0-9 . _ -).
-- Returns one row: epoch (this session's), fenced_tc_ids[], fenced_txn_seqs[]
--   (the transactions aborted here: the caller completes them, or workers do).
-- Permissions: txnq.authorize_txn_v1 for every open transaction of the id
--   (fencing aborts it: only who may end it may fence it).
-- Locks: txnq.config's row FOR SHARE (the epoch floor), the transactional id row (bind_txn_v2 reads it FOR SHARE, so a
--   concurrent bind of the older session either lands before, and its
--   transaction is aborted here, or sees the new epoch and is fenced), then the
--   open transactions of the id.
-- Errors: TQ005 bad transactional id, TQ018 not permitted.
CREATE OR REPLACE FUNCTION txnq.init_transactional_id_v3(
    p_transactional_id text,
    OUT epoch integer,
    OUT fenced_tc_ids integer[],
    OUT fenced_txn_seqs bigint[]
)
LANGUAGE plpgsql AS $$
DECLARE
    v_floor integer;
BEGIN
    IF p_transactional_id IS NULL OR p_transactional_id !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transactional id %s is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -',
                             coalesce(quote_literal(left(p_transactional_id, 250)), 'NULL')),
            HINT = 'pick a valid transactional id; nothing was changed';
    END IF;
    -- A new id starts at the epoch floor: above every epoch an id the history
    -- purge forgot ever had, so a session of a forgotten id is fenced. FOR
    -- SHARE: a purge that raises the floor commits before this reads it, or
    -- waits until this session's row exists (and then skips it).
    SELECT c.transactional_epoch_floor INTO v_floor FROM txnq.config c FOR SHARE;
    INSERT INTO txnq.transactional_ids AS x (transactional_id, epoch)
    VALUES (p_transactional_id, v_floor)
    ON CONFLICT ON CONSTRAINT transactional_ids_pkey
    DO UPDATE SET epoch = x.epoch + 1, updated_at = now()
    RETURNING x.epoch INTO epoch;
    -- After the epoch bump (which holds the id's row, so no bind slips in
    -- between): a refusal rolls the bump back with everything else.
    PERFORM txnq.authorize_txn_v1(t.tc_id, t.txn_seq)
       FROM txnq.transactions t
      WHERE t.transactional_id = p_transactional_id AND t.state = 'OPEN' AND t.producer_epoch < epoch;
    WITH fenced AS (
        UPDATE txnq.transactions t SET state = 'ABORTING', reason = 'fenced', decided_at = now()
         WHERE t.transactional_id = p_transactional_id AND t.state = 'OPEN' AND t.producer_epoch < epoch
        RETURNING t.tc_id, t.txn_seq
    ), logged AS (
        INSERT INTO txnq.txn_log (tc_id, txn_seq, state, reason, detail)
        SELECT f.tc_id, f.txn_seq, 'ABORTING', 'fenced',
               format('transactional id %s epoch %s took over', p_transactional_id, epoch)
          FROM fenced f
        RETURNING txn_log.tc_id, txn_log.txn_seq
    )
    SELECT coalesce(array_agg(l.tc_id ORDER BY l.tc_id, l.txn_seq), '{}'),
           coalesce(array_agg(l.txn_seq ORDER BY l.tc_id, l.txn_seq), '{}')
      INTO fenced_tc_ids, fenced_txn_seqs
      FROM logged l;
END;
$$;
