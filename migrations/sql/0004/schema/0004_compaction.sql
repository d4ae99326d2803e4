-- Revision 0004: entry-log compaction and the dirty-data sweep (txnq/lifecycle.py).

-- A compaction target: a new entry log, created detached, that receives the
-- live rows of one sealed log (compacted_from) in short, throttled
-- transactions; it is attached, and its source detached and dropped, in one
-- transaction at the end (BookKeeper's transactional compaction). While it
-- is COMPACTING no reader sees it.
ALTER TABLE txnq.entry_logs DROP CONSTRAINT entry_logs_state_check;
ALTER TABLE txnq.entry_logs ADD CONSTRAINT entry_logs_state_check
    CHECK (state IN ('ACTIVE', 'SEALED', 'COMPACTING', 'DROPPED'));
ALTER TABLE txnq.entry_logs ADD COLUMN compacted_from integer;
CREATE UNIQUE INDEX entry_logs_one_compaction_per_source
    ON txnq.entry_logs (compacted_from) WHERE state = 'COMPACTING';

-- `txnq gc doctor --remove` records what it removed.
ALTER TABLE txnq.gc_runs DROP CONSTRAINT gc_runs_job_check;
ALTER TABLE txnq.gc_runs ADD CONSTRAINT gc_runs_job_check
    CHECK (job IN ('ttl', 'retention', 'gc', 'doctor'));
