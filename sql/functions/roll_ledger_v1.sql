-- txnq.roll_ledger_v1: superseded; kept for the clients of earlier revisions
-- as a thin wrapper of txnq.roll_ledger_v2 (same signature and result). Made
-- by revision 0015 (functions/superseded_0015_workers.sql); revision 0017
-- moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.roll_ledger_v1(p_topic_id integer, p_partition integer, p_last_offset bigint)
RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.roll_ledger_v2(p_topic_id, p_partition, p_last_offset)
$$;
