-- txnq.authorize_v1: may the calling role do this to the topic? Every public
-- function that names a topic calls it before it reads or changes anything.
-- Revision 0015 (docs/security.md).
--
-- Who the caller is: txnq.caller_v1() (the session's SET ROLE, else the
-- login role; never current_user, which is txnq_admin inside the SECURITY
-- DEFINER functions). Trusted callers (txnq.caller_is_trusted_v1: superusers,
-- the schema owner and its members, txnq_admin, txnq_worker, txnq_scheduler)
-- pass without a lookup; any other role needs a grant of
-- txnq.topic_permissions on the topic's name or on a prefix of it ('admin'
-- implies 'produce' and 'consume'): a grant on the name is one statement (the
-- topic's primary key, then the grants' primary key); prefixes are looked up
-- only when it finds none (permission_granted_v1).
--
-- Parameters: topic_id; action: 'produce' (append, transactions' sends),
--   'consume' (fetch, acknowledge, subscribe, seek, move a cursor) or 'admin'
--   (create, delete, change policies, grant).
-- Returns nothing.
-- Locks: none (reads the topic row and the grants).
-- Errors: TQ005 for an unknown action; TQ001 when an untrusted caller names a
--   topic that does not exist; TQ018 when the role may not.
CREATE OR REPLACE FUNCTION txnq.authorize_v1(p_topic_id integer, p_action text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_caller name := txnq.caller_v1();
    v_name text;
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('produce', 'consume', 'admin') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('unknown action %L: use produce, consume or admin', p_action);
    END IF;
    IF txnq.caller_is_trusted_v1(v_caller) THEN
        RETURN;
    END IF;
    -- The common case in one statement: a grant on the topic's own name.
    IF EXISTS (SELECT 1 FROM txnq.topics t
                 JOIN txnq.topic_permissions p ON p.resource = t.name COLLATE "C" AND NOT p.is_prefix
                WHERE t.topic_id = p_topic_id AND p.action IN (p_action, 'admin')
                  AND (p.grantee = v_caller::text
                       OR pg_catalog.pg_has_role(v_caller,
                                                 pg_catalog.to_regrole(pg_catalog.quote_ident(p.grantee)),
                                                 'USAGE'))) THEN
        RETURN;
    END IF;
    SELECT t.name INTO v_name FROM txnq.topics t WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name or create it first';
    END IF;
    IF NOT txnq.permission_granted_v1(v_caller, v_name, p_action, true) THEN
        PERFORM txnq.permission_denied_v1(v_caller, v_name, p_action);
    END IF;
END;
$$;
