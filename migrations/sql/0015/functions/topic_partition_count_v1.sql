-- txnq.topic_partition_count_v1: a topic's partition count. Revision 0015.
--
-- Parameters: topic_id. Returns the count (NULL: no such topic).
-- Locks: none. Errors: TQ001 / TQ018 as authorize_use_v1.
CREATE OR REPLACE FUNCTION txnq.topic_partition_count_v1(p_topic_id integer)
RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_use_v1(p_topic_id);
    SELECT t.partitions FROM txnq.topics t WHERE t.topic_id = p_topic_id;
$$;
