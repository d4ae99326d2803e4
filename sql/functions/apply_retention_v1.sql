-- txnq.apply_retention_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.apply_retention_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.apply_retention_v1(p_topic_id integer)
RETURNS TABLE (partition integer, ledger_id bigint, first_offset bigint, last_offset bigint,
               size_bytes bigint)
LANGUAGE sql AS $$
    SELECT r.partition, r.ledger_id, r.first_offset, r.last_offset, r.size_bytes
      FROM txnq.apply_retention_v2(p_topic_id) r
$$;
