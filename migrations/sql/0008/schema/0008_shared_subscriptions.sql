-- txnq schema, revision 0008 (shared and key_shared subscriptions, redelivery,
-- dead letters, delayed delivery). Applied by migrations/versions/0008_shared_subscriptions.py.
-- docs/subscriptions.md explains the model; in short, per subscription and
-- partition (Pulsar's managed cursor):
--
--   mark_delete_offset (txnq.cursors)  everything at or below it is acknowledged
--   dispatch_offset    (txnq.cursors)  everything up to it was handed out once
--   txnq.claims                        one row per message in between that is
--                                      not acknowledged yet: held by a consumer,
--                                      waiting for (re)delivery, or pending in a
--                                      transaction
--
-- A message between the two offsets without a claim row is acknowledged (or a
-- marker / an aborted transaction's, never delivered). The mark-delete offset
-- follows the lowest claim, so retention, TTL, backlog and the inspection views
-- read a correct cursor, and claim rows below it never exist (deleted).

-- NULL until a shared or key_shared consumer first claims on the partition;
-- dispatch_generation follows cursors.generation (a seek resets the dispatch).
ALTER TABLE txnq.cursors
    ADD COLUMN dispatch_offset bigint,
    ADD COLUMN dispatch_generation integer;

-- A claim: one message of a shared/key_shared subscription that is out but not
-- acknowledged. consumer_id is the holder (NULL: waiting); visible_at is when
-- anyone may claim it (again): the ack-timeout deadline while held ('infinity'
-- without an ack timeout), the nack/delay time while waiting. delivered counts
-- deliveries (redelivery_count = delivered - 1). txn_tc/txn_seq: acknowledged
-- in that open transaction (held until it ends). key_hash: key_shared routing.
CREATE TABLE txnq.claims (
    topic_id        integer NOT NULL,
    partition       integer NOT NULL,
    subscription_id bigint NOT NULL,
    entry_offset    bigint NOT NULL,
    batch_index     integer NOT NULL,
    batch_size      integer NOT NULL,
    key_hash        integer,
    consumer_id     bigint,
    visible_at      timestamptz NOT NULL,
    delivered       integer NOT NULL DEFAULT 0,
    reason          text,
    txn_tc          integer,
    txn_seq         bigint,
    PRIMARY KEY (topic_id, partition, subscription_id, entry_offset, batch_index)
) WITH (fillfactor = 70);
-- What is deliverable (again) now, in time order; held rows sit at the end.
CREATE INDEX claims_by_visibility ON txnq.claims (subscription_id, visible_at);

-- Delayed delivery (Pulsar's deliverAfter/deliverAt): a delayed message is its
-- own entry (as Pulsar disables batching for them), and its delivery time is a
-- row here rather than a column of the append-only entries. Shared and
-- key_shared subscriptions honour it; exclusive and failover deliver at once,
-- as in Pulsar. Rows every cursor has passed are deleted by the consumers'
-- heartbeats; a deleted topic's rows by a trigger.
CREATE TABLE txnq.delayed_entries (
    topic_id     integer NOT NULL,
    partition    integer NOT NULL,
    entry_offset bigint NOT NULL,
    deliver_at   timestamptz NOT NULL,
    PRIMARY KEY (topic_id, partition, entry_offset)
);

-- Cursors leave (unsubscribe, topic deletion): their claims go with them.
CREATE FUNCTION txnq.claims_forget_cursors_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM txnq.claims c USING gone g
     WHERE c.topic_id = g.topic_id AND c.partition = g.partition AND c.subscription_id = g.subscription_id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER claims_forget_cursors AFTER DELETE ON txnq.cursors
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION txnq.claims_forget_cursors_v1();

CREATE FUNCTION txnq.delayed_entries_forget_topic_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM txnq.delayed_entries d USING gone g WHERE d.topic_id = g.topic_id;
    RETURN NULL;
END;
$$;
CREATE TRIGGER delayed_entries_forget_topic AFTER DELETE ON txnq.topics
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION txnq.delayed_entries_forget_topic_v1();
