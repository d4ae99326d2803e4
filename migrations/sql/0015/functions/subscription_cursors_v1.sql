-- txnq.subscription_cursors_v1: a subscription's cursor on each partition:
-- mark-delete offset, backlog, individual acks, generation
-- (`txnq subscriptions describe`). Revision 0015.
--
-- Parameters: topic_id, subscription_id. Returns rows by partition.
-- Locks: none. Errors: TQ001 / TQ018 as authorize_use_v1.
CREATE OR REPLACE FUNCTION txnq.subscription_cursors_v1(p_topic_id integer, p_subscription_id bigint)
RETURNS TABLE (partition integer, mark_delete_offset bigint, max_read_offset bigint, high_watermark bigint,
               backlog_entries bigint, individual_acks bigint, generation integer, updated_at timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_use_v1(p_topic_id);
    SELECT c.partition, c.mark_delete_offset, h.max_read_offset, h.next_offset - 1,
           greatest(h.max_read_offset - c.mark_delete_offset, 0),
           (SELECT count(*) FROM txnq.individual_acks a
             WHERE a.topic_id = c.topic_id AND a.partition = c.partition
               AND a.subscription_id = c.subscription_id),
           c.generation, c.updated_at
      FROM txnq.cursors c
      JOIN txnq.partitions h ON h.topic_id = c.topic_id AND h.partition = c.partition
     WHERE c.topic_id = p_topic_id AND c.subscription_id = p_subscription_id
     ORDER BY c.partition;
$$;
