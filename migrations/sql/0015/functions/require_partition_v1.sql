-- txnq.require_partition_v1: the argument check of every function that names
-- a (topic, partition). Revision 0015.
--
-- Parameters: topic_id, partition (as the caller passed them, NULL included).
-- Returns the topic's partition count.
-- Locks: none (reads the topic row; the caller locks what it changes).
-- Errors: TQ001 when the topic id is NULL or unknown, or the partition is NULL
--   or outside 0 .. partitions - 1.
CREATE OR REPLACE FUNCTION txnq.require_partition_v1(p_topic_id integer, p_partition integer)
RETURNS integer
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_partitions integer;
BEGIN
    SELECT t.partitions INTO v_partitions FROM txnq.topics t WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name (txnq.topic_status) or create it first';
    END IF;
    IF p_partition IS NULL OR p_partition < 0 OR p_partition >= v_partitions THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s has partitions 0 to %s, not %s', p_topic_id, v_partitions - 1,
                             coalesce(p_partition::text, 'NULL')),
            HINT = 'pass a partition of the topic (txnq.partition_for_key_v1 routes a key)';
    END IF;
    RETURN v_partitions;
END;
$$;
