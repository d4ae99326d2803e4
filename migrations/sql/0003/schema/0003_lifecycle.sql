-- Revision 0003: the message lifecycle (TTL, retention, entry-log GC).

-- What each lifecycle run did: one row per run of a job (TTL, retention, GC),
-- kept for `txnq gc history` and the inspection views. Small: one row per run.
CREATE TABLE txnq.gc_runs (
    run_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job         text NOT NULL CHECK (job IN ('ttl', 'retention', 'gc')),
    dry_run     boolean NOT NULL DEFAULT false,
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    -- ttl: cursors moved and messages expired; retention: ledgers deleted and
    -- their bytes; gc: entry logs dropped and bytes reclaimed.
    items       bigint NOT NULL DEFAULT 0,
    bytes       bigint NOT NULL DEFAULT 0,
    details     jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX gc_runs_job_time ON txnq.gc_runs (job, started_at);
