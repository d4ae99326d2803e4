-- txnq.unsubscribe_v2: delete a subscription, its cursors and acks.
-- Revision 0015; replaces unsubscribe_v1 (same parameters, result, locks and
-- behaviour for valid input), which took a NULL force for true and an except
-- consumer of another subscription.
--
-- Parameters: subscription_id, except_consumer_id (the caller's own session,
--   which may be connected), force (also when other consumers are connected).
-- Locks: the subscription row.
-- Errors (nothing is changed): TQ006 unknown subscription, TQ007 other
--   consumers still connected, TQ005 force NULL or except_consumer_id a
--   consumer of another subscription; authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.unsubscribe_v2(
    p_subscription_id bigint,
    p_except_consumer_id bigint DEFAULT NULL,
    p_force boolean DEFAULT false
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_topic_id integer;
    v_owner bigint;
BEGIN
    IF p_force IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'unsubscribe_v2: force must be true or false, not NULL',
            HINT = 'pass false to refuse while other consumers are connected, true to unsubscribe anyway';
    END IF;
    SELECT s.topic_id INTO v_topic_id FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s does not exist', coalesce(p_subscription_id::text, 'NULL')),
            HINT = 'it was unsubscribed already, or its topic deleted';
    END IF;
    PERFORM txnq.authorize_v1(v_topic_id, 'consume');
    IF p_except_consumer_id IS NOT NULL THEN
        SELECT k.subscription_id INTO v_owner FROM txnq.consumers k WHERE k.consumer_id = p_except_consumer_id;
        IF FOUND AND v_owner <> p_subscription_id THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('consumer %s belongs to subscription id %s, not to subscription id %s',
                                 p_except_consumer_id, v_owner, p_subscription_id),
                HINT = 'pass the caller''s own consumer of this subscription, or NULL';
        END IF;
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
