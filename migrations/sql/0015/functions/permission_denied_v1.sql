-- txnq.permission_denied_v1: raise TQ018 for a caller that may not act on a
-- topic, naming the role, the action and the topic and the command an admin
-- would run. Revision 0015.
--
-- Parameters: caller role name, topic name, action, is_prefix (the name is a
--   prefix being granted or revoked), verb (what was attempted, for the
--   message; NULL: from the action).
-- Returns nothing: always raises. Locks: none. Internal.
-- Errors: TQ018.
CREATE OR REPLACE FUNCTION txnq.permission_denied_v1(
    p_caller name, p_name text, p_action text, p_is_prefix boolean DEFAULT false, p_verb text DEFAULT NULL
)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_role text := p_caller;
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'TQ018',
        MESSAGE = format('permission denied: role %s may not %s %s %s', quote_ident(v_role),
                         coalesce(p_verb, CASE p_action WHEN 'produce' THEN 'produce to'
                                                        WHEN 'consume' THEN 'consume from'
                                                        ELSE 'administer' END),
                         CASE WHEN p_is_prefix THEN 'topics starting with' ELSE 'topic' END,
                         quote_literal(p_name)),
        HINT = format('an admin can allow it with: txnq topics grant %s%s --role %s --action %s',
                      p_name, CASE WHEN p_is_prefix THEN ' --prefix' ELSE '' END, v_role, p_action);
END;
$$;
