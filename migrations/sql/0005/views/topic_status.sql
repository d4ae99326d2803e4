-- txnq.topic_status: one row per topic: its policies and what its partitions
-- hold, summed over txnq.partition_status (so live_messages scans the topic's
-- stored entries: an inspection view).
--
-- retention_seconds / retention_bytes: -1 keeps forever, 0 keeps nothing past
-- the slowest cursor (Pulsar's meaning); ttl_seconds NULL: no TTL.
-- high_watermark_entries: entries ever written (the sum of next_offset, markers
-- included); live_*: what ledgers not deleted by retention hold (see
-- txnq.partition_status); subscriptions: how many the topic has.
CREATE OR REPLACE VIEW txnq.topic_status AS
SELECT t.name AS topic,
       t.topic_id,
       t.partitions,
       t.retention_seconds,
       t.retention_bytes,
       t.ttl_seconds,
       t.max_message_bytes,
       t.created_at,
       (SELECT count(*) FROM txnq.subscriptions s WHERE s.topic_id = t.topic_id) AS subscriptions,
       coalesce(p.entries_written, 0)::bigint AS entries_written,
       coalesce(p.live_ledgers, 0)::bigint AS live_ledgers,
       coalesce(p.live_entries, 0)::bigint AS live_entries,
       coalesce(p.live_messages, 0)::bigint AS live_messages,
       coalesce(p.live_bytes, 0)::bigint AS live_bytes,
       coalesce(p.ongoing_txns, 0)::bigint AS ongoing_txns,
       p.last_publish_time
  FROM txnq.topics t
  LEFT JOIN LATERAL (
        SELECT sum(ps.next_offset) AS entries_written,
               sum(ps.live_ledgers) AS live_ledgers,
               sum(ps.live_entries) AS live_entries,
               sum(ps.live_messages) AS live_messages,
               sum(ps.live_bytes) AS live_bytes,
               sum(ps.ongoing_txns) AS ongoing_txns,
               max(ps.last_publish_time) AS last_publish_time
          FROM txnq.partition_status ps
         WHERE ps.topic_id = t.topic_id) p ON true;
