-- txnq.topic_partitions_v1: per partition of a topic: high watermark, max
-- read offset, earliest offset, open ledger, ledgers and their bytes
-- (`txnq topics describe`). Revision 0015.
--
-- Parameters: topic_id. Returns rows by partition.
-- Locks: none. Errors: TQ001 / TQ018 as authorize_use_v1.
CREATE OR REPLACE FUNCTION txnq.topic_partitions_v1(p_topic_id integer)
RETURNS TABLE (partition integer, high_watermark bigint, max_read_offset bigint, earliest_offset bigint,
               open_ledger_id bigint, last_publish_time timestamptz, ledgers bigint, payload_bytes bigint)
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_use_v1(p_topic_id);
    SELECT h.partition, h.next_offset - 1, h.max_read_offset,
           txnq.earliest_offset_v1(h.topic_id, h.partition),
           h.ledger_id, h.last_publish_time,
           (SELECT count(*) FROM txnq.ledgers l
             WHERE l.topic_id = h.topic_id AND l.partition = h.partition AND l.state <> 'DELETED'),
           (SELECT coalesce(sum(coalesce(l.size_bytes, h.ledger_bytes)), 0) FROM txnq.ledgers l
             WHERE l.topic_id = h.topic_id AND l.partition = h.partition AND l.state <> 'DELETED')::bigint
      FROM txnq.partitions h
     WHERE h.topic_id = p_topic_id
     ORDER BY h.partition;
$$;
