-- txnq.release_claims_v3: consumer liveness for shared and key_shared
-- subscriptions. Called by every consumer's heartbeat (and on close).
-- Revision 0027; replaces release_claims_v2 (same parameters, result, locks
-- and errors): the claim ranges (txnq.claim_ranges) of the consumers
-- released unfold into claim rows first (txnq.unfold_claim_ranges_v1), which
-- are then released as every claim is; the count includes their messages.
-- release_claims_v2 (revision 0015) replaced release_claims_v1, which
-- answered an unknown subscription, or a consumer of another subscription,
-- with 0 released.
--
-- Parameters: subscription_id, consumer_id: NULL releases the claims of every
--   consumer of the subscription whose session is gone (lease run out without
--   a heartbeat: the process died or hung); a consumer id releases that
--   consumer's own claims (it is closing; a consumer whose session is gone
--   holds nothing and releases nothing).
-- Returns how many claims were released: they are deliverable again at once,
--   to any consumer (their redelivery count grows when claimed again).
-- Also brings the subscription's cursors up to date (txnq.shared_advance_v2 on
--   each partition whose cursor row is free): an ack moves the mark-delete
--   offset only when it finds the row free, so without this the cursor could
--   lag after the last ack until the next claim. And deletes delayed-delivery
--   rows that every cursor of the topic has passed.
-- Locks: the released claim ranges (unfolded), then the released claim rows. Claims pending in a transaction stay until
--   it ends (its timeout aborts it if its client died).
-- Invariants: a live consumer (lease renewed by its client library, however
--   slow the application is) never loses a claim here: the consumer rows are
--   locked (FOR SHARE) first, so a heartbeat that is renewing a lease commits
--   before the leases are read.
-- Errors (nothing is changed): TQ006 unknown subscription; TQ005 a consumer
--   of another subscription; authorize_v1's.
CREATE OR REPLACE FUNCTION txnq.release_claims_v3(p_subscription_id bigint, p_consumer_id bigint)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
    v_topic_id integer;
    v_owner bigint;
    r record;
BEGIN
    SELECT s.topic_id INTO v_topic_id FROM txnq.subscriptions s WHERE s.subscription_id = p_subscription_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s does not exist', coalesce(p_subscription_id::text, 'NULL')),
            HINT = 'it was unsubscribed or its topic deleted; subscribe again';
    END IF;
    PERFORM txnq.authorize_v1(v_topic_id, 'consume');
    IF p_consumer_id IS NOT NULL THEN
        SELECT k.subscription_id INTO v_owner FROM txnq.consumers k WHERE k.consumer_id = p_consumer_id;
        IF FOUND AND v_owner <> p_subscription_id THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('consumer %s belongs to subscription id %s, not to subscription id %s',
                                 p_consumer_id, v_owner, p_subscription_id),
                HINT = 'pass the consumer id register_consumer returned for this subscription';
        END IF;
    END IF;
    IF p_consumer_id IS NOT NULL THEN
        FOR r IN
            SELECT g.partition AS p, array_agg(g.first_offset ORDER BY g.first_offset) AS fs
              FROM (SELECT x.partition, x.first_offset FROM txnq.claim_ranges x
                     WHERE x.subscription_id = p_subscription_id AND x.consumer_id = p_consumer_id
                     ORDER BY x.partition, x.first_offset
                       FOR UPDATE) AS g
             GROUP BY g.partition
        LOOP
            PERFORM txnq.unfold_claim_ranges_v1(v_topic_id, r.p, p_subscription_id, r.fs);
        END LOOP;
        UPDATE txnq.claims c
           SET consumer_id = NULL, visible_at = clock_timestamp(), reason = 'consumer_closed'
         WHERE c.subscription_id = p_subscription_id AND c.consumer_id = p_consumer_id AND c.txn_tc IS NULL;
    ELSE
        -- Wait for heartbeats in flight: one that renewed a lease before it ran
        -- out but had not committed must not lose its consumer's claims (the
        -- consumer hands out its queue while its renewed lease holds).
        PERFORM 1 FROM txnq.consumers k WHERE k.subscription_id = p_subscription_id
         ORDER BY k.consumer_id FOR SHARE;
        FOR r IN
            SELECT g.partition AS p, array_agg(g.first_offset ORDER BY g.first_offset) AS fs
              FROM (SELECT x.partition, x.first_offset FROM txnq.claim_ranges x
                     WHERE x.subscription_id = p_subscription_id
                       AND NOT EXISTS (SELECT 1 FROM txnq.consumers k
                                        WHERE k.consumer_id = x.consumer_id
                                          AND k.lease_expires_at > clock_timestamp())
                     ORDER BY x.partition, x.first_offset
                       FOR UPDATE) AS g
             GROUP BY g.partition
        LOOP
            PERFORM txnq.unfold_claim_ranges_v1(v_topic_id, r.p, p_subscription_id, r.fs);
        END LOOP;
        UPDATE txnq.claims c
           SET consumer_id = NULL, visible_at = clock_timestamp(), reason = 'consumer_gone'
         WHERE c.subscription_id = p_subscription_id AND c.consumer_id IS NOT NULL AND c.txn_tc IS NULL
           AND NOT EXISTS (SELECT 1 FROM txnq.consumers k
                            WHERE k.consumer_id = c.consumer_id AND k.lease_expires_at > clock_timestamp());
    END IF;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    FOR r IN
        SELECT c.partition FROM txnq.cursors c
         WHERE c.topic_id = v_topic_id AND c.subscription_id = p_subscription_id
           AND c.dispatch_offset IS NOT NULL
         ORDER BY c.partition
           FOR UPDATE SKIP LOCKED
    LOOP
        PERFORM txnq.shared_advance_v2(v_topic_id, r.partition, p_subscription_id);
    END LOOP;
    DELETE FROM txnq.delayed_entries d
     USING (SELECT c.partition, min(c.mark_delete_offset) AS passed FROM txnq.cursors c
             WHERE c.topic_id = v_topic_id GROUP BY c.partition) AS m
     WHERE d.topic_id = v_topic_id AND d.partition = m.partition AND d.entry_offset <= m.passed;
    RETURN v_count;
END;
$$;
