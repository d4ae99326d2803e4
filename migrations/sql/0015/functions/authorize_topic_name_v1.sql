-- txnq.authorize_topic_name_v1: authorize_v1 for a topic named but not yet
-- created (create_topic): grants on the exact name and on a prefix of it
-- apply. Revision 0015 (docs/security.md).
--
-- Parameters: name (validated by the caller), action as in authorize_v1.
-- Returns nothing.
-- Locks: none (reads the grants).
-- Errors: TQ005 for an unknown action; TQ018 when the role may not.
CREATE OR REPLACE FUNCTION txnq.authorize_topic_name_v1(p_name text, p_action text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_caller name := txnq.caller_v1();
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('produce', 'consume', 'admin') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('unknown action %L: use produce, consume or admin', p_action);
    END IF;
    IF txnq.caller_is_trusted_v1(v_caller) THEN
        RETURN;
    END IF;
    IF p_name IS NULL OR NOT txnq.permission_granted_v1(v_caller, p_name, p_action) THEN
        PERFORM txnq.permission_denied_v1(v_caller, coalesce(p_name, 'NULL'), p_action, false,
                                          CASE WHEN p_action = 'admin' THEN 'create or administer' END);
    END IF;
END;
$$;
