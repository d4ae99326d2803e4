-- txnq.cursor_positions_v1: per partition, a subscription's mark-delete offset
-- and cursor generation (the consumer's rewind detection). Replaces the
-- client's direct read of txnq.cursors. Revision 0015.
--
-- Parameters: topic_id, subscription_id.
-- Returns rows (partition, mark_delete_offset, generation) by partition.
-- Locks: none. Errors: TQ018 without consume on the topic.
CREATE OR REPLACE FUNCTION txnq.cursor_positions_v1(p_topic_id integer, p_subscription_id bigint)
RETURNS TABLE (partition integer, mark_delete_offset bigint, generation integer)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_v1(p_topic_id, 'consume');
    SELECT c.partition, c.mark_delete_offset, c.generation FROM txnq.cursors c
     WHERE c.topic_id = p_topic_id AND c.subscription_id = p_subscription_id
     ORDER BY c.partition;
$$;
