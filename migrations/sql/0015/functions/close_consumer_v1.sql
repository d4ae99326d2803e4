-- txnq.close_consumer_v1: forget a consumer of a subscription of the topic
-- (Consumer.close) and its wait registrations. Replaces the client's direct
-- DELETEs. Revision 0015.
--
-- Parameters: topic_id, consumer_id (a consumer of another topic's
--   subscription is left alone).
-- Returns nothing. Locks: the rows it deletes.
-- Errors: TQ018 without consume on the topic.
CREATE OR REPLACE FUNCTION txnq.close_consumer_v1(p_topic_id integer, p_consumer_id bigint)
RETURNS void
LANGUAGE sql AS $$
    SELECT txnq.authorize_v1(p_topic_id, 'consume');
    DELETE FROM txnq.consumers c USING txnq.subscriptions s
     WHERE c.consumer_id = p_consumer_id AND s.subscription_id = c.subscription_id
       AND s.topic_id = p_topic_id;
    DELETE FROM txnq.consumer_waiters w WHERE w.topic_id = p_topic_id AND w.consumer_id = p_consumer_id;
$$;
