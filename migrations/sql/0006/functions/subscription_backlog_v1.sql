-- txnq.subscription_backlog_v1: the backlog of each subscription of a topic,
-- summed over the topic's partitions (what a backlog quota limits).
--
-- Parameters: topic_id.
-- Returns one row per subscription: subscription_id, name, backlog_entries
--   (offsets between the mark-delete offset and the max read offset, as
--   delete_topic_v1 counts them), backlog_bytes (the payload bytes of those
--   entries, as stored), oldest_publish_time (the publish time of the oldest
--   entry a consumer could still be given: markers and entries of aborted
--   transactions do not count; NULL when there is none).
-- Only what read_committed consumers can read counts (up to the max read
--   offset); individual acks above the mark-delete offset do not shrink it
--   (Pulsar's backlog is also counted from the mark-delete position).
-- Cost: reads the entries of the backlog (index range scans), so it runs in
--   the periodic check, never per message.
CREATE OR REPLACE FUNCTION txnq.subscription_backlog_v1(p_topic_id integer)
RETURNS TABLE (subscription_id bigint, name text, backlog_entries bigint, backlog_bytes bigint,
               oldest_publish_time timestamptz)
LANGUAGE sql STABLE AS $$
    SELECT s.subscription_id, s.name,
           coalesce(sum(greatest(h.max_read_offset - c.mark_delete_offset, 0)), 0)::bigint,
           coalesce(sum(b.bytes), 0)::bigint,
           min(b.oldest)
      FROM txnq.subscriptions s
      JOIN txnq.cursors c ON c.topic_id = s.topic_id AND c.subscription_id = s.subscription_id
      JOIN txnq.partitions h ON h.topic_id = c.topic_id AND h.partition = c.partition
      CROSS JOIN LATERAL (
          SELECT sum(e.payload_bytes) AS bytes,
                 min(e.publish_time) FILTER (
                     WHERE e.marker IS NULL
                       AND (e.txn_tc IS NULL OR NOT EXISTS (
                               SELECT 1 FROM txnq.aborted_txns x
                                WHERE x.topic_id = e.topic_id AND x.partition = e.partition
                                  AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq))) AS oldest
            FROM txnq.entries e
           WHERE e.topic_id = c.topic_id AND e.partition = c.partition
             AND e.entry_offset > c.mark_delete_offset AND e.entry_offset <= h.max_read_offset
      ) b
     WHERE s.topic_id = p_topic_id
     GROUP BY s.subscription_id, s.name
$$;
