-- txnq.register_consumer_v1: open a consumer session on a subscription.
--
-- Parameters: subscription_id, consumer name, priority (failover order, lower
--   first), lease_seconds (the session is alive while renewed within this).
-- Returns the consumer id.
-- Locks: the subscription row, so two sessions cannot both become the only
--   consumer of an exclusive subscription.
-- Invariants: expired sessions are removed; an exclusive subscription has at
--   most one live consumer.
-- Errors: TQ006 unknown subscription, TQ007 exclusive subscription busy.
CREATE OR REPLACE FUNCTION txnq.register_consumer_v1(
    p_subscription_id bigint,
    p_name text,
    p_priority integer,
    p_lease_seconds double precision
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_sub txnq.subscriptions%ROWTYPE;
    v_consumer_id bigint;
    v_holder text;
BEGIN
    SELECT * INTO v_sub FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006', MESSAGE = format('subscription id %s does not exist', p_subscription_id);
    END IF;
    DELETE FROM txnq.consumers c
     WHERE c.subscription_id = p_subscription_id AND c.lease_expires_at <= clock_timestamp();
    IF v_sub.subscription_type = 'exclusive' THEN
        SELECT c.name INTO v_holder FROM txnq.consumers c WHERE c.subscription_id = p_subscription_id LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ007',
                MESSAGE = format('exclusive subscription %L already has a consumer (%s)', v_sub.name, v_holder),
                HINT = 'close that consumer, wait for its lease to expire, or use a failover or shared subscription';
        END IF;
    END IF;
    INSERT INTO txnq.consumers (subscription_id, topic_id, name, priority, lease_expires_at)
    VALUES (p_subscription_id, v_sub.topic_id, p_name, p_priority,
            clock_timestamp() + make_interval(secs => p_lease_seconds))
    RETURNING consumer_id INTO v_consumer_id;
    RETURN v_consumer_id;
END;
$$;
