-- txnq.authorize_topic_name_v1: authorize_v1 for a topic named but not yet
-- created (create_topic): grants on a topic-name prefix apply. Revision 0015.
--
-- Parameters: name (validated by the caller), action as in authorize_v1.
-- Returns nothing.
-- Errors: TQ005 for an unknown action; TQ018 when the role may not.
-- PERMISSIONS WORK IN PROGRESS (see authorize_v1).
CREATE OR REPLACE FUNCTION txnq.authorize_topic_name_v1(p_name text, p_action text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('produce', 'consume', 'admin') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('unknown action %L: use produce, consume or admin', p_action);
    END IF;
END;
$$;
