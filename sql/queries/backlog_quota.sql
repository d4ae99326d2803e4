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
WITH cleared AS (DELETE FROM txnq.backlog_quota_exceeded WHERE topic_id = %(topic_id)s)
UPDATE txnq.topics
   SET backlog_quota_bytes = CASE WHEN %(set_bytes)s THEN %(limit_bytes)s::bigint
                                  ELSE backlog_quota_bytes END,
       backlog_quota_seconds = CASE WHEN %(set_seconds)s THEN %(limit_seconds)s::double precision
                                    ELSE backlog_quota_seconds END,
       backlog_quota_policy = CASE WHEN %(set_policy)s THEN %(policy)s::text
                                   ELSE backlog_quota_policy END
 WHERE topic_id = %(topic_id)s

-- name: backlog_quota_info
SELECT coalesce(t.backlog_quota_bytes, c.backlog_quota_default_limit_bytes) AS limit_bytes,
       coalesce(t.backlog_quota_seconds, c.backlog_quota_default_limit_seconds) AS limit_seconds,
       coalesce(t.backlog_quota_policy, c.backlog_quota_default_policy) AS policy,
       array_remove(ARRAY[CASE WHEN t.backlog_quota_bytes IS NULL THEN 'size' END,
                          CASE WHEN t.backlog_quota_seconds IS NULL THEN 'age' END,
                          CASE WHEN t.backlog_quota_policy IS NULL THEN 'policy' END], NULL)
           AS from_defaults,
       q.since AS exceeded_since, q.reason AS exceeded_reason, q.checked_at
  FROM txnq.topics t CROSS JOIN txnq.config c
  LEFT JOIN txnq.backlog_quota_exceeded q ON q.topic_id = t.topic_id
 WHERE t.topic_id = %(topic_id)s
