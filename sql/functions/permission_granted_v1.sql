-- txnq.permission_granted_v1: does a grant of txnq.topic_permissions allow
-- the caller this action on this topic name? Revision 0015.
--
-- A grant to a role counts for every role that has its privileges
-- (pg_has_role USAGE: the role itself and, through inheritance, its members).
-- 'admin' implies 'produce' and 'consume'. A grant on an exact name counts
-- unless p_prefix_only; a prefix grant counts for every name that starts with
-- it (a topic not yet created included).
--
-- Parameters: caller role OID, topic name (or a prefix being granted), action
--   ('produce' | 'consume' | 'admin'), prefix_only (true: only prefix grants
--   count: may the caller administer everything under a prefix?).
-- Returns true when allowed.
-- Cost: the exact grant is one index probe on (resource); prefix grants are
--   looked up only when no exact grant allows it, one probe per prefix length.
-- Locks: none. Errors: none. Internal.
CREATE OR REPLACE FUNCTION txnq.permission_granted_v1(
    p_caller oid, p_name text, p_action text, p_prefix_only boolean DEFAULT false
)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM txnq.topic_permissions p
         WHERE NOT p_prefix_only AND p.resource = p_name AND NOT p.is_prefix
           AND p.action IN (p_action, 'admin')
           AND pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole(pg_catalog.quote_ident(p.grantee)),
                                      'USAGE')
        UNION ALL
        SELECT 1 FROM txnq.topic_permissions p
         WHERE p.is_prefix
           AND p.resource = ANY (ARRAY(SELECT pg_catalog.left(p_name, n)
                                         FROM pg_catalog.generate_series(1, pg_catalog.length(p_name)) n))
           AND p.action IN (p_action, 'admin')
           AND pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole(pg_catalog.quote_ident(p.grantee)),
                                      'USAGE'))
$$;
