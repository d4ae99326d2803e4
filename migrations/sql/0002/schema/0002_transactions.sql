-- txnq schema, revision 0002 (transactions). Applied by migrations/versions/0002_transactions.py.
--
-- The transaction log (transactions, txn_partitions, txn_subscriptions, txn_log)
-- is keyed by the transaction id (tc_id, txn_seq); the per-partition state of
-- the protocol (the transaction buffer: txn_buffer_ongoing, aborted_txns; and
-- pending_acks) leads its key with (topic_id, partition), as every per-partition
-- table does, so it can be co-located with the partition's entries on Citus.

-- Server-side policy of transactions, published from TXNQ_TC_COUNT and
-- TXNQ_TXN_MAX_TIMEOUT (like Kafka's transaction.max.timeout.ms).
ALTER TABLE txnq.config
    ADD COLUMN tc_count integer NOT NULL DEFAULT 16 CHECK (tc_count BETWEEN 1 AND 65535),
    ADD COLUMN txn_max_timeout_seconds double precision NOT NULL DEFAULT 900;

-- How many transactions have entries in the partition and are not ended there
-- yet: while it is not zero, max_read_offset stays below the oldest one's first offset.
ALTER TABLE txnq.partitions ADD COLUMN ongoing_txns integer NOT NULL DEFAULT 0;

-- One row per transaction coordinator that ever opened a transaction: the next
-- transaction number (ids are never reused). Ownership of a coordinator is a
-- worker's session advisory lock; owner/owned_since only show who holds it.
CREATE TABLE txnq.coordinators (
    tc_id        integer PRIMARY KEY,
    next_txn_seq bigint NOT NULL DEFAULT 1,
    owner        text,
    owned_since  timestamptz
) WITH (fillfactor = 50);

-- A transactional id (Kafka's transactional.id): a new producer session bumps
-- the epoch, which fences the older session and aborts its open transaction.
CREATE TABLE txnq.transactional_ids (
    transactional_id text PRIMARY KEY,
    epoch            integer NOT NULL DEFAULT 0,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- The transaction log: one row per transaction, its state and the decision.
CREATE TABLE txnq.transactions (
    tc_id            integer NOT NULL,
    txn_seq          bigint NOT NULL,
    state            text NOT NULL DEFAULT 'OPEN'
        CHECK (state IN ('OPEN', 'COMMITTING', 'COMMITTED', 'ABORTING', 'ABORTED')),
    reason           text CHECK (reason IN ('client', 'timeout', 'fenced', 'admin')),
    timeout_seconds  double precision NOT NULL,
    opened_at        timestamptz NOT NULL DEFAULT now(),
    timeout_at       timestamptz NOT NULL,
    decided_at       timestamptz,
    completed_at     timestamptz,
    transactional_id text,
    producer_epoch   integer,
    PRIMARY KEY (tc_id, txn_seq)
) WITH (fillfactor = 50);
-- The scheduler's timeout scan, the coordinators' work queue, and fencing.
CREATE INDEX transactions_open_by_timeout ON txnq.transactions (timeout_at) WHERE state = 'OPEN';
CREATE INDEX transactions_deciding ON txnq.transactions (tc_id, txn_seq)
    WHERE state IN ('COMMITTING', 'ABORTING');
CREATE INDEX transactions_open_by_transactional_id ON txnq.transactions (transactional_id)
    WHERE state = 'OPEN' AND transactional_id IS NOT NULL;

-- The partitions a transaction produced to; marker_offset is set when the
-- COMMIT/ABORT marker is written there (that step of the marker phase is done).
CREATE TABLE txnq.txn_partitions (
    tc_id         integer NOT NULL,
    txn_seq       bigint NOT NULL,
    topic_id      integer NOT NULL,
    partition     integer NOT NULL,
    first_offset  bigint NOT NULL,
    marker_offset bigint,
    PRIMARY KEY (tc_id, txn_seq, topic_id, partition)
);

-- The subscriptions (per partition) a transaction acknowledged on; done is set
-- when its pending acks were applied (commit) or released (abort).
CREATE TABLE txnq.txn_subscriptions (
    tc_id           integer NOT NULL,
    txn_seq         bigint NOT NULL,
    topic_id        integer NOT NULL,
    partition       integer NOT NULL,
    subscription_id bigint NOT NULL,
    done            boolean NOT NULL DEFAULT false,
    PRIMARY KEY (tc_id, txn_seq, topic_id, partition, subscription_id)
);

-- Append-only history of every transaction's state transitions.
CREATE TABLE txnq.txn_log (
    tc_id   integer NOT NULL,
    txn_seq bigint NOT NULL,
    at      timestamptz NOT NULL DEFAULT clock_timestamp(),
    state   text NOT NULL,
    reason  text,
    detail  text
);
CREATE INDEX txn_log_by_txn ON txnq.txn_log (tc_id, txn_seq);

-- The transaction buffer of a partition: the ongoing transactions with their
-- first offset (the max read offset stays below the oldest) ...
CREATE TABLE txnq.txn_buffer_ongoing (
    topic_id     integer NOT NULL,
    partition    integer NOT NULL,
    tc_id        integer NOT NULL,
    txn_seq      bigint NOT NULL,
    first_offset bigint NOT NULL,
    PRIMARY KEY (topic_id, partition, tc_id, txn_seq)
);

-- ... and the aborted-transaction index: entries of these transactions are
-- never delivered, whatever the isolation, before or after a restart.
CREATE TABLE txnq.aborted_txns (
    topic_id      integer NOT NULL,
    partition     integer NOT NULL,
    tc_id         integer NOT NULL,
    txn_seq       bigint NOT NULL,
    first_offset  bigint NOT NULL,
    marker_offset bigint NOT NULL,
    PRIMARY KEY (topic_id, partition, tc_id, txn_seq)
);

-- Acks made inside an open transaction. batch_index -1: the whole entry;
-- cumulative: every entry at or below entry_offset. The key makes a second
-- transaction's ack of the same message a conflict (invariant 4).
CREATE TABLE txnq.pending_acks (
    topic_id        integer NOT NULL,
    partition       integer NOT NULL,
    subscription_id bigint NOT NULL,
    entry_offset    bigint NOT NULL,
    batch_index     integer NOT NULL,
    batch_size      integer NOT NULL,
    cumulative      boolean NOT NULL DEFAULT false,
    tc_id           integer NOT NULL,
    txn_seq         bigint NOT NULL,
    PRIMARY KEY (topic_id, partition, subscription_id, entry_offset, batch_index)
);
CREATE INDEX pending_acks_by_txn ON txnq.pending_acks (tc_id, txn_seq);
