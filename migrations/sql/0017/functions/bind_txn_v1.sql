-- txnq.bind_txn_v1: superseded; kept for the clients of earlier revisions as a
-- thin wrapper of txnq.bind_txn_v2 (same signature and result). Made by
-- revision 0015 (functions/superseded_0015_produce.sql); revision 0017 moved
-- it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.bind_txn_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_transactional_id text,
    p_epoch integer
) RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.bind_txn_v2(p_tc_id, p_txn_seq, p_transactional_id, p_epoch)
$$;
