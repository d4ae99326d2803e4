-- txnq.topic_permissions_v1: the grants of txnq.topic_permissions the caller
-- may see, optionally only a role's, or only those that apply to one topic
-- name (its exact grants and every prefix grant it falls under). The view
-- txnq.topic_grants lists them all. Revision 0015 (docs/security.md).
--
-- Who sees what: txnq admins and members of txnq_reader see every grant; any
-- other role sees the grants it holds (to itself or a role it has the
-- privileges of) and the grants on names it may administer.
-- Parameters: role (NULL: every role), topic (NULL: every grant).
-- Returns rows: role, resource, kind ('topic' | 'prefix'), action, granted_by,
--   granted_at, role_exists (false: the role was dropped; the grant stays
--   until revoked), ordered by resource, kind, role, action.
-- Locks: none.
-- Errors: TQ005 for a role or topic name that cannot be one.
CREATE OR REPLACE FUNCTION txnq.topic_permissions_v1(p_role text DEFAULT NULL, p_topic text DEFAULT NULL)
RETURNS TABLE (role text, resource text, kind text, action text, granted_by text,
               granted_at timestamptz, role_exists boolean)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_caller name := txnq.caller_v1();
    v_all boolean;
BEGIN
    IF p_role IS NOT NULL AND p_role !~ '^[A-Za-z0-9_.$-]{1,63}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('role name %s is not valid: use 1 to 63 characters of A-Z a-z 0-9 _ . $ -',
                             quote_literal(left(p_role, 80)));
    END IF;
    IF p_topic IS NOT NULL AND p_topic !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('topic name %s is not valid: use 1 to 200 characters of A-Z a-z 0-9 . _ -',
                             quote_literal(left(p_topic, 80)));
    END IF;
    v_all := txnq.caller_is_admin_v1(v_caller)
             OR coalesce(pg_catalog.pg_has_role(v_caller, pg_catalog.to_regrole('txnq_reader'), 'USAGE'),
                         false);
    RETURN QUERY
    SELECT p.grantee, p.resource, CASE WHEN p.is_prefix THEN 'prefix' ELSE 'topic' END, p.action,
           p.granted_by, p.granted_at, r.oid IS NOT NULL
      FROM txnq.topic_permissions p
      LEFT JOIN pg_catalog.pg_roles r ON r.rolname = p.grantee
     WHERE (p_role IS NULL OR p.grantee = p_role)
       AND (p_topic IS NULL OR (p.resource = p_topic AND NOT p.is_prefix)
            OR (p.is_prefix AND starts_with(p_topic, p.resource)))
       AND (v_all
            OR (r.oid IS NOT NULL AND pg_catalog.pg_has_role(v_caller, r.oid, 'USAGE'))
            OR txnq.permission_granted_v1(v_caller, p.resource, 'admin', p.is_prefix))
     ORDER BY p.resource, p.is_prefix, p.grantee, p.action;
END;
$$;
