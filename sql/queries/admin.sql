-- Administration: topics and subscriptions. Not on the hot path.

-- name: create_topic
SELECT txnq.create_topic_v2(%(name)s, %(partitions)s, %(retention_seconds)s, %(retention_bytes)s,
                            %(ttl_seconds)s, %(max_message_bytes)s)

-- name: add_partitions
SELECT txnq.add_partitions_v2(%(topic_id)s, %(partitions)s)

-- name: delete_topic
SELECT txnq.delete_topic_v2(%(topic_id)s, %(force)s)

-- name: topic_by_name
SELECT topic_id, name, partitions, retention_seconds, retention_bytes, ttl_seconds,
       max_message_bytes, created_at, backlog_quota_bytes, backlog_quota_seconds,
       backlog_quota_policy
  FROM txnq.topic_by_name_v1(%(name)s)

-- name: topic_partition_count
SELECT txnq.topic_partition_count_v1(%(topic_id)s) AS partitions

-- name: list_topics
SELECT topic_id, name, partitions, retention_seconds, retention_bytes, ttl_seconds,
       max_message_bytes, created_at, backlog_quota_bytes, backlog_quota_seconds,
       backlog_quota_policy, entries, subscriptions
  FROM txnq.list_topics_v1()

-- name: topic_partitions
SELECT partition, high_watermark, max_read_offset, earliest_offset, open_ledger_id,
       last_publish_time, ledgers, payload_bytes
  FROM txnq.topic_partitions_v1(%(topic_id)s)

-- name: list_subscriptions
SELECT subscription_id, name, subscription_type, isolation, created_at, backlog_entries,
       consumers
  FROM txnq.list_subscriptions_v1(%(topic_id)s)

-- name: subscription_by_name
SELECT subscription_id, name, subscription_type, isolation, created_at
  FROM txnq.subscription_by_name_v1(%(topic_id)s, %(name)s)

-- name: subscription_cursors
SELECT partition, mark_delete_offset, max_read_offset, high_watermark, backlog_entries,
       individual_acks, generation, updated_at
  FROM txnq.subscription_cursors_v1(%(topic_id)s, %(subscription_id)s)

-- name: subscription_consumers
SELECT consumer_id, name, priority, connected_at, lease_expires_at
  FROM txnq.subscription_consumers_v1(%(subscription_id)s)

-- name: grant_topic_permission
SELECT txnq.grant_topic_permission_v1(%(role)s, %(resource)s, %(is_prefix)s, %(actions)s::text[]) AS added

-- name: revoke_topic_permission
SELECT txnq.revoke_topic_permission_v1(%(role)s, %(resource)s, %(is_prefix)s, %(actions)s::text[])
       AS removed

-- name: topic_permissions
SELECT role, resource, kind, action, granted_by, granted_at, role_exists
  FROM txnq.topic_permissions_v1(%(role)s, %(topic)s)
