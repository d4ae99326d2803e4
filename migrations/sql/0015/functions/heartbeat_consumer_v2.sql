-- txnq.heartbeat_consumer_v2: renew a consumer's lease and list the live
-- consumers of its subscription in failover order (priority, name, id).
-- Revision 0015; replaces heartbeat_consumer_v1 (same parameters, result,
-- locks and behaviour for valid input), which failed with raw PostgreSQL
-- errors (23502, 22008) for a NULL, NaN, infinite or huge lease, took a
-- negative one (ending the session), and called a NULL consumer expired.
--
-- Parameters: consumer_id, lease_seconds (more than 0, at most 315,360,000:
--   ten years).
-- Returns the live consumers; the caller computes its failover assignment from
--   them (partition p goes to consumer p mod n, as Pulsar assigns partitions).
-- Locks: the caller's own consumer row (a HOT update of a non-indexed column).
-- Errors (nothing is changed): TQ009 the session expired (its lease ran out
--   and it was removed), TQ005 a NULL consumer or a bad lease; authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.heartbeat_consumer_v2(p_consumer_id bigint, p_lease_seconds double precision)
RETURNS TABLE (consumer_id bigint, name text, priority integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_subscription_id bigint;
BEGIN
    IF p_consumer_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'heartbeat_consumer_v2: consumer_id must not be NULL',
            HINT = 'pass the id register_consumer returned';
    END IF;
    PERFORM txnq.require_number_v1('heartbeat_consumer_v2: lease_seconds', p_lease_seconds, NULL, 315360000);
    IF p_lease_seconds <= 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('heartbeat_consumer_v2: lease_seconds must be positive, not %s', p_lease_seconds),
            HINT = 'pass how long the session lives without a heartbeat (e.g. 10)';
    END IF;
    UPDATE txnq.consumers c
       SET lease_expires_at = clock_timestamp() + make_interval(secs => p_lease_seconds)
     WHERE c.consumer_id = p_consumer_id AND c.lease_expires_at > clock_timestamp()
    RETURNING c.subscription_id INTO v_subscription_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ009',
            MESSAGE = format('consumer session %s expired: it did not renew its lease in time', p_consumer_id),
            HINT = 'the consumer re-registers; its unacknowledged messages are redelivered';
    END IF;
    PERFORM txnq.authorize_v1((SELECT s.topic_id FROM txnq.subscriptions s
                                WHERE s.subscription_id = v_subscription_id), 'consume');
    RETURN QUERY
        SELECT c.consumer_id, c.name, c.priority FROM txnq.consumers c
         WHERE c.subscription_id = v_subscription_id AND c.lease_expires_at > clock_timestamp()
         ORDER BY c.priority, c.name, c.consumer_id;
END;
$$;
