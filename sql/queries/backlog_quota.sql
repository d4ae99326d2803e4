-- Backlog quotas (txnq/backlog_quota.py, docs/backlog-quota.md).

-- name: backlog_quota_topics
-- Topics with a size or age limit in effect (their own or the server default),
-- and topics still recorded as over quota (so a removed limit clears them).
SELECT t.topic_id, t.name
  FROM txnq.topics t CROSS JOIN txnq.config c
 WHERE coalesce(t.backlog_quota_bytes, c.backlog_quota_default_limit_bytes) > 0
    OR coalesce(t.backlog_quota_seconds, c.backlog_quota_default_limit_seconds) > 0
    OR EXISTS (SELECT 1 FROM txnq.backlog_quota_exceeded q WHERE q.topic_id = t.topic_id)
 ORDER BY t.topic_id

-- name: check_backlog_quota
SELECT subscription_id, subscription, over_size, over_age, backlog_bytes, backlog_seconds,
       limit_bytes, limit_seconds, policy, evicted_entries
  FROM txnq.check_backlog_quota_v2(%(topic_id)s)

-- name: set_backlog_quota
-- set_*: whether to change that value; a NULL value means the server default.
-- A change clears the topic's over-quota state: the next check decides anew
-- (so raising a quota releases held producers at once).
SELECT txnq.set_backlog_quota_v1(%(topic_id)s, %(set_bytes)s, %(limit_bytes)s::bigint, %(set_seconds)s,
                                 %(limit_seconds)s::double precision, %(set_policy)s, %(policy)s::text)

-- name: backlog_quota_info
SELECT limit_bytes, limit_seconds, policy, from_defaults, exceeded_since, exceeded_reason,
       checked_at
  FROM txnq.backlog_quota_info_v1(%(topic_id)s)
