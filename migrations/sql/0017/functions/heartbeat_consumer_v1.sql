-- txnq.heartbeat_consumer_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.heartbeat_consumer_v2 (same signature
-- and result). Made by revision 0015 (functions/superseded_0015_consume.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.heartbeat_consumer_v1(p_consumer_id bigint, p_lease_seconds double precision)
RETURNS TABLE (consumer_id bigint, name text, priority integer)
LANGUAGE sql AS $$
    SELECT * FROM txnq.heartbeat_consumer_v2(p_consumer_id, p_lease_seconds)
$$;
