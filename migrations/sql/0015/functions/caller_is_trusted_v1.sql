-- txnq.caller_is_trusted_v1: does the caller pass every permission check
-- without grants? Revision 0015.
--
-- Trusted: superusers, the owner of schema txnq and the roles that have its
-- privileges (CREATE on the schema: a laptop running as the database owner
-- that migrated; txnq_admin and its members once migrate handed txnq to
-- it), members of txnq_admin, and the two worker roles txnq_worker and
-- txnq_scheduler (USAGE: they have the role's privileges). The worker roles
-- are trusted by the hooks because their EXECUTE grants already confine them
-- to the coordinator's and the lifecycle's functions (grant_roles_v2), and
-- those end and complete other roles' transactions by design
-- (abort_timed_out_v1 -> end_txn_v1, the marker phase). A role that is a
-- member of txnq_client and of a worker role therefore passes the topic
-- checks: do not combine them.
--
-- A plain SQL expression (no sub-select), so PostgreSQL inlines it into the
-- hooks: a few role-membership tests, which PostgreSQL caches per session.
-- Parameters: the caller's role name (txnq.caller_v1()).
-- Returns true when trusted. Locks: none. Errors: none. Internal.
CREATE OR REPLACE FUNCTION txnq.caller_is_trusted_v1(p_caller name)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_catalog.has_schema_privilege(p_caller, 'txnq', 'CREATE')
        OR coalesce(pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole('txnq_admin'), 'MEMBER'), false)
        OR coalesce(pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole('txnq_worker'), 'USAGE'), false)
        OR coalesce(pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole('txnq_scheduler'), 'USAGE'), false)
$$;
