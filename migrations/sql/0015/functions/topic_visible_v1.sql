-- txnq.topic_visible_v1: does the caller hold any grant on this topic name
-- (produce, consume or admin; trusted callers see every topic)? Filters the
-- listings (list_topics_v1, spark_ingestion_list_v1). Revision 0015.
--
-- Parameters: caller role name, topic name. Returns true when visible.
-- Locks: none. Errors: none. Internal.
CREATE OR REPLACE FUNCTION txnq.topic_visible_v1(p_caller name, p_name text)
RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN txnq.caller_is_trusted_v1(p_caller)
        OR txnq.permission_granted_v1(p_caller, p_name, 'produce')
        OR txnq.permission_granted_v1(p_caller, p_name, 'consume');
END;
$$;
