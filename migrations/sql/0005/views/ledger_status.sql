-- txnq.ledger_status: one row per ledger (the unit of retention), for
-- inspection with plain SQL.
--
-- last_offset, entries and size_bytes of the OPEN ledger come from its
-- partition's head row (the ledger row records them when it closes). owner_*
-- is the owner recorded in the ledger's metadata when it was opened
-- (BookKeeper's custom metadata); orphan is true for a ledger not DELETED
-- whose owner partition no longer exists (what the orphan-ledger sweep finds).
-- age_seconds counts from its creation.
CREATE OR REPLACE VIEW txnq.ledger_status AS
SELECT t.name AS topic,
       l.topic_id,
       l.partition,
       l.ledger_id,
       l.state,
       l.first_offset,
       CASE WHEN l.state = 'OPEN' AND h.next_offset > l.first_offset THEN h.next_offset - 1
            ELSE l.last_offset END AS last_offset,
       CASE WHEN l.state = 'OPEN' THEN greatest(coalesce(h.next_offset, l.first_offset) - l.first_offset, 0)
            WHEN l.last_offset IS NOT NULL THEN l.last_offset - l.first_offset + 1 END AS entries,
       CASE WHEN l.state = 'OPEN' AND h.ledger_id = l.ledger_id THEN h.ledger_bytes
            ELSE l.size_bytes END AS size_bytes,
       l.created_at,
       l.closed_at,
       l.deleted_at,
       extract(epoch FROM (now() - l.created_at))::float8 AS age_seconds,
       l.metadata->>'topic' AS owner_topic,
       (l.metadata->>'topic_id')::integer AS owner_topic_id,
       (l.metadata->>'partition')::integer AS owner_partition,
       l.metadata,
       l.state <> 'DELETED' AND h.topic_id IS NULL AS orphan
  FROM txnq.ledgers l
  LEFT JOIN txnq.topics t ON t.topic_id = l.topic_id
  LEFT JOIN txnq.partitions h ON h.topic_id = l.topic_id AND h.partition = l.partition;
