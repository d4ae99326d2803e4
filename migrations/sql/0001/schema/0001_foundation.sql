-- txnq schema, revision 0001 (foundation). Applied by migrations/versions/0001_foundation.py.
--
-- Citus readiness (DESIGN.md, "When one server is not enough"): every
-- per-partition table leads its key with (topic_id, partition), there are no
-- foreign keys, and no sequence is touched on the append/fetch/ack path.
-- Rows that change constantly (head rows, cursors, producer sequences,
-- consumer leases) are narrow, have fillfactor 50 and are updated only in
-- columns that are not indexed, so their updates are HOT.

CREATE SCHEMA IF NOT EXISTS txnq;

-- One row: server-side policy the SQL functions need (published from the
-- TXNQ_* settings by `txnq migrate` and by workers), and the active entry log.
CREATE TABLE txnq.config (
    singleton                   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    active_entry_log_id         integer NOT NULL,
    ledger_max_entries          bigint NOT NULL DEFAULT 50000,
    ledger_max_bytes            bigint NOT NULL DEFAULT 2147483648,
    ledger_min_rollover_seconds double precision NOT NULL DEFAULT 600,
    ledger_max_rollover_seconds double precision NOT NULL DEFAULT 14400,
    entry_log_max_bytes         bigint NOT NULL DEFAULT 1073741824,
    entry_log_max_age_seconds   double precision NOT NULL DEFAULT 86400,
    updated_at                  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE txnq.topics (
    topic_id          integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name              text NOT NULL UNIQUE,
    partitions        integer NOT NULL CHECK (partitions BETWEEN 1 AND 4096),
    -- Pulsar's meaning: 0 keeps nothing past the slowest cursor, -1 keeps forever.
    retention_seconds double precision NOT NULL DEFAULT 0,
    retention_bytes   bigint NOT NULL DEFAULT 0,
    ttl_seconds       double precision,          -- NULL: no TTL
    max_message_bytes integer NOT NULL CHECK (max_message_bytes > 0),
    created_at        timestamptz NOT NULL DEFAULT now()
);

-- The head row of a partition. next_offset - 1 is the high watermark.
CREATE TABLE txnq.partitions (
    topic_id            integer NOT NULL,
    partition           integer NOT NULL,
    next_offset         bigint NOT NULL DEFAULT 0,
    max_read_offset     bigint NOT NULL DEFAULT -1,
    ledger_id           bigint NOT NULL DEFAULT 0,
    ledger_first_offset bigint NOT NULL DEFAULT 0,
    ledger_bytes        bigint NOT NULL DEFAULT 0,
    ledger_opened_at    timestamptz NOT NULL DEFAULT now(),
    last_publish_time   timestamptz,
    PRIMARY KEY (topic_id, partition)
) WITH (fillfactor = 50);

-- A ledger: a contiguous offset range of one partition, the unit of retention.
-- ledger_id counts per partition (no global sequence on the append path).
CREATE TABLE txnq.ledgers (
    topic_id     integer NOT NULL,
    partition    integer NOT NULL,
    ledger_id    bigint NOT NULL,
    first_offset bigint NOT NULL,
    last_offset  bigint,                         -- NULL while OPEN
    size_bytes   bigint,
    state        text NOT NULL DEFAULT 'OPEN' CHECK (state IN ('OPEN', 'CLOSED', 'DELETED')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    closed_at    timestamptz,
    deleted_at   timestamptz,
    metadata     jsonb NOT NULL DEFAULT '{}',
    PRIMARY KEY (topic_id, partition, ledger_id)
);

-- An entry log: one PostgreSQL partition of txnq.entries, shared by many ledgers.
CREATE TABLE txnq.entry_logs (
    entry_log_id integer PRIMARY KEY,
    table_name   text NOT NULL UNIQUE,
    state        text NOT NULL CHECK (state IN ('ACTIVE', 'SEALED', 'DROPPED')),
    created_at   timestamptz NOT NULL DEFAULT now(),
    sealed_at    timestamptz,
    dropped_at   timestamptz
);

-- Entries are append-only and leave only by DROP TABLE of their entry log.
-- One entry is one producer batch: message i is element i of each array.
CREATE TABLE txnq.entries (
    topic_id       integer NOT NULL,
    partition      integer NOT NULL,
    entry_offset   bigint NOT NULL,
    entry_log_id   integer NOT NULL,
    ledger_id      bigint NOT NULL,
    publish_time   timestamptz NOT NULL,
    producer_id    bigint,
    first_sequence bigint,
    message_count  integer NOT NULL,
    payload_bytes  bigint NOT NULL,
    payloads       bytea[] NOT NULL,
    keys           bytea[],
    properties     jsonb[],
    event_times    timestamptz[],
    txn_tc         integer,                      -- transaction id (issue: transactions)
    txn_seq        bigint,
    marker         smallint,                     -- NULL: data; control entries are never delivered
    PRIMARY KEY (topic_id, partition, entry_offset, entry_log_id)
) PARTITION BY LIST (entry_log_id);

-- Publish times grow with insertion order, so a BRIN index finds a time cheaply
-- (seek by timestamp, TTL) at almost no cost to appends.
CREATE INDEX entries_publish_time_brin ON txnq.entries USING brin (publish_time);

CREATE TABLE txnq.entries_000001 PARTITION OF txnq.entries FOR VALUES IN (1);
INSERT INTO txnq.entry_logs (entry_log_id, table_name, state) VALUES (1, 'entries_000001', 'ACTIVE');
INSERT INTO txnq.config (active_entry_log_id) VALUES (1);

CREATE TABLE txnq.subscriptions (
    subscription_id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic_id          integer NOT NULL,
    name              text NOT NULL,
    subscription_type text NOT NULL
        CHECK (subscription_type IN ('exclusive', 'failover', 'shared', 'key_shared')),
    isolation         text NOT NULL DEFAULT 'read_committed'
        CHECK (isolation IN ('read_committed', 'read_uncommitted')),
    created_at        timestamptz NOT NULL DEFAULT now(),
    UNIQUE (topic_id, name)
);

-- Per partition and subscription: everything at or below mark_delete_offset is
-- acknowledged; generation grows on every seek/reset so live consumers rewind.
CREATE TABLE txnq.cursors (
    topic_id           integer NOT NULL,
    partition          integer NOT NULL,
    subscription_id    bigint NOT NULL,
    mark_delete_offset bigint NOT NULL,
    generation         integer NOT NULL DEFAULT 0,
    updated_at         timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_id, partition, subscription_id)
) WITH (fillfactor = 50);

-- Acks above the mark-delete offset. acked_batch_indexes NULL: the whole entry
-- is acknowledged; otherwise the acknowledged messages of a batch entry.
CREATE TABLE txnq.individual_acks (
    topic_id            integer NOT NULL,
    partition           integer NOT NULL,
    subscription_id     bigint NOT NULL,
    entry_offset        bigint NOT NULL,
    batch_size          integer NOT NULL,
    acked_batch_indexes integer[],
    PRIMARY KEY (topic_id, partition, subscription_id, entry_offset)
);

-- Consumer sessions: alive while lease_expires_at is in the future.
CREATE TABLE txnq.consumers (
    consumer_id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    subscription_id  bigint NOT NULL,
    topic_id         integer NOT NULL,
    name             text NOT NULL,
    priority         integer NOT NULL DEFAULT 0,
    connected_at     timestamptz NOT NULL DEFAULT now(),
    lease_expires_at timestamptz NOT NULL
) WITH (fillfactor = 50);
CREATE INDEX consumers_subscription ON txnq.consumers (subscription_id);

-- A consumer waiting for data on a partition; the next append deletes the row
-- and sends one NOTIFY (a wake-up hint, never one per message).
CREATE TABLE txnq.consumer_waiters (
    topic_id    integer NOT NULL,
    partition   integer NOT NULL,
    consumer_id bigint NOT NULL,
    since       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (topic_id, partition, consumer_id)
);

-- A producer identity: a name per topic. A new session with the same name
-- bumps the epoch and so fences the older one.
CREATE TABLE txnq.producers (
    producer_id  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic_id     integer NOT NULL,
    name         text NOT NULL,
    epoch        integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (topic_id, name)
);

-- Per producer and partition: the last sequence number written and the last
-- five batches (first sequence, entry offset, message count) so a retried batch
-- gets its original offset back, as Kafka's broker keeps five batches.
CREATE TABLE txnq.producer_sequences (
    topic_id               integer NOT NULL,
    partition              integer NOT NULL,
    producer_id            bigint NOT NULL,
    last_sequence          bigint NOT NULL DEFAULT -1,
    recent_first_sequences bigint[] NOT NULL DEFAULT '{}',
    recent_offsets         bigint[] NOT NULL DEFAULT '{}',
    recent_counts          integer[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (topic_id, partition, producer_id)
) WITH (fillfactor = 50);
