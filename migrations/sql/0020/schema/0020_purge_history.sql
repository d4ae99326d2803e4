-- Revision 0020: the history purge records its runs in txnq.gc_runs too.
ALTER TABLE txnq.gc_runs DROP CONSTRAINT gc_runs_job_check;
ALTER TABLE txnq.gc_runs ADD CONSTRAINT gc_runs_job_check
    CHECK (job IN ('ttl', 'retention', 'gc', 'doctor', 'backlog_quota', 'purge'));

-- The epoch a new transactional id starts at (init_transactional_id_v3): the
-- history purge raises it above the epochs of the ids it forgets.
ALTER TABLE txnq.config ADD COLUMN transactional_epoch_floor integer NOT NULL DEFAULT 0;
