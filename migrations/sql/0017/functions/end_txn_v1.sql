-- txnq.end_txn_v1: superseded; kept for the clients of earlier revisions as a
-- thin wrapper of txnq.end_txn_v2 (same signature and result). Made by
-- revision 0015 (functions/superseded_0015_produce.sql); revision 0017 moved
-- it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.end_txn_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_commit boolean,
    p_reason text DEFAULT 'client',
    p_notify boolean DEFAULT false,
    OUT state text,
    OUT reason text
)
LANGUAGE sql AS $$
    SELECT e.state, e.reason FROM txnq.end_txn_v2(p_tc_id, p_txn_seq, p_commit, p_reason, p_notify) e
$$;
