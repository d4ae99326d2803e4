-- txnq.open_txn_v3: open a transaction on one coordinator (protocol step 1).
-- Revision 0026: what changed from open_txn_v2 (now its wrapper): with
-- p_unflushed the transaction's writes may commit without waiting for the
-- WAL flush (docs/transactions.md, "One WAL flush per transaction"): this
-- open itself does (synchronous_commit off for the calling transaction,
-- unless it reserves numbers, see below) and records the server's
-- incarnation in the transaction row, so that a commit after a crash of
-- PostgreSQL aborts instead (txnq.end_txn_v3). Numbers are reserved by
-- blocks of 1,000 per coordinator with a durable commit (reserved_txn_seq:
-- the highest number the block allows), and a coordinator opened in a new
-- incarnation starts above its reserved block: an id handed out by an open
-- the crash lost is never handed out again.
--
-- Parameters: tc_id (0 .. tc_count - 1; clients pick round-robin),
--   timeout_seconds (a finite number above 0, at most the server's
--   txn_max_timeout_seconds), unflushed (true: see above; NULL is false).
-- Returns one row: tc_id, txn_seq (the transaction id; never reused), timeout_at.
-- Permissions: none to check here (the transaction names no topic yet; every
--   call that then names it checks txnq.authorize_txn_v1).
-- Locks: the coordinator row, only for this statement (it numbers
--   transactions); the incarnation row only when it is made.
-- Errors: TQ005 coordinator out of range or timeout out of range.
CREATE OR REPLACE FUNCTION txnq.open_txn_v3(
    p_tc_id integer,
    p_timeout_seconds double precision,
    p_unflushed boolean DEFAULT false,
    OUT tc_id integer,
    OUT txn_seq bigint,
    OUT timeout_at timestamptz
)
LANGUAGE plpgsql AS $$
DECLARE
    c_reserve CONSTANT bigint := 1000;
    v_tc_count integer;
    v_max_timeout double precision;
    v_incarnation uuid;
    v_next bigint;
    v_reserved bigint;
    v_seen uuid;
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
    SELECT i.incarnation INTO v_incarnation FROM txnq.server_incarnation i;
    IF NOT FOUND THEN
        -- The first call since a crash (or ever): a new incarnation. A
        -- concurrent maker wins the conflict and its row is returned.
        INSERT INTO txnq.server_incarnation AS i (singleton) VALUES (true)
        ON CONFLICT (singleton) DO UPDATE SET singleton = true
        RETURNING i.incarnation INTO v_incarnation;
    END IF;
    FOR attempt IN 1 .. 2 LOOP
        SELECT c.next_txn_seq, c.reserved_txn_seq, c.incarnation INTO v_next, v_reserved, v_seen
          FROM txnq.coordinators c WHERE c.tc_id = p_tc_id FOR NO KEY UPDATE;
        EXIT WHEN FOUND;
        -- The coordinator's first transaction.
        INSERT INTO txnq.coordinators (tc_id) VALUES (p_tc_id)
        ON CONFLICT ON CONSTRAINT coordinators_pkey DO NOTHING;
    END LOOP;
    IF v_seen IS DISTINCT FROM v_incarnation THEN
        -- Opens of an earlier incarnation may have handed out numbers up to
        -- the reserved block and been lost: start above it.
        v_next := greatest(v_next, v_reserved + 1);
    END IF;
    txn_seq := v_next;
    IF txn_seq > v_reserved OR v_seen IS DISTINCT FROM v_incarnation THEN
        v_reserved := txn_seq + c_reserve - 1;
        -- The reservation waits for the flush whatever the caller asked
        -- (the session's own setting, as before any SET LOCAL).
        PERFORM pg_catalog.set_config('synchronous_commit', s.reset_val, true)
           FROM pg_catalog.pg_settings s WHERE s.name = 'synchronous_commit';
    ELSIF p_unflushed THEN
        PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
    END IF;
    UPDATE txnq.coordinators c
       SET next_txn_seq = txn_seq + 1, reserved_txn_seq = v_reserved, incarnation = v_incarnation
     WHERE c.tc_id = p_tc_id;
    tc_id := p_tc_id;
    timeout_at := now() + make_interval(secs => p_timeout_seconds);
    INSERT INTO txnq.transactions (tc_id, txn_seq, timeout_seconds, timeout_at, incarnation)
    VALUES (tc_id, txn_seq, p_timeout_seconds, timeout_at,
            CASE WHEN p_unflushed THEN v_incarnation END);
    INSERT INTO txnq.txn_log (tc_id, txn_seq, state) VALUES (tc_id, txn_seq, 'OPEN');
END;
$$;
