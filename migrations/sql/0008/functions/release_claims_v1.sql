-- txnq.release_claims_v1: consumer liveness for shared and key_shared
-- subscriptions. Called by every consumer's heartbeat (and on close).
--
-- Parameters: subscription_id, consumer_id: NULL releases the claims of every
--   consumer of the subscription whose session is gone (lease run out without
--   a heartbeat: the process died or hung); a consumer id releases that
--   consumer's own claims (it is closing).
-- Returns how many claims were released: they are deliverable again at once,
--   to any consumer (their redelivery count grows when claimed again).
-- Also brings the subscription's cursors up to date (txnq.shared_advance_v1 on
--   each partition whose cursor row is free): an ack moves the mark-delete
--   offset only when it finds the row free, so without this the cursor could
--   lag after the last ack until the next claim. And deletes delayed-delivery
--   rows that every cursor of the topic has passed.
-- Locks: the released claim rows. Claims pending in a transaction stay until
--   it ends (its timeout aborts it if its client died).
-- Invariants: a live consumer (lease renewed by its client library, however
--   slow the application is) never loses a claim here.
CREATE OR REPLACE FUNCTION txnq.release_claims_v1(p_subscription_id bigint, p_consumer_id bigint)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
    v_topic_id integer;
    r record;
BEGIN
    IF p_consumer_id IS NOT NULL THEN
        UPDATE txnq.claims c
           SET consumer_id = NULL, visible_at = clock_timestamp(), reason = 'consumer_closed'
         WHERE c.subscription_id = p_subscription_id AND c.consumer_id = p_consumer_id AND c.txn_tc IS NULL;
    ELSE
        UPDATE txnq.claims c
           SET consumer_id = NULL, visible_at = clock_timestamp(), reason = 'consumer_gone'
         WHERE c.subscription_id = p_subscription_id AND c.consumer_id IS NOT NULL AND c.txn_tc IS NULL
           AND NOT EXISTS (SELECT 1 FROM txnq.consumers k
                            WHERE k.consumer_id = c.consumer_id AND k.lease_expires_at > clock_timestamp());
    END IF;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    SELECT s.topic_id INTO v_topic_id FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id;
    FOR r IN
        SELECT c.partition FROM txnq.cursors c
         WHERE c.topic_id = v_topic_id AND c.subscription_id = p_subscription_id
           AND c.dispatch_offset IS NOT NULL
         ORDER BY c.partition
           FOR UPDATE SKIP LOCKED
    LOOP
        PERFORM txnq.shared_advance_v1(v_topic_id, r.partition, p_subscription_id);
    END LOOP;
    DELETE FROM txnq.delayed_entries d
     USING (SELECT c.partition, min(c.mark_delete_offset) AS passed FROM txnq.cursors c
             WHERE c.topic_id = v_topic_id GROUP BY c.partition) AS m
     WHERE d.topic_id = v_topic_id AND d.partition = m.partition AND d.entry_offset <= m.passed;
    RETURN v_count;
END;
$$;
