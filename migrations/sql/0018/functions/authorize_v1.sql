-- txnq.authorize_v1: superseded by authorize_v2 (revision 0018), which finds
-- an application role's own grants in one statement; this thin wrapper keeps
-- every function that calls authorize_v1 on the new body. Parameters,
-- result and errors as authorize_v2.
CREATE OR REPLACE FUNCTION txnq.authorize_v1(p_topic_id integer, p_action text)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM txnq.authorize_v2(p_topic_id, p_action);
END;
$$;
