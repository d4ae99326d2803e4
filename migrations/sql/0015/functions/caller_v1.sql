-- txnq.caller_v1: the role a permission check judges, by name. Revision 0015.
--
-- Inside a SECURITY DEFINER function current_user is the function's owner
-- (txnq_admin), so the caller is what PostgreSQL keeps of the session: the
-- `role` setting when the session ran SET ROLE (or SET LOCAL ROLE; PostgreSQL
-- allowed it only to a role the login role is a member of), else
-- session_user, the role that logged in. Checked on PostgreSQL 15: neither
-- changes while a SECURITY DEFINER function runs. Consequences (see
-- docs/security.md): an application's own SECURITY DEFINER function that calls
-- txnq is judged as the session's role, not as that function's owner; a
-- superuser's SET SESSION AUTHORIZATION changes session_user and so the caller.
--
-- A plain SQL expression (no sub-select), so PostgreSQL inlines it into the
-- hooks: it costs no function call.
-- Parameters: none. Returns the caller's role name.
-- Locks: none. Errors: none. Internal.
CREATE OR REPLACE FUNCTION txnq.caller_v1()
RETURNS name
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN pg_catalog.current_setting('role') = 'none' THEN session_user
                ELSE pg_catalog.current_setting('role')::name END
$$;
