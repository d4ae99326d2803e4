-- txnq.require_permission_args_v1: the argument checks of grant and revoke.
-- Revision 0015. Names are compared as text and bound as values, never made
-- into SQL identifiers; the patterns keep out quotes, %, ;, spaces, control
-- and non-ASCII characters all the same.
--
-- Parameters: role, resource, is_prefix, actions, role_must_exist.
-- Returns nothing. Locks: none. Internal.
-- Errors: TQ005, saying which argument and what a valid one looks like.
CREATE OR REPLACE FUNCTION txnq.require_permission_args_v1(
    p_role text, p_resource text, p_is_prefix boolean, p_actions text[], p_role_must_exist boolean
)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_role IS NULL OR p_role !~ '^[A-Za-z0-9_.$-]{1,63}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('role name %s is not valid: use 1 to 63 characters of A-Z a-z 0-9 _ . $ -',
                             coalesce(quote_literal(left(p_role, 80)), 'NULL'));
    END IF;
    IF p_role_must_exist AND pg_catalog.to_regrole(pg_catalog.quote_ident(p_role)) IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('role %s does not exist', quote_ident(p_role)),
            HINT = 'create it first (CREATE ROLE ... LOGIN IN ROLE txnq_client), or check the spelling';
    END IF;
    IF p_resource IS NULL OR p_resource !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('topic name or prefix %s is not valid: use 1 to 200 characters of A-Z a-z 0-9 . _ -',
                             coalesce(quote_literal(left(p_resource, 80)), 'NULL'));
    END IF;
    IF p_is_prefix IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'is_prefix must be true (a topic-name prefix) or false (one topic), not NULL';
    END IF;
    IF p_actions IS NULL OR cardinality(p_actions) = 0 OR cardinality(p_actions) > 3
       OR array_position(p_actions, NULL) IS NOT NULL
       OR NOT p_actions <@ ARRAY['produce', 'consume', 'admin'] THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('actions %s are not valid: give one to three of produce, consume, admin',
                             coalesce(left(p_actions::text, 80), 'NULL'));
    END IF;
END;
$$;
