-- txnq.init_transactional_id_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.init_transactional_id_v2 (same signature
-- and result). Made by revision 0015 (functions/superseded_0015_produce.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.init_transactional_id_v1(
    p_transactional_id text,
    OUT epoch integer,
    OUT fenced_tc_ids integer[],
    OUT fenced_txn_seqs bigint[]
)
LANGUAGE sql AS $$
    SELECT i.epoch, i.fenced_tc_ids, i.fenced_txn_seqs FROM txnq.init_transactional_id_v2(p_transactional_id) i
$$;
