-- txnq.register_producer_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.register_producer_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_produce.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.register_producer_v1(p_topic_id integer, p_name text)
RETURNS TABLE (producer_id bigint, epoch integer, partition integer, last_sequence bigint)
LANGUAGE sql AS $$
    SELECT r.producer_id, r.epoch, r.partition, r.last_sequence FROM txnq.register_producer_v2(p_topic_id, p_name) r
$$;
