-- txnq.add_partitions_v2: grow a topic to p_partitions partitions (never shrink,
-- as Kafka and Pulsar: keys would move and ordering break). v2 (revision
-- 0015) names a NULL argument in its error and checks the caller's
-- permission; add_partitions_v1 becomes a wrapper of it.
--
-- Parameters: topic_id, partitions (the new count: the current one .. 4096).
-- New partitions get a head row, an open ledger, and a cursor at the earliest
-- position for every existing subscription, so nothing produced to a new
-- partition is skipped. Idempotent for the current count.
-- Returns the partition count.
-- Permissions: txnq.authorize_v1(topic_id, 'admin') before anything is read.
-- Locks: the topic row.
-- Errors: TQ001 unknown topic, TQ005 fewer partitions than now or over 4096,
--   TQ018 not permitted.
CREATE OR REPLACE FUNCTION txnq.add_partitions_v2(p_topic_id integer, p_partitions integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_topic txnq.topics%ROWTYPE;
    v_existing integer;
BEGIN
    IF p_topic_id IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = 'add_partitions_v2: topic_id must not be NULL',
            HINT = 'look the topic up by name (txnq.topics); nothing was changed';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'admin');
    SELECT * INTO v_topic FROM txnq.topics t WHERE t.topic_id = p_topic_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic id %s does not exist', p_topic_id),
            HINT = 'look the topic up by name (txnq.topics); nothing was changed';
    END IF;
    SELECT count(*) INTO v_existing FROM txnq.partitions h WHERE h.topic_id = p_topic_id;
    IF p_partitions IS NULL OR p_partitions < v_existing OR p_partitions > 4096 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('topic %L has %s partitions; it can grow up to 4096 but never shrink (asked for %s)',
                             v_topic.name, v_existing, coalesce(p_partitions::text, 'NULL')),
            HINT = 'pass a partition count from the current one to 4096; nothing was changed';
    END IF;
    INSERT INTO txnq.partitions (topic_id, partition)
    SELECT p_topic_id, p FROM generate_series(v_existing, p_partitions - 1) AS p;
    INSERT INTO txnq.ledgers (topic_id, partition, ledger_id, first_offset, metadata)
    SELECT p_topic_id, p, 0, 0, jsonb_build_object('topic', v_topic.name, 'topic_id', p_topic_id, 'partition', p)
      FROM generate_series(v_existing, p_partitions - 1) AS p;
    INSERT INTO txnq.cursors (topic_id, partition, subscription_id, mark_delete_offset)
    SELECT p_topic_id, p, s.subscription_id, -1
      FROM txnq.subscriptions s CROSS JOIN generate_series(v_existing, p_partitions - 1) AS p
     WHERE s.topic_id = p_topic_id;
    UPDATE txnq.topics t SET partitions = p_partitions WHERE t.topic_id = p_topic_id;
    RETURN p_partitions;
END;
$$;
