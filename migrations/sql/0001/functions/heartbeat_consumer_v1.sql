-- txnq.heartbeat_consumer_v1: renew a consumer's lease and list the live
-- consumers of its subscription in failover order (priority, name, id).
--
-- Parameters: consumer_id, lease_seconds.
-- Returns the live consumers; the caller computes its failover assignment from
--   them (partition p goes to consumer p mod n, as Pulsar assigns partitions).
-- Locks: the caller's own consumer row (a HOT update of a non-indexed column).
-- Errors: TQ009 the session expired (its lease ran out and it was removed).
CREATE OR REPLACE FUNCTION txnq.heartbeat_consumer_v1(p_consumer_id bigint, p_lease_seconds double precision)
RETURNS TABLE (consumer_id bigint, name text, priority integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_subscription_id bigint;
BEGIN
    UPDATE txnq.consumers c
       SET lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_seconds)
     WHERE c.consumer_id = p_consumer_id AND c.lease_expires_at > clock_timestamp()
    RETURNING c.subscription_id INTO v_subscription_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ009',
            MESSAGE = format('consumer session %s expired: it did not renew its lease in time', p_consumer_id),
            HINT = 'the consumer re-registers; its unacknowledged messages are redelivered';
    END IF;
    RETURN QUERY
        SELECT c.consumer_id, c.name, c.priority FROM txnq.consumers c
         WHERE c.subscription_id = v_subscription_id AND c.lease_expires_at > clock_timestamp()
         ORDER BY c.priority, c.name, c.consumer_id;
END;
$$;
