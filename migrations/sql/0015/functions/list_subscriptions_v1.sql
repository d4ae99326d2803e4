-- txnq.list_subscriptions_v1: a topic's subscriptions with their backlog and
-- live consumers. Revision 0015.
--
-- Parameters: topic_id. Returns rows by name.
-- Locks: none. Errors: TQ001 / TQ018 as authorize_use_v1.
CREATE OR REPLACE FUNCTION txnq.list_subscriptions_v1(p_topic_id integer)
RETURNS TABLE (subscription_id bigint, name text, subscription_type text, isolation text,
               created_at timestamptz, backlog_entries bigint, consumers bigint)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_use_v1(p_topic_id);
    SELECT s.subscription_id, s.name, s.subscription_type, s.isolation, s.created_at,
           coalesce(sum(greatest(h.max_read_offset - c.mark_delete_offset, 0)), 0)::bigint,
           (SELECT count(*) FROM txnq.consumers k
             WHERE k.subscription_id = s.subscription_id AND k.lease_expires_at > now())
      FROM txnq.subscriptions s
      LEFT JOIN txnq.cursors c ON c.subscription_id = s.subscription_id AND c.topic_id = s.topic_id
      LEFT JOIN txnq.partitions h ON h.topic_id = c.topic_id AND h.partition = c.partition
     WHERE s.topic_id = p_topic_id
     GROUP BY s.subscription_id
     ORDER BY s.name;
$$;
