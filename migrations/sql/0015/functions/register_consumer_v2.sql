-- txnq.register_consumer_v2: open a consumer session on a subscription.
-- Revision 0015; replaces register_consumer_v1 (same parameters, result,
-- locks and behaviour for valid input), which failed with raw PostgreSQL
-- errors (23502, 22008) for a NULL name, priority or lease or a NaN,
-- infinite or huge lease, took any name, and a negative lease.
--
-- Parameters: subscription_id, consumer name (1 to 200 of A-Z a-z 0-9 . _ -),
--   priority (failover order, lower first), lease_seconds (the session is
--   alive while renewed within this; more than 0, at most 315,360,000: ten
--   years).
-- Returns the consumer id.
-- Locks: the subscription row, so two sessions cannot both become the only
--   consumer of an exclusive subscription.
-- Invariants: expired sessions are removed; an exclusive subscription has at
--   most one live consumer.
-- Errors (nothing is changed): TQ006 unknown subscription, TQ007 exclusive
--   subscription busy, TQ005 a bad name, priority or lease; authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.register_consumer_v2(
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
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('consumer name %L is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -', p_name),
            HINT = 'name the consumer (the failover order sorts by priority, then name)';
    END IF;
    IF p_priority IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'register_consumer_v2: priority must not be NULL',
            HINT = 'pass 0 unless failover consumers need an order (lower first)';
    END IF;
    PERFORM txnq.require_number_v1('register_consumer_v2: lease_seconds', p_lease_seconds, NULL, 315360000);
    IF p_lease_seconds <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('register_consumer_v2: lease_seconds must be positive, not %s', p_lease_seconds),
            HINT = 'pass how long the session lives without a heartbeat (e.g. 10)';
    END IF;
    SELECT * INTO v_sub FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s does not exist', coalesce(p_subscription_id::text, 'NULL')),
            HINT = 'subscribe first (txnq.subscribe_v2) and pass the id it returned';
    END IF;
    PERFORM txnq.authorize_v1(v_sub.topic_id, 'consume');
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
