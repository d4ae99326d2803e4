-- txnq.messages: one row per delivered-able message, for inspection with plain SQL.
--
-- Unnests batch entries (message i of an entry is element i of its arrays) and
-- leaves out control entries (markers). It shows what was written, not what a
-- subscription may read: read_committed visibility is the partition's
-- max_read_offset (see txnq.partitions).
CREATE OR REPLACE VIEW txnq.messages AS
SELECT t.name AS topic,
       e.partition,
       e.entry_offset,
       m.batch_index - 1 AS batch_index,
       e.publish_time,
       e.event_times[m.batch_index] AS event_time,
       e.keys[m.batch_index] AS key,
       e.properties[m.batch_index] AS properties,
       m.payload,
       e.producer_id,
       e.first_sequence + m.batch_index - 1 AS sequence,
       e.entry_log_id,
       e.ledger_id
  FROM txnq.entries e
  JOIN txnq.topics t ON t.topic_id = e.topic_id
 CROSS JOIN LATERAL unnest(e.payloads) WITH ORDINALITY AS m(payload, batch_index)
 WHERE e.marker IS NULL;
