-- txnq.spark_partition_bounds_v1: per partition of a topic, the max read
-- offset now (the upper bound a Spark read fixes when it starts) and the
-- earliest offset retention has kept. Revision 0015.
--
-- Parameters: topic_id. Returns rows (partition, max_read_offset, earliest_offset).
-- Locks: none. Errors: TQ001 / TQ018 without consume on the topic.
CREATE OR REPLACE FUNCTION txnq.spark_partition_bounds_v1(p_topic_id integer)
RETURNS TABLE (partition integer, max_read_offset bigint, earliest_offset bigint)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_v1(p_topic_id, 'consume');
    SELECT h.partition, h.max_read_offset, txnq.earliest_offset_v1(h.topic_id, h.partition)
      FROM txnq.partitions h WHERE h.topic_id = p_topic_id ORDER BY h.partition;
$$;
