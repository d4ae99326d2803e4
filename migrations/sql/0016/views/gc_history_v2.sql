-- txnq.gc_history, second version (revision 0016): the first version
-- (gc_history.sql) with failures added as its last column, so CREATE OR
-- REPLACE keeps every column a reader already uses.
--
-- One row per run of a lifecycle job (txnq.gc_runs), for inspection with
-- plain SQL; `txnq gc history` shows the same runs.
--
-- job: ttl (items: cursors moved), retention (items: ledgers deleted, bytes:
-- their payload bytes), backlog_quota (items: subscriptions over quota), gc
-- (items: entry logs dropped, bytes: reclaimed on disk) or doctor; dry_run: a
-- GC run that changed nothing; details: the job's own summary, with
-- "failures" listing what it could not process; failures: how many topics
-- (gc: entry logs) failed in the run -- the job went on with the others
-- (txnq.job_failure_status shows what is failing now). Order by started_at
-- DESC for the newest first.
CREATE OR REPLACE VIEW txnq.gc_history AS
SELECT r.run_id,
       r.job,
       r.dry_run,
       r.started_at,
       r.finished_at,
       extract(epoch FROM (r.finished_at - r.started_at))::float8 AS duration_seconds,
       r.items,
       r.bytes,
       r.details,
       r.failures
  FROM txnq.gc_runs r;
