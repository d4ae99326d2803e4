-- txnq.permission_granted_v1: does a grant of txnq.topic_permissions allow
-- the caller this action on this topic name? Revision 0015.
--
-- A grant to a role counts for every role that has its privileges
-- (pg_has_role USAGE: the role itself and, through inheritance, its members).
-- 'admin' implies 'produce' and 'consume'. A grant on an exact name counts
-- unless p_prefix_only; a prefix grant counts for every name that starts with
-- it (a topic not yet created included).
--
-- Parameters: caller role name, topic name (or a prefix being granted),
--   action ('produce' | 'consume' | 'admin'), prefix_only (true: only prefix
--   grants count: may the caller administer everything under a prefix?).
-- Returns true when allowed.
-- Cost: PL/pgSQL keeps the plans for the session. The exact grant is one
--   probe of the primary key; prefix grants are looked up only when no exact
--   grant allows it: first the caller's own (index on grantee), then any
--   group's (the partial index of prefixes, among those between the name's
--   first character and the name itself: byte order, resource is COLLATE
--   "C", where every prefix of a name sorts at or before it).
-- Locks: none. Errors: none. Internal.
CREATE OR REPLACE FUNCTION txnq.permission_granted_v1(
    p_caller name, p_name text, p_action text, p_prefix_only boolean DEFAULT false
)
RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NOT p_prefix_only AND EXISTS (
        SELECT 1 FROM txnq.topic_permissions p
         WHERE p.resource = p_name COLLATE "C" AND NOT p.is_prefix AND p.action IN (p_action, 'admin')
           AND (p.grantee = p_caller::text
                OR pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole(pg_catalog.quote_ident(p.grantee)),
                                          'USAGE'))) THEN
        RETURN true;
    END IF;
    -- Prefix grants to the caller itself: its own few, by the grantee index
    -- (no range on resource here, so that the plan cannot prefer the prefix
    -- index and walk every role's prefixes).
    IF EXISTS (
        SELECT 1 FROM txnq.topic_permissions p
         WHERE p.grantee = p_caller::text AND p.is_prefix
           AND pg_catalog.starts_with(p_name, p.resource) AND p.action IN (p_action, 'admin')) THEN
        RETURN true;
    END IF;
    -- Prefix grants to roles whose privileges the caller has (groups).
    RETURN EXISTS (
        SELECT 1 FROM txnq.topic_permissions p
         WHERE p.is_prefix AND p.grantee <> p_caller::text
           AND p.resource >= pg_catalog.left(p_name, 1) COLLATE "C" AND p.resource <= p_name COLLATE "C"
           AND pg_catalog.starts_with(p_name, p.resource) AND p.action IN (p_action, 'admin')
           AND pg_catalog.pg_has_role(p_caller, pg_catalog.to_regrole(pg_catalog.quote_ident(p.grantee)),
                                      'USAGE'));
END;
$$;
