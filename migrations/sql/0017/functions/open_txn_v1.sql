-- txnq.open_txn_v1: superseded; kept for the clients of earlier revisions as a
-- thin wrapper of txnq.open_txn_v2 (same signature and result). Made by
-- revision 0015 (functions/superseded_0015_produce.sql); revision 0017 moved
-- it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.open_txn_v1(
    p_tc_id integer,
    p_timeout_seconds double precision,
    OUT tc_id integer,
    OUT txn_seq bigint,
    OUT timeout_at timestamptz
)
LANGUAGE sql AS $$
    SELECT o.tc_id, o.txn_seq, o.timeout_at FROM txnq.open_txn_v2(p_tc_id, p_timeout_seconds) o
$$;
