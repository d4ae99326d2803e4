-- txnq schema, revision 0009 (Spark). Applied by migrations/versions/0009_spark.py.
--
-- Neither table is on the data path: each is written once per Spark job or
-- engine checkpoint, never per message.

-- An incremental ingestion (txnq.spark.ingest): per partition the last offset
-- it delivered to its sink (committed_offsets[partition + 1]; -1: nothing
-- yet), and the run it planned but has not committed yet. A run first
-- records its plan (planned_run, planned_offsets: the max read offsets when it
-- started), then writes the sink, then commits the plan; a rerun after a crash
-- finds the plan and writes exactly the same range again under the same run
-- id, so an overwrite or idempotent sink ends with every message once.
CREATE TABLE txnq.spark_ingestions (
    name              text PRIMARY KEY CHECK (name ~ '^[A-Za-z0-9._-]{1,200}$'),
    topic_id          integer NOT NULL,
    committed_run     bigint NOT NULL DEFAULT 0,
    committed_offsets bigint[] NOT NULL DEFAULT '{}',
    planned_run       bigint,
    planned_offsets   bigint[],
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    CHECK ((planned_run IS NULL) = (planned_offsets IS NULL))
);

-- The transactions of a two-phase-commit sink (txnq.spark.TwoPhaseCommitSink,
-- Flink's TwoPhaseCommitSinkFunction): OPEN from begin_transaction(),
-- PREPARED with the engine's checkpoint id at pre_commit(); the row goes when
-- the transaction is committed or aborted. After an engine restart, recover()
-- commits the PREPARED ones whose checkpoint the engine reports as completed
-- and aborts the rest.
CREATE TABLE txnq.sink_transactions (
    transactional_id text NOT NULL,
    tc_id            integer NOT NULL,
    txn_seq          bigint NOT NULL,
    state            text NOT NULL DEFAULT 'OPEN' CHECK (state IN ('OPEN', 'PREPARED')),
    checkpoint_id    bigint,
    begun_at         timestamptz NOT NULL DEFAULT now(),
    prepared_at      timestamptz,
    PRIMARY KEY (transactional_id, tc_id, txn_seq),
    CHECK ((state = 'PREPARED') = (checkpoint_id IS NOT NULL))
);
