-- txnq.cursor_generation_v1: the generation of a subscription's cursor on a
-- partition (the client's cumulative ack in a transaction reads it after
-- ack_v2, in the same transaction: the cursor row is locked then). Replaces
-- the client's direct read of txnq.cursors. Revision 0015.
--
-- Parameters: topic_id, partition, subscription_id.
-- Returns the generation, NULL when there is no such cursor.
-- Locks: none. Errors: TQ018 without consume on the topic (authorize_v1).
CREATE OR REPLACE FUNCTION txnq.cursor_generation_v1(
    p_topic_id integer, p_partition integer, p_subscription_id bigint
)
RETURNS integer
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM txnq.authorize_v1(p_topic_id, 'consume');
    RETURN (SELECT c.generation FROM txnq.cursors c
             WHERE c.topic_id = p_topic_id AND c.partition = p_partition
               AND c.subscription_id = p_subscription_id);
END;
$$;
