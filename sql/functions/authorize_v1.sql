-- txnq.authorize_v1: may the calling role do this to the topic? Every public
-- function that names a topic calls it before it reads or changes anything.
-- Revision 0015.
--
-- Parameters: topic_id; action: 'produce' (append, transactions' sends),
--   'consume' (fetch, acknowledge, subscribe, seek, move a cursor) or 'admin'
--   (create, delete, change policies, grant).
-- Returns nothing.
-- Errors: TQ005 for an unknown action; TQ018 when the role may not.
-- PERMISSIONS WORK IN PROGRESS: the per-topic grants (docs/security.md) are
-- filled in by the permissions change before revision 0015 ships; until then
-- this checks its arguments only.
CREATE OR REPLACE FUNCTION txnq.authorize_v1(p_topic_id integer, p_action text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF p_action IS NULL OR p_action NOT IN ('produce', 'consume', 'admin') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('unknown action %L: use produce, consume or admin', p_action);
    END IF;
END;
$$;
