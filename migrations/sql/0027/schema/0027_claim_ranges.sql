-- txnq schema, revision 0027 (issue 23: shared subscriptions without a row
-- written and deleted per message). Applied by
-- migrations/versions/0027_claim_ranges.py; docs/subscriptions.md explains it.
--
-- Pulsar's managed cursor keeps a mark-delete position plus "individually
-- deleted ranges", and tracks only the exceptional messages one by one. A
-- shared subscription's claim of N new messages on a partition is now ONE
-- row here, covering the entries it handed out, its consumer, its deadline
-- and the messages of it acknowledged so far; the row goes when every
-- message of it is acknowledged. txnq.claims keeps a row per message only
-- for the exceptions: redelivered messages (nacked, ack timeout passed,
-- released by a dead or closing consumer, an aborted transaction's), those
-- pending in a transaction, delayed messages, and every message of a
-- key_shared subscription (its per-key order is decided message by message).
-- A range turns into such rows ("unfolds", txnq.unfold_claim_ranges_v1) as
-- soon as one of its messages becomes an exception: a nack, an ack inside a
-- transaction, a dead letter, its deadline, its consumer's release, a cursor
-- moved past it from outside.
--
--   first_offset, last_offset  the entries the claim read (inclusive)
--   batch_sizes[k]             messages of entry first_offset + k - 1 the range
--                              covers: the entry's message count, or 0 (a
--                              marker, an aborted transaction's entry, a
--                              delayed entry, or none read)
--   message_count              sum(batch_sizes)
--   acked_offsets/indexes      the messages (entry offset, batch index) of the
--                              range not covered any more: acknowledged, or
--                              held by a claim row of their own when the range
--                              was written (a transaction's, kept through a
--                              seek); appended once per acknowledgement call
--   acked_count                how many those are; the row goes when it
--                              reaches message_count
--   consumer_id, visible_at    the holder and its ack-timeout deadline
--                              ('infinity' without an ack timeout), as a
--                              claim's; a range is always a first delivery
--
-- Rows change once per claim and acknowledgement call, never in an indexed
-- column (HOT updates), hence the fillfactor.
CREATE TABLE txnq.claim_ranges (
    topic_id        integer NOT NULL,
    partition       integer NOT NULL,
    subscription_id bigint NOT NULL,
    first_offset    bigint NOT NULL,
    last_offset     bigint NOT NULL,
    consumer_id     bigint NOT NULL,
    visible_at      timestamptz NOT NULL,
    batch_sizes     integer[] NOT NULL,
    message_count   integer NOT NULL,
    acked_count     integer NOT NULL DEFAULT 0,
    acked_offsets   bigint[] NOT NULL DEFAULT '{}',
    acked_indexes   integer[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (topic_id, partition, subscription_id, first_offset)
) WITH (fillfactor = 70);
-- Ranges past their deadline (claim) and a subscription's ranges by holder.
CREATE INDEX claim_ranges_by_visibility ON txnq.claim_ranges (subscription_id, visible_at);
-- (Cursors leaving take their ranges along: txnq.claim_ranges_forget_cursors_v1.)
