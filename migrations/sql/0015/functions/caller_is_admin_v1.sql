-- txnq.caller_is_admin_v1: is the caller an administrator of all of txnq?
-- Revision 0015. Superusers, the owner of schema txnq and the roles that have
-- its privileges (CREATE on the schema), members of txnq_admin. (Unlike
-- caller_is_trusted_v1, not the worker roles: used where a worker has no
-- business, e.g. who may see and change every grant.)
--
-- Parameters: the caller's role name. Returns true when admin.
-- Locks: none. Errors: none. Internal.
CREATE OR REPLACE FUNCTION txnq.caller_is_admin_v1(p_caller name)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_catalog.has_schema_privilege(p_caller, 'txnq', 'CREATE')
        OR coalesce(pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole('txnq_admin'), 'MEMBER'), false)
$$;
