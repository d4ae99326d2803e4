-- txnq.subscribe_v1: create a subscription (with a cursor per partition) or
-- return the existing one.
--
-- Parameters: topic_id, name, subscription_type (exclusive|failover|shared|
--   key_shared), isolation (read_committed|read_uncommitted), initial_position
--   (earliest|latest; only used when the subscription is created).
-- Returns the subscription id.
-- Locks: the topic row (FOR KEY SHARE, so a concurrent delete or partition
--   change waits) and the subscription row when it exists.
-- Invariants: an existing subscription changes type or isolation only while no
--   consumer is connected (as Pulsar); cursors exist for every partition.
-- Errors: TQ001 unknown topic, TQ008 type mismatch, TQ005 bad arguments.
CREATE OR REPLACE FUNCTION txnq.subscribe_v1(
    p_topic_id integer,
    p_name text,
    p_subscription_type text,
    p_isolation text,
    p_initial_position text
) RETURNS bigint
LANGUAGE plpgsql AS $$
DECLARE
    v_sub txnq.subscriptions%ROWTYPE;
BEGIN
    IF p_name IS NULL OR p_name !~ '^[A-Za-z0-9._-]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('subscription name %L is not valid: use 1 to 200 of A-Z a-z 0-9 . _ -', p_name);
    END IF;
    IF p_subscription_type IS NULL OR p_subscription_type NOT IN ('exclusive', 'failover', 'shared', 'key_shared') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('subscription type must be exclusive, failover, shared or key_shared, not %L', p_subscription_type);
    END IF;
    IF p_isolation IS NULL OR p_isolation NOT IN ('read_committed', 'read_uncommitted') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('isolation must be read_committed or read_uncommitted, not %L', p_isolation);
    END IF;
    IF p_initial_position NOT IN ('earliest', 'latest') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('initial position must be earliest or latest, not %L', p_initial_position);
    END IF;
    PERFORM 1 FROM txnq.topics t WHERE t.topic_id = p_topic_id FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic id %s does not exist', p_topic_id);
    END IF;
    INSERT INTO txnq.subscriptions (topic_id, name, subscription_type, isolation)
    VALUES (p_topic_id, p_name, p_subscription_type, p_isolation)
    ON CONFLICT (topic_id, name) DO NOTHING
    RETURNING * INTO v_sub;
    IF FOUND THEN
        INSERT INTO txnq.cursors (topic_id, partition, subscription_id, mark_delete_offset)
        SELECT h.topic_id, h.partition, v_sub.subscription_id,
               CASE WHEN p_initial_position = 'latest' THEN h.next_offset - 1
                    ELSE txnq.earliest_offset_v1(h.topic_id, h.partition) - 1 END
          FROM txnq.partitions h WHERE h.topic_id = p_topic_id;
        RETURN v_sub.subscription_id;
    END IF;

    SELECT * INTO v_sub FROM txnq.subscriptions s
     WHERE s.topic_id = p_topic_id AND s.name = p_name FOR UPDATE;
    IF v_sub.subscription_type <> p_subscription_type OR v_sub.isolation <> p_isolation THEN
        IF EXISTS (SELECT 1 FROM txnq.consumers c
                    WHERE c.subscription_id = v_sub.subscription_id AND c.lease_expires_at > clock_timestamp()) THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ008',
                MESSAGE = format('subscription %L is %s/%s with connected consumers; cannot attach as %s/%s',
                                 p_name, v_sub.subscription_type, v_sub.isolation, p_subscription_type, p_isolation),
                HINT = 'use the same subscription type and isolation, or close the other consumers first';
        END IF;
        UPDATE txnq.subscriptions s SET subscription_type = p_subscription_type, isolation = p_isolation
         WHERE s.subscription_id = v_sub.subscription_id;
    END IF;
    RETURN v_sub.subscription_id;
END;
$$;
