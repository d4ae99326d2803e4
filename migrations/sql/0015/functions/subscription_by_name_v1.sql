-- txnq.subscription_by_name_v1: a subscription of a topic by name.
-- Revision 0015.
--
-- Parameters: topic_id, name.
-- Returns one row (subscription_id, name, subscription_type, isolation,
--   created_at), none when the topic has no such subscription.
-- Locks: none. Errors: TQ001 / TQ018 as authorize_use_v1.
CREATE OR REPLACE FUNCTION txnq.subscription_by_name_v1(p_topic_id integer, p_name text)
RETURNS TABLE (subscription_id bigint, name text, subscription_type text, isolation text,
               created_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_use_v1(p_topic_id);
    SELECT s.subscription_id, s.name, s.subscription_type, s.isolation, s.created_at
      FROM txnq.subscriptions s WHERE s.topic_id = p_topic_id AND s.name = p_name;
$$;
