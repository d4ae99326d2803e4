-- txnq.init_transactional_id_v2: a thin wrapper of init_transactional_id_v3
-- since revision 0020 (a new id starts at the epoch floor). Revision 0015
-- made v2 check the caller's permission on each transaction it aborts.
CREATE OR REPLACE FUNCTION txnq.init_transactional_id_v2(
    p_transactional_id text,
    OUT epoch integer,
    OUT fenced_tc_ids integer[],
    OUT fenced_txn_seqs bigint[]
)
LANGUAGE sql AS $$
    SELECT i.epoch, i.fenced_tc_ids, i.fenced_txn_seqs FROM txnq.init_transactional_id_v3(p_transactional_id) i
$$;
