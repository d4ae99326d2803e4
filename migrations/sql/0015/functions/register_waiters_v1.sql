-- txnq.register_waiters_v1: a consumer waits for appends to these partitions
-- of the topic (the appends' wake-up hint). Replaces the client's direct
-- INSERT. Revision 0015.
--
-- Parameters: topic_id, consumer_id (of a subscription of that topic, else
--   nothing is registered), partitions.
-- Returns nothing. Locks: the rows it inserts.
-- Errors: TQ018 without consume on the topic.
CREATE OR REPLACE FUNCTION txnq.register_waiters_v1(
    p_topic_id integer, p_consumer_id bigint, p_partitions integer[]
)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    INSERT INTO txnq.consumer_waiters (topic_id, partition, consumer_id)
    SELECT p_topic_id, p, p_consumer_id FROM unnest(p_partitions) AS p
     WHERE p IS NOT NULL
       AND EXISTS (SELECT 1 FROM txnq.consumers c JOIN txnq.subscriptions s USING (subscription_id)
                    WHERE c.consumer_id = p_consumer_id AND s.topic_id = p_topic_id)
    ON CONFLICT DO NOTHING;
END;
$$;
