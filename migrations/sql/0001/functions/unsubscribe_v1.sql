-- txnq.unsubscribe_v1: delete a subscription, its cursors and acks.
--
-- Parameters: subscription_id, except_consumer_id (the caller's own session,
--   which may be connected), force (also when other consumers are connected).
-- Locks: the subscription row.
-- Errors: TQ006 unknown subscription, TQ007 other consumers still connected.
CREATE OR REPLACE FUNCTION txnq.unsubscribe_v1(
    p_subscription_id bigint,
    p_except_consumer_id bigint DEFAULT NULL,
    p_force boolean DEFAULT false
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006', MESSAGE = format('subscription id %s does not exist', p_subscription_id);
    END IF;
    IF NOT p_force AND EXISTS (
        SELECT 1 FROM txnq.consumers c
         WHERE c.subscription_id = p_subscription_id AND c.lease_expires_at > clock_timestamp()
           AND c.consumer_id IS DISTINCT FROM p_except_consumer_id) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ007',
            MESSAGE = 'the subscription has other connected consumers',
            HINT = 'close them first, or force the unsubscribe';
    END IF;
    DELETE FROM txnq.individual_acks a WHERE a.subscription_id = p_subscription_id;
    DELETE FROM txnq.cursors c WHERE c.subscription_id = p_subscription_id;
    DELETE FROM txnq.consumers c WHERE c.subscription_id = p_subscription_id;
    DELETE FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id;
END;
$$;
