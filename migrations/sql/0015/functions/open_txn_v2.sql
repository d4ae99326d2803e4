-- txnq.open_txn_v2: open a transaction on one coordinator (protocol step 1).
-- v2 (revision 0015) names NULL arguments in its errors and documents the
-- checks of the SQL boundary; open_txn_v1 becomes a wrapper of it.
--
-- Parameters: tc_id (0 .. tc_count - 1; clients pick round-robin),
--   timeout_seconds (a finite number above 0, at most the server's
--   txn_max_timeout_seconds).
-- Returns one row: tc_id, txn_seq (the transaction id; never reused), timeout_at.
-- Permissions: none to check here (the transaction names no topic yet; every
--   call that then names it checks txnq.authorize_txn_v1).
-- Locks: the coordinator row, only for this statement (it numbers transactions).
-- Errors: TQ005 coordinator out of range or timeout out of range.
CREATE OR REPLACE FUNCTION txnq.open_txn_v2(
    p_tc_id integer,
    p_timeout_seconds double precision,
    OUT tc_id integer,
    OUT txn_seq bigint,
    OUT timeout_at timestamptz
)
LANGUAGE plpgsql AS $$
DECLARE
    v_tc_count integer;
    v_max_timeout double precision;
BEGIN
    SELECT c.tc_count, c.txn_max_timeout_seconds INTO v_tc_count, v_max_timeout FROM txnq.config c;
    IF p_tc_id IS NULL OR p_tc_id < 0 OR p_tc_id >= v_tc_count THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('coordinator %s does not exist: this server has coordinators 0 to %s',
                             coalesce(p_tc_id::text, 'NULL'), v_tc_count - 1),
            HINT = 'pick a coordinator in range (round-robin); nothing was opened';
    END IF;
    -- NaN compares above every number, so it fails the upper bound.
    IF p_timeout_seconds IS NULL OR NOT p_timeout_seconds > 0 OR p_timeout_seconds > v_max_timeout THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('a transaction timeout of %s s is out of range: it must be above 0 and at '
                             'most the server maximum of %s s', coalesce(p_timeout_seconds::text, 'NULL'),
                             v_max_timeout),
            HINT = 'shorten the timeout, or raise TXNQ_TXN_MAX_TIMEOUT and run txnq migrate; nothing was opened';
    END IF;
    INSERT INTO txnq.coordinators AS c (tc_id, next_txn_seq) VALUES (p_tc_id, 2)
    ON CONFLICT ON CONSTRAINT coordinators_pkey DO UPDATE SET next_txn_seq = c.next_txn_seq + 1
    RETURNING c.tc_id, c.next_txn_seq - 1 INTO tc_id, txn_seq;
    timeout_at := now() + make_interval(secs => p_timeout_seconds);
    INSERT INTO txnq.transactions (tc_id, txn_seq, timeout_seconds, timeout_at)
    VALUES (tc_id, txn_seq, p_timeout_seconds, timeout_at);
    INSERT INTO txnq.txn_log (tc_id, txn_seq, state) VALUES (tc_id, txn_seq, 'OPEN');
END;
$$;
