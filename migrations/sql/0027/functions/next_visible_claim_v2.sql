-- txnq.next_visible_claim_v2: seconds until the next outstanding message of a
-- shared subscription becomes deliverable (a nack delay, an ack timeout, a
-- delayed message). Revision 0027; replaces next_visible_claim_v1 (same
-- parameters and result), which read claim rows only: a claim range's
-- ack-timeout deadline counts too (txnq.claim_ranges).
--
-- Parameters: subscription_id.
-- Returns the seconds (NULL: none, or no such subscription).
-- Locks: none. Errors: TQ018 without consume on the subscription's topic.
CREATE OR REPLACE FUNCTION txnq.next_visible_claim_v2(p_subscription_id bigint)
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
    RETURN extract(epoch FROM least(
               (SELECT c.visible_at FROM txnq.claims c
                 WHERE c.subscription_id = p_subscription_id AND c.visible_at < 'infinity'
                   AND c.txn_tc IS NULL
                 ORDER BY c.visible_at
                 LIMIT 1),
               (SELECT r.visible_at FROM txnq.claim_ranges r
                 WHERE r.subscription_id = p_subscription_id AND r.visible_at < 'infinity'
                 ORDER BY r.visible_at
                 LIMIT 1)) - clock_timestamp())::float8;
END;
$$;
