-- txnq.sink_begin_v1: a two-phase-commit sink (txnq.spark.two_phase_commit)
-- records a transaction it began. Replaces the client's direct INSERT into
-- txnq.sink_transactions. Revision 0015.
--
-- Parameters: transactional_id (1 to 200 of A-Z a-z 0-9 . _ -), (tc_id,
--   txn_seq) of an open transaction the caller opened, recorded for no sink yet
--   (recovery settles each recorded transaction once, for its one sink).
-- Returns nothing. Locks: the transaction row FOR SHARE (txn_require_open_v1),
--   the row it inserts.
-- Errors: TQ005 bad transactional id, a NULL id part, or a transaction
--   recorded already;
--   TQ018 for another role's transaction; TQ014 unknown, TQ013 ended, TQ015
--   timed out, TQ002 fenced (txn_require_open_v1).
CREATE OR REPLACE FUNCTION txnq.sink_begin_v1(p_transactional_id text, p_tc_id integer, p_txn_seq bigint)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_sink text;
BEGIN
    IF p_transactional_id IS NULL OR p_transactional_id !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transactional id %s is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -',
                             coalesce(quote_literal(left(p_transactional_id, 80)), 'NULL'));
    END IF;
    IF p_tc_id IS NULL OR p_txn_seq IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('sink_begin_v1: a transaction id (tc_id %s, txn_seq %s) has no NULL part',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL')),
            HINT = 'pass the tc_id and txn_seq that open_txn_v2 returned';
    END IF;
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    PERFORM txnq.txn_require_open_v1(p_tc_id, p_txn_seq);
    SELECT s.transactional_id INTO v_sink FROM txnq.sink_transactions s
     WHERE s.tc_id = p_tc_id AND s.txn_seq = p_txn_seq;
    IF FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('transaction %s:%s is recorded for sink %s already', p_tc_id, p_txn_seq,
                             quote_literal(v_sink)),
            HINT = 'begin each sink transaction in a transaction of its own (open_txn_v2); nothing was recorded';
    END IF;
    INSERT INTO txnq.sink_transactions (transactional_id, tc_id, txn_seq)
    VALUES (p_transactional_id, p_tc_id, p_txn_seq);
END;
$$;
