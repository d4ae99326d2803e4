-- txnq.init_transactional_id_v1: start a producer session for a transactional
-- id (Kafka's InitProducerId): bump its epoch, which fences every older
-- session, and decide ABORTING (reason fenced) for the transactions the older
-- sessions left open (invariant 6).
--
-- Parameters: transactional_id (1 to 200 of A-Z a-z 0-9 . _ -).
-- Returns one row: epoch (this session's), fenced_tc_ids[], fenced_txn_seqs[]
--   (the transactions aborted here: the caller completes them, or workers do).
-- Locks: the transactional id row (bind_txn_v1 reads it FOR SHARE, so a
--   concurrent bind of the older session either lands before, and its
--   transaction is aborted here, or sees the new epoch and is fenced), then the
--   open transactions of the id.
-- Errors: TQ005 bad transactional id.
CREATE OR REPLACE FUNCTION txnq.init_transactional_id_v1(
    p_transactional_id text,
    OUT epoch integer,
    OUT fenced_tc_ids integer[],
    OUT fenced_txn_seqs bigint[]
)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_transactional_id IS NULL OR p_transactional_id !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transactional id %L is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -',
                             p_transactional_id);
    END IF;
    INSERT INTO txnq.transactional_ids AS x (transactional_id) VALUES (p_transactional_id)
    ON CONFLICT ON CONSTRAINT transactional_ids_pkey
    DO UPDATE SET epoch = x.epoch + 1, updated_at = now()
    RETURNING x.epoch INTO epoch;
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
