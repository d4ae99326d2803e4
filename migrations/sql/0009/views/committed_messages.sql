-- txnq.committed_messages: one row per committed, visible message of every
-- topic — what a read_committed consumer could ever be given, unpacked from
-- the producer batches (an entry holds message i in element i of its arrays).
--
-- Visible: at or below the partition's max read offset (invariant 2), not a
-- marker, not of an aborted transaction, not in a ledger that retention
-- deleted (its rows wait in an entry log for GC). Every row at or below a
-- max read offset is final: the max read offset only grows, the transactions
-- below it are decided, and the aborted index of a decided transaction never
-- changes. So a reader that fixes the upper bound per partition when it starts
-- (txnq.spark.read_committed) reads an immutable range, however many
-- statements it takes and whatever producers and transactions do meanwhile;
-- only retention can take rows out of it.
--
-- Filter on (topic_id, partition, entry_offset): the conditions reach the
-- primary key of txnq.entries, so one partition's offset range is an index
-- range scan (Spark's JDBC predicates are such filters).
--
-- Columns: topic, topic_id, partition, entry_offset (the message id's offset),
-- batch_index, batch_size, key (bytea), properties (jsonb object of text),
-- payload (bytea), publish_time, event_time, txn_id ('tc:seq', NULL outside
-- transactions).
CREATE OR REPLACE VIEW txnq.committed_messages AS
SELECT t.name AS topic,
       e.topic_id,
       e.partition,
       e.entry_offset,
       (m.ordinal - 1)::integer AS batch_index,
       e.message_count AS batch_size,
       m.key,
       m.properties,
       m.payload,
       e.publish_time,
       m.event_time,
       CASE WHEN e.txn_tc IS NOT NULL THEN e.txn_tc || ':' || e.txn_seq END AS txn_id
  FROM txnq.entries e
  JOIN txnq.partitions h ON h.topic_id = e.topic_id AND h.partition = e.partition
  JOIN txnq.topics t ON t.topic_id = e.topic_id
 -- One unnest of all four arrays side by side (a NULL array gives NULLs):
 -- subscripting e.keys[i] per message would detoast the array once per
 -- message, three times slower on batches of 100.
 CROSS JOIN LATERAL unnest(e.payloads, e.keys, e.properties, e.event_times)
       WITH ORDINALITY AS m(payload, key, properties, event_time, ordinal)
 WHERE e.entry_offset <= h.max_read_offset
   AND e.marker IS NULL
   AND (e.txn_tc IS NULL OR NOT EXISTS (
            SELECT 1 FROM txnq.aborted_txns x
             WHERE x.topic_id = e.topic_id AND x.partition = e.partition
               AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq))
   AND NOT EXISTS (
            SELECT 1 FROM txnq.ledgers l
             WHERE l.topic_id = e.topic_id AND l.partition = e.partition
               AND l.ledger_id = e.ledger_id AND l.state = 'DELETED');
