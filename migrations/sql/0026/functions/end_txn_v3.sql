-- txnq.end_txn_v3: decide a transaction (protocol step 5, the point of no
-- return): OPEN -> COMMITTING or ABORTING, as Kafka's PREPARE_COMMIT/ABORT.
-- Revision 0026: what changed from end_txn_v2 (now its wrapper, same
-- signature): a commit of a transaction opened with unflushed writes
-- (txnq.open_txn_v3) in another server incarnation than the current one --
-- PostgreSQL crashed or failed over since, and writes of the transaction
-- that were not flushed yet may be lost -- decides ABORTING with reason
-- crash. The decision waits for the flush (call it in a transaction of its
-- own, with synchronous_commit on), and with it every unflushed write of
-- the transaction before it: WAL is flushed in order.
--
-- Parameters: (tc_id, txn_seq), commit (true: commit, false: abort), reason
--   ('client' or 'admin'), notify (wake the coordinator workers: set it when
--   the caller will not run the marker phase itself); none of them NULL.
-- Returns one row: state and reason after the call. Idempotent: a repeated
--   decision returns the current state. A commit asked of a transaction past its
--   timeout decides ABORTING (reason timeout) instead; a commit of an aborted
--   transaction or an abort of a committed one changes nothing and returns the
--   state that stands: the caller reports it. A commit of a transaction whose
--   recorded incarnation is not the server's current one decides ABORTING
--   (reason crash).
-- Permissions: txnq.authorize_txn_v1 once the transaction is found, before
--   anything is changed.
-- Locks: the transaction row FOR UPDATE: waits for the appends and acks in flight
--   (they hold it FOR SHARE), so every partition and subscription they registered
--   is in the transaction log before the decision is.
-- Errors: TQ014 unknown transaction, TQ005 NULL argument or bad reason, TQ018
--   not permitted.
CREATE OR REPLACE FUNCTION txnq.end_txn_v3(
    p_tc_id integer,
    p_txn_seq bigint,
    p_commit boolean,
    p_reason text DEFAULT 'client',
    p_notify boolean DEFAULT false,
    OUT state text,
    OUT reason text
)
LANGUAGE plpgsql AS $$
DECLARE
    v_timeout_at timestamptz;
    v_incarnation uuid;
BEGIN
    IF p_tc_id IS NULL OR p_txn_seq IS NULL OR p_commit IS NULL OR p_notify IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('end_txn_v3: tc_id (%s), txn_seq (%s), commit (%s) and notify (%s) must not be NULL',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL'),
                             coalesce(p_commit::text, 'NULL'), coalesce(p_notify::text, 'NULL')),
            HINT = 'pass the transaction id and commit true (commit) or false (abort); nothing was decided';
    END IF;
    IF p_reason IS NULL OR p_reason NOT IN ('client', 'admin') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('end_txn_v3: reason must be client or admin, not %s',
                             coalesce(quote_literal(p_reason), 'NULL')),
            HINT = 'a client ends its transactions with reason client; nothing was decided';
    END IF;
    SELECT t.state, t.reason, t.timeout_at, t.incarnation INTO state, reason, v_timeout_at, v_incarnation
      FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s does not exist', p_tc_id, p_txn_seq),
            HINT = 'pass the id txnq.open_txn_v2 returned; nothing was decided';
    END IF;
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    IF state <> 'OPEN' THEN
        RETURN;
    END IF;
    IF p_commit AND v_timeout_at <= now() THEN
        state := 'ABORTING';
        reason := 'timeout';
    ELSIF p_commit AND v_incarnation IS NOT NULL
          AND v_incarnation IS DISTINCT FROM (SELECT i.incarnation FROM txnq.server_incarnation i) THEN
        state := 'ABORTING';
        reason := 'crash';
    ELSE
        state := CASE WHEN p_commit THEN 'COMMITTING' ELSE 'ABORTING' END;
        reason := p_reason;
    END IF;
    UPDATE txnq.transactions t SET state = end_txn_v3.state, reason = end_txn_v3.reason, decided_at = now()
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    INSERT INTO txnq.txn_log (tc_id, txn_seq, state, reason) VALUES (p_tc_id, p_txn_seq, state, reason);
    IF p_notify THEN
        PERFORM pg_notify('txnq_coordinator', p_tc_id::text);
    END IF;
END;
$$;
