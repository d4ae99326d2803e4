-- Revision 0024: what the web console (docs/console.md) keeps.
--
-- The charts' history: the scheduler's console_sample job samples, every
-- CONSOLE_SAMPLE_INTERVAL_SECONDS, per topic the counters the database keeps
-- anyway (offsets written, cursor positions, live ledgers) and, once, the
-- entry logs; txnq.console_sample_v1 deletes samples older than
-- CONSOLE_HISTORY_SECONDS in the same call, so the tables stay bounded
-- (topics x history / interval rows). Rates are differences of counters
-- between two samples, computed by whoever reads them.
CREATE TABLE txnq.topic_samples (
    topic_id        integer NOT NULL,
    sampled_at      timestamptz NOT NULL,
    entries_written bigint NOT NULL,   -- sum of the partitions' next_offset (markers included)
    entries_acked   bigint NOT NULL,   -- sum over every cursor of mark_delete_offset + 1
    backlog_entries bigint NOT NULL,   -- sum over every cursor of max_read_offset - mark_delete_offset
    live_ledgers    integer NOT NULL,
    live_bytes      bigint NOT NULL,
    PRIMARY KEY (topic_id, sampled_at)
);

CREATE TABLE txnq.storage_samples (
    sampled_at      timestamptz PRIMARY KEY,
    entry_logs      integer NOT NULL,  -- entry logs not dropped
    entry_log_bytes bigint NOT NULL,   -- their size on disk
    ledgers         integer NOT NULL   -- ledgers not deleted
);

-- The console's audit trail: one row per action an operator confirmed in
-- the page, whether it succeeded or not; written only through
-- txnq.console_record_action_v1, deleted after CONSOLE_HISTORY_SECONDS by
-- the same sampling job.
CREATE TABLE txnq.console_actions (
    action_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    role        text NOT NULL,
    action      text NOT NULL,
    target      text NOT NULL,
    details     jsonb NOT NULL DEFAULT '{}',
    error       text
);
CREATE INDEX console_actions_by_time ON txnq.console_actions (at);
