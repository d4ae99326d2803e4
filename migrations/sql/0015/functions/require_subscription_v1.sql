-- txnq.require_subscription_v1: the identity check of every consume-side
-- function that names (topic_id, partition, subscription_id): the partition
-- exists and the subscription is one of that topic. Revision 0015.
--
-- Parameters: topic_id, partition, subscription_id (as the caller passed
--   them, NULL included).
-- Returns the subscription's type and isolation, and the partition's high
--   watermark (next offset - 1) and readable offset: the last offset the
--   subscription may be given (read_committed: the max read offset;
--   read_uncommitted: the high watermark).
-- Locks: none (reads the head row and the subscription row by primary key,
--   in one statement; the caller locks what it changes).
-- Errors: TQ001 unknown topic or partition; TQ006 unknown subscription, or
--   one of another topic.
CREATE OR REPLACE FUNCTION txnq.require_subscription_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    OUT subscription_type text,
    OUT isolation text,
    OUT high_watermark bigint,
    OUT readable_offset bigint
)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_found record;
BEGIN
    SELECT s.topic_id AS sub_topic_id, s.subscription_type, s.isolation, h.next_offset - 1 AS high_watermark,
           CASE WHEN s.isolation = 'read_uncommitted' THEN h.next_offset - 1 ELSE h.max_read_offset END
               AS readable_offset,
           h.topic_id IS NOT NULL AS partition_found, s.subscription_id IS NOT NULL AS subscription_found
      INTO v_found
      FROM (SELECT 1) AS one
      LEFT JOIN txnq.partitions h ON h.topic_id = p_topic_id AND h.partition = p_partition
      LEFT JOIN txnq.subscriptions s ON s.subscription_id = p_subscription_id;
    IF NOT v_found.partition_found THEN
        PERFORM txnq.require_partition_v1(p_topic_id, p_partition);
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('partition %s of topic id %s does not exist', p_partition, p_topic_id),
            HINT = 'pass a partition of the topic';
    END IF;
    IF NOT v_found.subscription_found OR v_found.sub_topic_id <> p_topic_id THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ006',
            MESSAGE = format('subscription id %s %s', coalesce(p_subscription_id::text, 'NULL'),
                             CASE WHEN v_found.subscription_found
                                  THEN format('belongs to topic id %s, not to topic id %s',
                                              v_found.sub_topic_id, p_topic_id)
                                  ELSE 'does not exist' END),
            HINT = 'pass the id subscribe returned for this topic; if it was unsubscribed or its topic '
                   'deleted, subscribe again';
    END IF;
    subscription_type := v_found.subscription_type;
    isolation := v_found.isolation;
    high_watermark := v_found.high_watermark;
    readable_offset := v_found.readable_offset;
END;
$$;
