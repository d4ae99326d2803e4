-- Revision 0016: failures of the scheduler's jobs and of the coordinators'
-- marker phase, per topic, partition, entry log or transaction. A job goes
-- on with the other topics when one fails (txnq/lifecycle.py,
-- workers/coordinator.py); what failed is counted here and in the metrics,
-- shown by txnq.job_failure_status and `txnq gc history`.

-- How many topics (entry logs) a run of a lifecycle job could not process.
-- A run that failed somewhere is recorded even when it did nothing else;
-- details.failures lists (up to 20 of) them.
ALTER TABLE txnq.gc_runs ADD COLUMN failures integer NOT NULL DEFAULT 0;

-- What is failing now: one row per job and thing it failed on, replaced at
-- each run of the job (a topic that no longer fails loses its row). Small:
-- at most one row per topic and job, plus undone transactions.
CREATE TABLE txnq.job_failures (
    job             text NOT NULL,               -- ttl, retention, backlog_quota, gc, marker_phase
    topic_id        integer NOT NULL DEFAULT 0,  -- 0: not one topic's (an entry log)
    partition       integer NOT NULL DEFAULT -1, -- -1: the whole topic
    subject         text NOT NULL DEFAULT '',    -- 'entry log 7', 'transaction 3:17'
    topic           text,                        -- the topic's name when it failed
    error           text NOT NULL,
    sqlstate        text,
    failures        bigint NOT NULL DEFAULT 1,   -- runs (or scans) that failed on it, in a row
    first_failed_at timestamptz NOT NULL DEFAULT now(),
    last_failed_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (job, topic_id, partition, subject)
);
