-- txnq.subscription_status: one row per subscription with its backlog, summed
-- over the topic's partitions, for inspection with plain SQL.
--
-- The backlog is what the subscription can read now and has not acknowledged:
-- entries above its cursor's mark-delete offset and at or below the partition's
-- max read offset (read_committed) or high watermark (read_uncommitted),
-- markers and entries of aborted transactions left out, as fetch_v2 delivers.
-- Individual acks are respected exactly: an entry acknowledged as a whole
-- counts nothing; of a batch entry acknowledged in part, only its unacknowledged
-- messages count, and backlog_bytes adds their own payload sizes (read from the
-- entry only for such partly acknowledged batches). Acks pending in an open
-- transaction are not acknowledgements yet: those messages stay in the backlog
-- until the transaction commits (pending_acks counts the pending records).
-- Messages that a read_committed subscription cannot read yet (above the max
-- read offset, behind an ongoing transaction) are not in the backlog.
--
-- backlog_entries: entries with at least one unacknowledged message;
-- oldest_unacked_publish_time / _age_seconds: the publish time of the oldest
-- of them (NULL with no backlog). consumers: sessions whose lease is current.
-- Reads the backlog's entries (a scan of everything unacknowledged): an
-- inspection view.
CREATE OR REPLACE VIEW txnq.subscription_status AS
SELECT t.name AS topic,
       s.topic_id,
       s.name AS subscription,
       s.subscription_id,
       s.subscription_type,
       s.isolation,
       s.created_at,
       (SELECT count(*) FROM txnq.consumers co
         WHERE co.subscription_id = s.subscription_id AND co.lease_expires_at > now()) AS consumers,
       count(c.partition) AS partitions,
       coalesce(sum(b.entries), 0)::bigint AS backlog_entries,
       coalesce(sum(b.messages), 0)::bigint AS backlog_messages,
       coalesce(sum(b.bytes), 0)::bigint AS backlog_bytes,
       min(b.oldest_publish_time) AS oldest_unacked_publish_time,
       extract(epoch FROM (now() - min(b.oldest_publish_time)))::float8 AS oldest_unacked_age_seconds,
       (SELECT count(*) FROM txnq.pending_acks pa
         WHERE pa.topic_id = s.topic_id AND pa.subscription_id = s.subscription_id) AS pending_acks
  FROM txnq.subscriptions s
  JOIN txnq.topics t ON t.topic_id = s.topic_id
  LEFT JOIN txnq.cursors c ON c.topic_id = s.topic_id AND c.subscription_id = s.subscription_id
  LEFT JOIN txnq.partitions h ON h.topic_id = c.topic_id AND h.partition = c.partition
  LEFT JOIN LATERAL (
        SELECT count(*) AS entries,
               sum(CASE WHEN a.acked_batch_indexes IS NULL THEN e.message_count
                        ELSE e.message_count - cardinality(a.acked_batch_indexes) END) AS messages,
               sum(CASE WHEN a.acked_batch_indexes IS NULL THEN e.payload_bytes
                        ELSE (SELECT coalesce(sum(octet_length(m.payload)), 0)
                                FROM unnest(e.payloads) WITH ORDINALITY AS m(payload, batch_index)
                               WHERE NOT (m.batch_index - 1 = ANY (a.acked_batch_indexes))) END) AS bytes,
               min(e.publish_time) AS oldest_publish_time
          FROM txnq.entries e
          LEFT JOIN txnq.individual_acks a
            ON a.topic_id = e.topic_id AND a.partition = e.partition
           AND a.subscription_id = c.subscription_id AND a.entry_offset = e.entry_offset
         WHERE e.topic_id = c.topic_id AND e.partition = c.partition
           AND e.entry_offset > c.mark_delete_offset
           AND e.entry_offset <= CASE WHEN s.isolation = 'read_uncommitted' THEN h.next_offset - 1
                                      ELSE h.max_read_offset END
           AND e.marker IS NULL
           AND (a.entry_offset IS NULL OR a.acked_batch_indexes IS NOT NULL)
           AND (e.txn_tc IS NULL OR NOT EXISTS (
                    SELECT 1 FROM txnq.aborted_txns x
                     WHERE x.topic_id = e.topic_id AND x.partition = e.partition
                       AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq))) b ON true
 GROUP BY s.subscription_id, t.name;
