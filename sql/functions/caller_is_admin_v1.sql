-- txnq.caller_is_admin_v1: is the caller an administrator of all of txnq?
-- Revision 0015. Superusers, the owner of schema txnq and its members, members
-- of txnq_admin. (Unlike caller_is_trusted_v1, not the worker roles: used
-- where a worker has no business, e.g. who may see and change every grant.)
--
-- Parameters: the caller's role OID. Returns true when admin.
-- Locks: none. Errors: none. Internal.
CREATE OR REPLACE FUNCTION txnq.caller_is_admin_v1(p_caller oid)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT p_caller IS NOT NULL AND (
           pg_catalog.pg_has_role(p_caller, (SELECT n.nspowner FROM pg_catalog.pg_namespace n
                                              WHERE n.nspname = 'txnq'), 'MEMBER')
        OR coalesce(pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole('txnq_admin'), 'MEMBER'), false))
$$;
