-- txnq.discard_staged_v1: an application transaction's abort(): what txnq
-- staged in the caller's PostgreSQL transaction is dropped, the caller's
-- transaction goes on. Replaces the client's direct DELETEs. Revision 0015.
--
-- Parameters: none (the caller's transaction, pg_current_xact_id()).
-- Returns nothing. Locks: the staged rows it deletes (only the caller's).
-- Errors: none.
CREATE OR REPLACE FUNCTION txnq.discard_staged_v1()
RETURNS void
LANGUAGE sql AS $$
    DELETE FROM txnq.staged_sends WHERE xact = pg_current_xact_id();
    DELETE FROM txnq.staged_acks WHERE xact = pg_current_xact_id();
$$;
