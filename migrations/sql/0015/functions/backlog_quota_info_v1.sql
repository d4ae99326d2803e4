-- txnq.backlog_quota_info_v1: a topic's backlog quota in effect (its own
-- values or the server defaults) and its over-quota state. Revision 0015.
--
-- Parameters: topic_id. Returns one row (none: no such topic).
-- Locks: none. Errors: TQ001 / TQ018 as authorize_use_v1.
CREATE OR REPLACE FUNCTION txnq.backlog_quota_info_v1(p_topic_id integer)
RETURNS TABLE (limit_bytes bigint, limit_seconds double precision, policy text, from_defaults text[],
               exceeded_since timestamptz, exceeded_reason text, checked_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_use_v1(p_topic_id);
    SELECT coalesce(t.backlog_quota_bytes, c.backlog_quota_default_limit_bytes),
           coalesce(t.backlog_quota_seconds, c.backlog_quota_default_limit_seconds),
           coalesce(t.backlog_quota_policy, c.backlog_quota_default_policy),
           array_remove(ARRAY[CASE WHEN t.backlog_quota_bytes IS NULL THEN 'size' END,
                              CASE WHEN t.backlog_quota_seconds IS NULL THEN 'age' END,
                              CASE WHEN t.backlog_quota_policy IS NULL THEN 'policy' END], NULL),
           q.since, q.reason, q.checked_at
      FROM txnq.topics t CROSS JOIN txnq.config c
      LEFT JOIN txnq.backlog_quota_exceeded q ON q.topic_id = t.topic_id
     WHERE t.topic_id = p_topic_id;
$$;
