-- txnq.revoke_topic_permission_v1: take back grants of
-- grant_topic_permission_v1 (Pulsar's revoke-permission). Revision 0015.
--
-- Parameters: role (as in grant_topic_permission_v1, but it need not exist
--   any more: grants of a dropped role can be cleaned up), resource and
--   is_prefix exactly as granted (revoking a prefix grant leaves the grants
--   on topics under it), actions (NULL: every action).
-- Who may: as grant_topic_permission_v1.
-- Returns the number of grants removed (0: there was none).
-- Locks: the grant rows it deletes.
-- Errors: TQ005 bad role, name, prefix flag or actions; TQ018 when the caller may not.
CREATE OR REPLACE FUNCTION txnq.revoke_topic_permission_v1(
    p_role text, p_resource text, p_is_prefix boolean, p_actions text[] DEFAULT NULL
)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_caller name := txnq.caller_v1();
    v_removed integer;
BEGIN
    PERFORM txnq.require_permission_args_v1(p_role, p_resource, p_is_prefix,
                                            coalesce(p_actions, ARRAY['produce', 'consume', 'admin']),
                                            false);
    IF NOT txnq.caller_is_admin_v1(v_caller)
       AND NOT txnq.permission_granted_v1(v_caller, p_resource, 'admin', p_is_prefix) THEN
        PERFORM txnq.permission_denied_v1(v_caller, p_resource, 'admin', p_is_prefix, 'revoke permissions on');
    END IF;
    DELETE FROM txnq.topic_permissions p
     WHERE p.resource = p_resource AND p.is_prefix = p_is_prefix AND p.grantee = p_role
       AND (p_actions IS NULL OR p.action = ANY (p_actions));
    GET DIAGNOSTICS v_removed = ROW_COUNT;
    RETURN v_removed;
END;
$$;
