-- txnq.sink_begin_v1: a two-phase-commit sink (txnq.spark.two_phase_commit)
-- records a transaction it began. Replaces the client's direct INSERT into
-- txnq.sink_transactions. Revision 0015.
--
-- Parameters: transactional_id (1 to 200 of A-Z a-z 0-9 . _ -), (tc_id,
--   txn_seq) of a transaction the caller opened.
-- Returns nothing. Locks: the row it inserts.
-- Errors: TQ005 bad transactional id; TQ018 for another role's transaction;
--   23505 when it is recorded already.
CREATE OR REPLACE FUNCTION txnq.sink_begin_v1(p_transactional_id text, p_tc_id integer, p_txn_seq bigint)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_transactional_id IS NULL OR p_transactional_id !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transactional id %s is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -',
                             coalesce(quote_literal(left(p_transactional_id, 80)), 'NULL'));
    END IF;
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    INSERT INTO txnq.sink_transactions (transactional_id, tc_id, txn_seq)
    VALUES (p_transactional_id, p_tc_id, p_txn_seq);
END;
$$;
