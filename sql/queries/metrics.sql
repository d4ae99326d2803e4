-- The Prometheus endpoint of the workers (txnq/metrics.py, docs/metrics.md).
--
-- A scrape runs metrics_snapshot and metrics_transactions in one READ ONLY,
-- REPEATABLE READ transaction on the endpoint's own connection, under a
-- statement_timeout and a lock_timeout (metrics_session): reads only, never a
-- row lock, never a wait behind DDL for long. Neither touches txnq.entries:
-- the numbers come from head rows, cursors, ledgers and the transaction log,
-- so a scrape costs the same whatever the backlog.

-- name: metrics_session
SELECT set_config('statement_timeout', %(statement_timeout_ms)s::text, false),
       set_config('lock_timeout', %(lock_timeout_ms)s::text, false),
       set_config('default_transaction_read_only', 'on', false)

-- name: metrics_snapshot
-- One row per sample: (metric, topic, subscription, label, value). metric is a
-- key of txnq.metrics.SNAPSHOT_METRICS; label is the one further label the
-- metric has (job, state), else NULL.
-- Offsets are gapless per partition, so next_offset is the number of entries
-- ever appended (data and markers), and mark_delete_offset + 1 the number of
-- entries a subscription has passed; entries individually acknowledged above
-- it (whole entries only) count too.
WITH heads AS (
    SELECT t.name AS topic, h.topic_id, h.partition, h.next_offset, h.max_read_offset,
           h.ledger_first_offset, h.ledger_bytes
      FROM txnq.partitions h JOIN txnq.topics t USING (topic_id)
), positions AS (
    SELECT h.topic, s.name AS subscription, c.topic_id, c.partition, c.subscription_id,
           c.mark_delete_offset,
           CASE WHEN s.isolation = 'read_uncommitted' THEN h.next_offset - 1
                ELSE h.max_read_offset END AS readable_offset,
           h.next_offset, h.ledger_first_offset, h.ledger_bytes
      FROM txnq.cursors c
      JOIN txnq.subscriptions s USING (subscription_id)
      JOIN heads h ON h.topic_id = c.topic_id AND h.partition = c.partition
), acked AS (
    -- Whole entries acknowledged above the mark-delete offset, and of those
    -- the ones a consumer can read (they leave the backlog).
    SELECT p.topic_id, p.partition, p.subscription_id, count(*) AS entries,
           count(*) FILTER (WHERE a.entry_offset <= p.readable_offset) AS readable_entries
      FROM positions p
      JOIN txnq.individual_acks a
        ON a.topic_id = p.topic_id AND a.partition = p.partition
       AND a.subscription_id = p.subscription_id AND a.acked_batch_indexes IS NULL
     GROUP BY 1, 2, 3
), backlog_bytes AS (
    -- Estimated: each ledger's payload bytes spread evenly over its entries,
    -- counted for the entries of the ledger between the cursor and the
    -- readable offset (exact when the backlog covers whole ledgers, or the
    -- entries are of one size). Closed ledgers from txnq.ledgers, the open one
    -- from the head row.
    SELECT p.topic_id, p.partition, p.subscription_id,
           sum(l.bytes::float8 * greatest(0, least(l.last_offset, p.readable_offset)
                                             - greatest(l.first_offset, p.mark_delete_offset + 1) + 1)
               / (l.last_offset - l.first_offset + 1)) AS bytes
      FROM positions p
      JOIN LATERAL (
          SELECT lg.first_offset, lg.last_offset, lg.size_bytes AS bytes
            FROM txnq.ledgers lg
           WHERE lg.topic_id = p.topic_id AND lg.partition = p.partition AND lg.state = 'CLOSED'
             AND lg.last_offset > p.mark_delete_offset AND lg.last_offset >= lg.first_offset
          UNION ALL
          SELECT p.ledger_first_offset, p.next_offset - 1, p.ledger_bytes
           WHERE p.next_offset > p.ledger_first_offset
      ) l ON true
     GROUP BY 1, 2, 3
)
SELECT 'entries_appended' AS metric, topic, NULL::text AS subscription, NULL::text AS label,
       sum(next_offset)::float8 AS value
  FROM heads GROUP BY topic
UNION ALL
SELECT 'bytes_appended', t.name, NULL, NULL,
       (coalesce((SELECT sum(lg.size_bytes) FROM txnq.ledgers lg
                   WHERE lg.topic_id = t.topic_id AND lg.state <> 'OPEN'), 0)
        + (SELECT coalesce(sum(h.ledger_bytes), 0) FROM txnq.partitions h
            WHERE h.topic_id = t.topic_id))::float8
  FROM txnq.topics t
UNION ALL
SELECT 'partitions', topic, NULL, NULL, count(*)::float8 FROM heads GROUP BY topic
UNION ALL
SELECT 'entries_acknowledged', p.topic, p.subscription, NULL,
       sum(p.mark_delete_offset + 1 + coalesce(a.entries, 0))::float8
  FROM positions p
  LEFT JOIN acked a USING (topic_id, partition, subscription_id)
 GROUP BY p.topic, p.subscription
