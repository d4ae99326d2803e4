-- txnq.caller_role_v1: the OID of txnq.caller_v1()'s role (the DEFAULT of
-- txnq.transactions.opened_by: an OID keeps the row narrow and follows a
-- rename). Revision 0015; see caller_v1 for who the caller is.
--
-- Parameters: none. Returns the caller's role OID.
-- Locks: none. Errors: none. Internal.
CREATE OR REPLACE FUNCTION txnq.caller_role_v1()
RETURNS oid
LANGUAGE sql STABLE AS $$
    SELECT pg_catalog.to_regrole(pg_catalog.quote_ident(txnq.caller_v1()))::oid
$$;
