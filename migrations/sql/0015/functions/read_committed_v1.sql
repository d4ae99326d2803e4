-- txnq.read_committed_v1: the committed messages of one partition in
-- [start_offset, end_offset) (txnq.committed_messages), for a role allowed
-- to consume the topic: Spark's range reads (spark_read_range) and any SQL
-- reader. Revision 0015.
--
-- Parameters: topic_id, partition, start_offset, end_offset.
-- Returns rows (topic, partition, entry_offset, batch_index, key, properties,
--   payload, publish_time, event_time, txn_id) in offset order.
-- Locks: none. Errors: TQ001 / TQ018 without consume on the topic.
CREATE OR REPLACE FUNCTION txnq.read_committed_v1(
    p_topic_id integer, p_partition integer, p_start_offset bigint, p_end_offset bigint
)
RETURNS TABLE (topic text, partition integer, entry_offset bigint, batch_index integer, key bytea,
               properties jsonb, payload bytea, publish_time timestamptz, event_time timestamptz,
               txn_id text)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_v1(p_topic_id, 'consume');
    SELECT m.topic, m.partition, m.entry_offset, m.batch_index, m.key, m.properties, m.payload,
           m.publish_time, m.event_time, m.txn_id
      FROM txnq.committed_messages m
     WHERE m.topic_id = p_topic_id AND m.partition = p_partition
       AND m.entry_offset >= p_start_offset AND m.entry_offset < p_end_offset
     ORDER BY m.entry_offset, m.batch_index;
$$;
