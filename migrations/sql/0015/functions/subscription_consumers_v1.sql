-- txnq.subscription_consumers_v1: the live consumers of a subscription.
-- Revision 0015.
--
-- Parameters: subscription_id.
-- Returns rows (consumer_id, name, priority, connected_at, lease_expires_at).
-- Locks: none. Errors: TQ018 when the role holds no grant on its topic.
CREATE OR REPLACE FUNCTION txnq.subscription_consumers_v1(p_subscription_id bigint)
RETURNS TABLE (consumer_id bigint, name text, priority integer, connected_at timestamptz,
               lease_expires_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_use_v1(s.topic_id) FROM txnq.subscriptions s
     WHERE s.subscription_id = p_subscription_id;
    SELECT k.consumer_id, k.name, k.priority, k.connected_at, k.lease_expires_at
      FROM txnq.consumers k
     WHERE k.subscription_id = p_subscription_id AND k.lease_expires_at > now()
     ORDER BY k.priority, k.name, k.consumer_id;
$$;
