-- txnq.grant_topic_permission_v1: allow a role to produce, consume or
-- administer a topic, or every topic whose name starts with a prefix
-- (Pulsar's grant-permission). Revision 0015 (docs/security.md).
--
-- Parameters: role (an existing PostgreSQL role: 1 to 63 characters of
--   A-Z a-z 0-9 _ . $ -), resource (a topic name, or a prefix when is_prefix:
--   1 to 200 characters of A-Z a-z 0-9 . _ -; the topic need not exist),
--   is_prefix, actions (a non-empty array of 'produce', 'consume', 'admin';
--   'admin' implies the other two).
-- Who may: txnq admins (caller_is_admin_v1), and a role with 'admin' on the
--   topic (on a prefix: an 'admin' grant on a prefix of that prefix).
-- Returns the number of grants added (a grant that exists is kept as is).
-- Locks: the grant rows it inserts.
-- Errors: TQ005 bad role, name, prefix flag or actions, or a role that does
--   not exist; TQ018 when the caller may not.
CREATE OR REPLACE FUNCTION txnq.grant_topic_permission_v1(
    p_role text, p_resource text, p_is_prefix boolean, p_actions text[]
)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_caller name := txnq.caller_v1();
    v_added integer;
BEGIN
    PERFORM txnq.require_permission_args_v1(p_role, p_resource, p_is_prefix, p_actions, true);
    IF NOT txnq.caller_is_admin_v1(v_caller)
       AND NOT txnq.permission_granted_v1(v_caller, p_resource, 'admin', p_is_prefix) THEN
        PERFORM txnq.permission_denied_v1(v_caller, p_resource, 'admin', p_is_prefix, 'grant permissions on');
    END IF;
    INSERT INTO txnq.topic_permissions (resource, is_prefix, grantee, action, granted_by)
    SELECT p_resource, p_is_prefix, p_role, a, v_caller
      FROM (SELECT DISTINCT a FROM unnest(p_actions) a) actions
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS v_added = ROW_COUNT;
    RETURN v_added;
END;
$$;
