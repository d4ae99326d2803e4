-- txnq.next_visible_claim_v1: seconds until the next outstanding message of a
-- shared subscription becomes deliverable (a nack delay, an ack timeout, a
-- delayed message). Replaces the client's direct read of txnq.claims.
-- Revision 0015.
--
-- Parameters: subscription_id.
-- Returns the seconds (NULL: none, or no such subscription).
-- Locks: none. Errors: TQ018 without consume on the subscription's topic.
CREATE OR REPLACE FUNCTION txnq.next_visible_claim_v1(p_subscription_id bigint)
RETURNS double precision
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_topic_id integer;
BEGIN
    SELECT s.topic_id INTO v_topic_id FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    PERFORM txnq.authorize_v1(v_topic_id, 'consume');
    RETURN (SELECT extract(epoch FROM c.visible_at - clock_timestamp())::float8
              FROM txnq.claims c
             WHERE c.subscription_id = p_subscription_id AND c.visible_at < 'infinity'
               AND c.txn_tc IS NULL
             ORDER BY c.visible_at
             LIMIT 1);
END;
$$;
