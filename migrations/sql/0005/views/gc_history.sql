-- txnq.gc_history: one row per run of a lifecycle job (txnq.gc_runs), for
-- inspection with plain SQL; `txnq gc history` shows the same runs.
--
-- job: ttl (items: cursors moved), retention (items: ledgers deleted, bytes:
-- their payload bytes) or gc (items: entry logs dropped, bytes: reclaimed on
-- disk); dry_run: a GC run that changed nothing; details: the job's own
-- summary. Order by started_at DESC for the newest first.
CREATE OR REPLACE VIEW txnq.gc_history AS
SELECT r.run_id,
       r.job,
       r.dry_run,
       r.started_at,
       r.finished_at,
       extract(epoch FROM (r.finished_at - r.started_at))::float8 AS duration_seconds,
       r.items,
       r.bytes,
       r.details
  FROM txnq.gc_runs r;
