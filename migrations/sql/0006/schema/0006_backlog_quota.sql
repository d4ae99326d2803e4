-- Revision 0006: backlog quotas (Pulsar's backlogQuota), docs/backlog-quota.md.

-- The server-wide defaults, published from the TXNQ_BACKLOG_QUOTA_DEFAULT_*
-- settings by `txnq migrate` and the scheduler (as the ledger settings are):
-- the check reads them in PostgreSQL, so every process that checks (the
-- scheduler, `txnq gc run`, a held producer) applies the same defaults.
-- -1: no limit.
ALTER TABLE txnq.config
    ADD COLUMN backlog_quota_default_limit_bytes bigint NOT NULL DEFAULT -1
        CHECK (backlog_quota_default_limit_bytes = -1 OR backlog_quota_default_limit_bytes > 0),
    ADD COLUMN backlog_quota_default_limit_seconds double precision NOT NULL DEFAULT -1
        CHECK (backlog_quota_default_limit_seconds = -1 OR backlog_quota_default_limit_seconds > 0),
    ADD COLUMN backlog_quota_default_policy text NOT NULL DEFAULT 'producer_hold'
        CHECK (backlog_quota_default_policy IN ('producer_hold', 'producer_error',
                                                'consumer_backlog_eviction'));

-- Per topic: NULL uses the server default above; -1 is "no limit" for this
-- topic whatever the default says.
ALTER TABLE txnq.topics
    ADD COLUMN backlog_quota_bytes bigint
        CHECK (backlog_quota_bytes = -1 OR backlog_quota_bytes > 0),
    ADD COLUMN backlog_quota_seconds double precision
        CHECK (backlog_quota_seconds = -1 OR backlog_quota_seconds > 0),
    ADD COLUMN backlog_quota_policy text
        CHECK (backlog_quota_policy IN ('producer_hold', 'producer_error',
                                        'consumer_backlog_eviction'));

-- The topics over their backlog quota, as the last check found them: one row
-- per topic, only while it is over. The append function reads this row (a
-- primary-key probe of a tiny table) instead of computing a backlog per
-- message; txnq.check_backlog_quota_v1 writes and deletes it. `reason` is the
-- error message a blocked producer gets.
CREATE TABLE txnq.backlog_quota_exceeded (
    topic_id          integer PRIMARY KEY,
    policy            text NOT NULL,
    subscription_name text NOT NULL,
    limit_kind        text NOT NULL CHECK (limit_kind IN ('size', 'age')),
    backlog_bytes     bigint NOT NULL,
    backlog_seconds   double precision,
    limit_bytes       bigint NOT NULL,
    limit_seconds     double precision NOT NULL,
    reason            text NOT NULL,
    since             timestamptz NOT NULL DEFAULT now(),
    checked_at        timestamptz NOT NULL DEFAULT now()
);

-- The scheduler job records its runs (evictions, topics over quota) too.
ALTER TABLE txnq.gc_runs DROP CONSTRAINT gc_runs_job_check;
ALTER TABLE txnq.gc_runs ADD CONSTRAINT gc_runs_job_check
    CHECK (job IN ('ttl', 'retention', 'gc', 'doctor', 'backlog_quota'));
