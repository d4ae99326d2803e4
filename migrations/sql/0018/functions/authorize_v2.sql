-- txnq.authorize_v2: may the calling role do this to the topic? Every public
-- function that names a topic calls it (through authorize_v1, which wraps
-- it) before it reads or changes anything. Revision 0018 (docs/security.md).
--
-- What changed from authorize_v1: an application role's grants of its own,
-- on the topic's name or on a prefix of it (how docs/security.md tells you
-- to set one up), are found with the topic's name in ONE statement (the
-- topic's primary key, then the grants' grantee index): 3.6 us instead of
-- 13 us per call, every send, fetch and ack of such a role paid it
-- (bench/compare_revisions.py --role). Grants to groups the caller belongs
-- to are looked up only when it has none of its own (permission_granted_v1).
--
-- Who the caller is: txnq.caller_v1() (the session's SET ROLE, else the
-- login role; never current_user, which is txnq_admin inside the SECURITY
-- DEFINER functions). Trusted callers (txnq.caller_is_trusted_v1: superusers,
-- the schema owner and its members, txnq_admin, txnq_worker, txnq_scheduler)
-- pass without a lookup. 'admin' implies 'produce' and 'consume'.
--
-- Parameters: topic_id; action: 'produce' (append, transactions' sends),
--   'consume' (fetch, acknowledge, subscribe, seek, move a cursor) or 'admin'
--   (create, delete, change policies, grant).
-- Returns nothing.
-- Locks: none (reads the topic row and the grants).
-- Errors: TQ005 for an unknown action; TQ001 when an untrusted caller names a
--   topic that does not exist; TQ018 when the role may not.
CREATE OR REPLACE FUNCTION txnq.authorize_v2(p_topic_id integer, p_action text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_caller name := txnq.caller_v1();
    v_name text;
    v_own_grant boolean;
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('produce', 'consume', 'admin') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('unknown action %L: use produce, consume or admin', p_action);
    END IF;
    IF txnq.caller_is_trusted_v1(v_caller) THEN
        RETURN;
    END IF;
    -- The common case in one statement: a grant to the caller itself.
    SELECT t.name,
           EXISTS (SELECT 1 FROM txnq.topic_permissions p
                    WHERE p.grantee = v_caller::text AND p.action IN (p_action, 'admin')
                      AND CASE WHEN p.is_prefix THEN pg_catalog.starts_with(t.name, p.resource)
                               ELSE p.resource = t.name COLLATE "C" END)
      INTO v_name, v_own_grant
      FROM txnq.topics t WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name or create it first';
    END IF;
    IF v_own_grant THEN
        RETURN;
    END IF;
    -- Grants to roles whose privileges the caller has (groups).
    IF NOT txnq.permission_granted_v1(v_caller, v_name, p_action) THEN
        PERFORM txnq.permission_denied_v1(v_caller, v_name, p_action);
    END IF;
END;
$$;
