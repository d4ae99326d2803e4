-- txnq.txn_limits_v1: the server's transaction coordinators and maximum
-- transaction timeout (txnq.config), which a client needs to open
-- transactions. Replaces the client's direct read. Revision 0015.
--
-- Parameters: none. Returns one row (tc_count, txn_max_timeout_seconds).
-- Locks: none. Errors: none.
CREATE OR REPLACE FUNCTION txnq.txn_limits_v1()
RETURNS TABLE (tc_count integer, txn_max_timeout_seconds double precision)
LANGUAGE sql STABLE AS $$
    SELECT c.tc_count, c.txn_max_timeout_seconds FROM txnq.config c;
$$;
