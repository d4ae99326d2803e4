-- txnq.spark_first_offset_at_v1: per partition, the first offset published
-- at or after a time, at or below the max read offset (NULL: none yet).
-- Revision 0015.
--
-- Parameters: topic_id, at. Returns rows (partition, first_offset).
-- Locks: none. Errors: TQ001 / TQ018 without consume on the topic.
CREATE OR REPLACE FUNCTION txnq.spark_first_offset_at_v1(p_topic_id integer, p_at timestamptz)
RETURNS TABLE (partition integer, first_offset bigint)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_v1(p_topic_id, 'consume');
    SELECT h.partition,
           (SELECT min(e.entry_offset) FROM txnq.entries e
             WHERE e.topic_id = h.topic_id AND e.partition = h.partition
               AND e.entry_offset <= h.max_read_offset AND e.publish_time >= p_at)
      FROM txnq.partitions h WHERE h.topic_id = p_topic_id ORDER BY h.partition;
$$;
