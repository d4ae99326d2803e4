-- Revision 0020: the history purge records its runs in txnq.gc_runs too.
ALTER TABLE txnq.gc_runs DROP CONSTRAINT gc_runs_job_check;
ALTER TABLE txnq.gc_runs ADD CONSTRAINT gc_runs_job_check
    CHECK (job IN ('ttl', 'retention', 'gc', 'doctor', 'backlog_quota', 'purge'));
