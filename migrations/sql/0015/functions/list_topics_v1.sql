-- txnq.list_topics_v1: the topics the caller may see (any grant on them;
-- trusted callers see all), with entries appended and subscriptions.
-- Replaces the client's direct read. Revision 0015.
--
-- Parameters: none.
-- Returns rows: the topic's columns, entries, subscriptions; by name.
-- Locks: none. Errors: none.
CREATE OR REPLACE FUNCTION txnq.list_topics_v1()
RETURNS TABLE (topic_id integer, name text, partitions integer, retention_seconds double precision,
               retention_bytes bigint, ttl_seconds double precision, max_message_bytes integer,
               created_at timestamptz, backlog_quota_bytes bigint, backlog_quota_seconds double precision,
               backlog_quota_policy text, entries bigint, subscriptions bigint)
LANGUAGE sql STABLE AS $$
    SELECT t.topic_id, t.name, t.partitions, t.retention_seconds, t.retention_bytes, t.ttl_seconds,
           t.max_message_bytes, t.created_at, t.backlog_quota_bytes, t.backlog_quota_seconds,
           t.backlog_quota_policy,
           coalesce(sum(h.next_offset), 0)::bigint,
           (SELECT count(*) FROM txnq.subscriptions s WHERE s.topic_id = t.topic_id)
      FROM txnq.topics t
      LEFT JOIN txnq.partitions h ON h.topic_id = t.topic_id
     WHERE txnq.topic_visible_v1(txnq.caller_v1(), t.name)
     GROUP BY t.topic_id
     ORDER BY t.name;
$$;
