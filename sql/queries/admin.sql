-- Administration: topics and subscriptions. Not on the hot path.

-- name: create_topic
SELECT txnq.create_topic_v1(%(name)s, %(partitions)s, %(retention_seconds)s, %(retention_bytes)s,
                            %(ttl_seconds)s, %(max_message_bytes)s)

-- name: add_partitions
SELECT txnq.add_partitions_v1(%(topic_id)s, %(partitions)s)

-- name: delete_topic
SELECT txnq.delete_topic_v1(%(topic_id)s, %(force)s)

-- name: topic_by_name
SELECT topic_id, name, partitions, retention_seconds, retention_bytes, ttl_seconds,
       max_message_bytes, created_at, backlog_quota_bytes, backlog_quota_seconds,
       backlog_quota_policy
  FROM txnq.topics WHERE name = %(name)s

-- name: topic_partition_count
SELECT partitions FROM txnq.topics WHERE topic_id = %(topic_id)s

-- name: list_topics
SELECT t.topic_id, t.name, t.partitions, t.retention_seconds, t.retention_bytes, t.ttl_seconds,
       t.max_message_bytes, t.created_at, t.backlog_quota_bytes, t.backlog_quota_seconds,
       t.backlog_quota_policy,
       coalesce(sum(h.next_offset), 0)::bigint AS entries,
       (SELECT count(*) FROM txnq.subscriptions s WHERE s.topic_id = t.topic_id) AS subscriptions
  FROM txnq.topics t
  LEFT JOIN txnq.partitions h ON h.topic_id = t.topic_id
 GROUP BY t.topic_id
 ORDER BY t.name

-- name: topic_partitions
SELECT h.partition, h.next_offset - 1 AS high_watermark, h.max_read_offset,
       txnq.earliest_offset_v2(h.topic_id, h.partition) AS earliest_offset,
       h.ledger_id AS open_ledger_id, h.last_publish_time,
       (SELECT count(*) FROM txnq.ledgers l
         WHERE l.topic_id = h.topic_id AND l.partition = h.partition AND l.state <> 'DELETED') AS ledgers,
       (SELECT coalesce(sum(coalesce(l.size_bytes, h.ledger_bytes)), 0) FROM txnq.ledgers l
         WHERE l.topic_id = h.topic_id AND l.partition = h.partition AND l.state <> 'DELETED')::bigint
           AS payload_bytes
  FROM txnq.partitions h
 WHERE h.topic_id = %(topic_id)s
 ORDER BY h.partition

-- name: list_subscriptions
SELECT s.subscription_id, s.name, s.subscription_type, s.isolation, s.created_at,
       coalesce(sum(greatest(h.max_read_offset - c.mark_delete_offset, 0)), 0)::bigint AS backlog_entries,
       (SELECT count(*) FROM txnq.consumers k
         WHERE k.subscription_id = s.subscription_id AND k.lease_expires_at > now()) AS consumers
  FROM txnq.subscriptions s
  LEFT JOIN txnq.cursors c ON c.subscription_id = s.subscription_id AND c.topic_id = s.topic_id
  LEFT JOIN txnq.partitions h ON h.topic_id = c.topic_id AND h.partition = c.partition
 WHERE s.topic_id = %(topic_id)s
 GROUP BY s.subscription_id
 ORDER BY s.name

-- name: subscription_by_name
SELECT subscription_id, name, subscription_type, isolation, created_at
  FROM txnq.subscriptions WHERE topic_id = %(topic_id)s AND name = %(name)s

-- name: subscription_cursors
SELECT c.partition, c.mark_delete_offset, h.max_read_offset, h.next_offset - 1 AS high_watermark,
       greatest(h.max_read_offset - c.mark_delete_offset, 0) AS backlog_entries,
       (SELECT count(*) FROM txnq.individual_acks a
         WHERE a.topic_id = c.topic_id AND a.partition = c.partition
           AND a.subscription_id = c.subscription_id) AS individual_acks,
       c.generation, c.updated_at
  FROM txnq.cursors c
  JOIN txnq.partitions h ON h.topic_id = c.topic_id AND h.partition = c.partition
 WHERE c.topic_id = %(topic_id)s AND c.subscription_id = %(subscription_id)s
 ORDER BY c.partition

-- name: subscription_consumers
SELECT consumer_id, name, priority, connected_at, lease_expires_at
  FROM txnq.consumers
 WHERE subscription_id = %(subscription_id)s AND lease_expires_at > now()
 ORDER BY priority, name, consumer_id
