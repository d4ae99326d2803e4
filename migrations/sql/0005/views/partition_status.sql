-- txnq.partition_status: one row per topic partition (its head row), for
-- inspection with plain SQL.
--
-- high_watermark is the last offset written (next_offset - 1; -1 when empty);
-- max_read_offset the last offset read_committed subscriptions may read; the
-- difference is held back by the oldest ongoing transaction of the partition's
-- transaction buffer (txnq.txn_buffer_ongoing), shown with its id ("tc:seq"),
-- state (OPEN, or COMMITTING/ABORTING until its marker is written here), first
-- offset and age. live_* count what the partition's ledgers that retention has
-- not deleted hold: ledgers and entries (markers included) from the ledger
-- rows, live_bytes the payload bytes (closed ledgers' size_bytes plus the open
-- ledger's bytes from the head row), live_messages the messages of those
-- entries, markers left out. live_messages reads the partition's stored
-- entries (a scan): an inspection column, not one to poll every second.
CREATE OR REPLACE VIEW txnq.partition_status AS
SELECT t.name AS topic,
       h.topic_id,
       h.partition,
       h.next_offset,
       h.next_offset - 1 AS high_watermark,
       h.max_read_offset,
       h.ongoing_txns,
       o.tc_id || ':' || o.txn_seq AS oldest_ongoing_txn,
       x.state AS oldest_ongoing_txn_state,
       o.first_offset AS oldest_ongoing_txn_first_offset,
       extract(epoch FROM (now() - x.opened_at))::float8 AS oldest_ongoing_txn_age_seconds,
       h.ledger_id AS open_ledger_id,
       h.ledger_first_offset AS open_ledger_first_offset,
       h.ledger_opened_at AS open_ledger_opened_at,
       l.live_ledgers,
       l.live_entries,
       (SELECT coalesce(sum(e.message_count), 0)::bigint
          FROM txnq.entries e
         WHERE e.topic_id = h.topic_id AND e.partition = h.partition
           AND e.entry_offset >= l.live_first_offset
           AND e.marker IS NULL
           AND NOT EXISTS (SELECT 1 FROM txnq.ledgers dl
                            WHERE dl.topic_id = e.topic_id AND dl.partition = e.partition
                              AND dl.ledger_id = e.ledger_id AND dl.state = 'DELETED')) AS live_messages,
       l.live_bytes,
       l.live_first_offset,
       h.last_publish_time
  FROM txnq.partitions h
  LEFT JOIN txnq.topics t ON t.topic_id = h.topic_id
  LEFT JOIN LATERAL (
        SELECT b.tc_id, b.txn_seq, b.first_offset
          FROM txnq.txn_buffer_ongoing b
         WHERE b.topic_id = h.topic_id AND b.partition = h.partition
         ORDER BY b.first_offset, b.tc_id, b.txn_seq
         LIMIT 1) o ON true
  LEFT JOIN txnq.transactions x ON x.tc_id = o.tc_id AND x.txn_seq = o.txn_seq
 CROSS JOIN LATERAL (
        SELECT count(*) AS live_ledgers,
               coalesce(sum(CASE WHEN ld.state = 'OPEN' THEN h.next_offset - ld.first_offset
                                 ELSE ld.last_offset - ld.first_offset + 1 END), 0)::bigint AS live_entries,
               coalesce(sum(CASE WHEN ld.state = 'OPEN' THEN h.ledger_bytes
                                 ELSE coalesce(ld.size_bytes, 0) END), 0)::bigint AS live_bytes,
               coalesce(min(ld.first_offset), h.next_offset) AS live_first_offset
          FROM txnq.ledgers ld
         WHERE ld.topic_id = h.topic_id AND ld.partition = h.partition AND ld.state <> 'DELETED') l;
