-- txnq.caller_is_trusted_v1: does the caller pass every permission check
-- without grants? Revision 0015.
--
-- Trusted: superusers, the owner of schema txnq and its members (a laptop
-- running as the database owner that migrated), members of txnq_admin, and
-- the two worker roles txnq_worker and txnq_scheduler (USAGE: they have the
-- role's privileges). The worker roles are trusted by the hooks because
-- their EXECUTE grants already confine them to the coordinator's and the
-- lifecycle's functions (grant_roles_v2), and those functions end and
-- complete other roles' transactions by design (abort_timed_out_v1 ->
-- end_txn_v1, the marker phase). A role that is a member of txnq_client and
-- of a worker role therefore passes the topic checks: do not combine them.
--
-- Parameters: the caller's role OID (txnq.caller_role_v1()).
-- Returns true when trusted. Locks: none. Errors: none. Internal.
-- Cost: a few cached catalog lookups (role membership is cached per backend).
CREATE OR REPLACE FUNCTION txnq.caller_is_trusted_v1(p_caller oid)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT p_caller IS NOT NULL AND (
           pg_catalog.pg_has_role(p_caller, (SELECT n.nspowner FROM pg_catalog.pg_namespace n
                                              WHERE n.nspname = 'txnq'), 'MEMBER')
        OR coalesce(pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole('txnq_admin'), 'MEMBER'), false)
        OR coalesce(pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole('txnq_worker'), 'USAGE'), false)
        OR coalesce(pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole('txnq_scheduler'), 'USAGE'), false))
$$;
