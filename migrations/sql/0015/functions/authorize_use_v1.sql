-- txnq.authorize_use_v1: may the caller see this topic at all (look it up,
-- describe it, list its subscriptions)? Any grant on it does: produce,
-- consume or admin (authorize_v1 for each). Revision 0015.
--
-- Parameters: topic_id. Returns nothing. Locks: none.
-- Errors: TQ001 when an untrusted caller names a topic that does not exist;
--   TQ018 when the role holds no grant on it.
CREATE OR REPLACE FUNCTION txnq.authorize_use_v1(p_topic_id integer)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_caller name := txnq.caller_v1();
    v_name text;
BEGIN
    IF txnq.caller_is_trusted_v1(v_caller) THEN
        RETURN;
    END IF;
    SELECT t.name INTO v_name FROM txnq.topics t WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name or create it first';
    END IF;
    IF NOT txnq.topic_visible_v1(v_caller, v_name) THEN
        PERFORM txnq.permission_denied_v1(v_caller, v_name, 'consume', false, 'use');
    END IF;
END;
$$;
