-- txnq.end_txn_v2: superseded by revision 0026; kept for the clients of
-- earlier revisions (and the Spark sink, and SQL callers) as a thin wrapper
-- of txnq.end_txn_v3 (same signature and result).
CREATE OR REPLACE FUNCTION txnq.end_txn_v2(
    p_tc_id integer,
    p_txn_seq bigint,
    p_commit boolean,
    p_reason text DEFAULT 'client',
    p_notify boolean DEFAULT false,
    OUT state text,
    OUT reason text
)
LANGUAGE sql AS $$
    SELECT e.state, e.reason FROM txnq.end_txn_v3(p_tc_id, p_txn_seq, p_commit, p_reason, p_notify) e
$$;