UNION ALL
SELECT 'backlog_entries', p.topic, p.subscription, NULL,
       sum(greatest(0, p.readable_offset - p.mark_delete_offset)
           - coalesce(a.readable_entries, 0))::float8
  FROM positions p
  LEFT JOIN acked a USING (topic_id, partition, subscription_id)
 GROUP BY p.topic, p.subscription
UNION ALL
SELECT 'backlog_bytes', p.topic, p.subscription, NULL, coalesce(sum(b.bytes), 0)::float8
  FROM positions p
  LEFT JOIN backlog_bytes b USING (topic_id, partition, subscription_id)
 GROUP BY p.topic, p.subscription
UNION ALL
SELECT 'consumers', t.name, s.name, NULL,
       (SELECT count(*) FROM txnq.consumers c
         WHERE c.subscription_id = s.subscription_id AND c.lease_expires_at > now())::float8
  FROM txnq.subscriptions s JOIN txnq.topics t USING (topic_id)
UNION ALL
-- The two counts match the partial indexes of the transaction log, so they
-- read only the transactions still in flight.
SELECT 'transactions', NULL, NULL, 'OPEN',
       (SELECT count(*) FROM txnq.transactions WHERE state = 'OPEN')::float8
UNION ALL
SELECT 'transactions', NULL, NULL, x.state,
       (SELECT count(*) FROM txnq.transactions t
         WHERE t.state IN ('COMMITTING', 'ABORTING') AND t.state = x.state)::float8
  FROM (VALUES ('COMMITTING'), ('ABORTING')) AS x(state)
UNION ALL
SELECT 'oldest_open_transaction', NULL, NULL, NULL,
       coalesce(extract(epoch FROM now() - min(opened_at)), 0)::float8
  FROM txnq.transactions WHERE state = 'OPEN'
UNION ALL
-- Transaction ids are never reused: next_txn_seq - 1 were opened on a coordinator.
SELECT 'transactions_opened', NULL, NULL, NULL, coalesce(sum(next_txn_seq - 1), 0)::float8
  FROM txnq.coordinators
UNION ALL
SELECT 'gc_' || m.kind, NULL, NULL, j.job,
       coalesce((SELECT CASE m.kind WHEN 'bytes' THEN sum(r.bytes)
                                    WHEN 'items' THEN sum(r.items)
                                    ELSE count(*) END
                   FROM txnq.gc_runs r WHERE r.job = j.job AND NOT r.dry_run), 0)::float8
  FROM (VALUES ('ttl'), ('retention'), ('gc')) AS j(job)
 CROSS JOIN (VALUES ('bytes'), ('items'), ('runs')) AS m(kind)

-- name: metrics_transaction_start
-- Where the completion counters start: the next transaction number of every
-- coordinator, and the transactions still in flight (both partial indexes).
SELECT c.tc_id, c.next_txn_seq, NULL::bigint AS txn_seq FROM txnq.coordinators c
UNION ALL
SELECT t.tc_id, NULL, t.txn_seq FROM txnq.transactions t WHERE t.state = 'OPEN'
UNION ALL
SELECT t.tc_id, NULL, t.txn_seq FROM txnq.transactions t
 WHERE t.state IN ('COMMITTING', 'ABORTING')

-- name: metrics_transactions
-- The transactions to look at since the last scrape: those opened since
-- (txn_seq at or above the coordinator's next_seq, at most `limit` per
-- coordinator, by primary key), and those seen in flight last time (pending).
-- A coordinator that is new since then starts at 1. For a completed
-- transaction, completion_seconds is the time from its decision to its
-- completion in the transaction log (txn_log.at is clock_timestamp()).
WITH wanted AS (
    SELECT t.tc_id, t.txn_seq, t.state, t.reason
      FROM txnq.coordinators c
      LEFT JOIN unnest(%(tc_ids)s::int[], %(next_seqs)s::bigint[]) AS w(tc_id, next_seq)
        ON w.tc_id = c.tc_id
      JOIN LATERAL (
          SELECT t.tc_id, t.txn_seq, t.state, t.reason FROM txnq.transactions t
           WHERE t.tc_id = c.tc_id AND t.txn_seq >= coalesce(w.next_seq, 1)
           ORDER BY t.txn_seq
           LIMIT %(limit)s
      ) t ON true
    UNION
    SELECT t.tc_id, t.txn_seq, t.state, t.reason
      FROM unnest(%(pending_tc_ids)s::int[], %(pending_seqs)s::bigint[]) AS p(tc_id, txn_seq)
      JOIN txnq.transactions t ON t.tc_id = p.tc_id AND t.txn_seq = p.txn_seq
)
SELECT w.tc_id, w.txn_seq, w.state, w.reason,
       CASE WHEN w.state IN ('COMMITTED', 'ABORTED') THEN
           (SELECT extract(epoch FROM max(l.at) FILTER (WHERE l.state = w.state)
                                      - max(l.at) FILTER (WHERE l.state IN ('COMMITTING', 'ABORTING')))
              FROM txnq.txn_log l
             WHERE l.tc_id = w.tc_id AND l.txn_seq = w.txn_seq)::float8
       END AS completion_seconds
  FROM wanted w
 ORDER BY w.tc_id, w.txn_seq
