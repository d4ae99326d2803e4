-- txnq.entry_log_status: one row per entry log (a PostgreSQL partition of
-- txnq.entries), with what it holds and its live share, for inspection.
--
-- entries/bytes: its entries and their payload bytes; live_entries/live_bytes:
-- those whose ledger retention has not deleted (txnq.entry_log_usage_v1, the
-- numbers GC acts on); live_share = live_bytes / bytes (NULL for an empty or
-- dropped log). total_bytes is the table's size on disk, indexes and TOAST
-- included. A DROPPED log shows NULL counts and 0 bytes on disk. A log made
-- by compaction names its source in compacted_from; while COMPACTING it is
-- not yet a partition of txnq.entries (no reader sees it).
--
-- Reads every entry log that is not dropped, whole: this is an inspection
-- view, not one to poll (and while it runs, a GC's DROP TABLE of a log waits).
-- Ask for one log with WHERE entry_log_id = ... to read only that one.
CREATE OR REPLACE VIEW txnq.entry_log_status AS
SELECT l.entry_log_id,
       l.table_name,
       l.state,
       l.created_at,
       l.sealed_at,
       l.dropped_at,
       extract(epoch FROM (now() - l.created_at))::float8 AS age_seconds,
       CASE WHEN l.state = 'DROPPED' THEN 0
            ELSE coalesce(pg_total_relation_size(to_regclass(format('txnq.%I', l.table_name))), 0)
       END AS total_bytes,
       u.entries,
       u.bytes,
       u.live_entries,
       u.live_bytes,
       CASE WHEN u.bytes > 0 THEN u.live_bytes::float8 / u.bytes END AS live_share,
       l.compacted_from
  FROM txnq.entry_logs l
 CROSS JOIN LATERAL txnq.entry_log_usage_inspect_v1(l.entry_log_id) u;
