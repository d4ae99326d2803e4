-- txnq.add_partitions_v1: grow a topic to p_partitions partitions (never shrink,
-- as Kafka and Pulsar: keys would move and ordering break).
--
-- New partitions get a head row, an open ledger, and a cursor at the earliest
-- position for every existing subscription, so nothing produced to a new
-- partition is skipped. Idempotent for the current count.
-- Locks: the topic row.
-- Errors: TQ001 unknown topic, TQ005 fewer partitions than now or over 4096.
CREATE OR REPLACE FUNCTION txnq.add_partitions_v1(p_topic_id integer, p_partitions integer)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_topic txnq.topics%ROWTYPE;
    v_existing integer;
BEGIN
    SELECT * INTO v_topic FROM txnq.topics t WHERE t.topic_id = p_topic_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic id %s does not exist', p_topic_id);
    END IF;
    SELECT count(*) INTO v_existing FROM txnq.partitions h WHERE h.topic_id = p_topic_id;
    IF p_partitions IS NULL OR p_partitions < v_existing OR p_partitions > 4096 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('topic %L has %s partitions; it can grow up to 4096 but never shrink (asked for %s)',
                             v_topic.name, v_existing, p_partitions);
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
