-- txnq.publish_staged_v2: publish what the current PostgreSQL transaction
-- staged (txnq.stage_send_v2, txnq.send_at_commit_v2, txnq.stage_ack_v1):
-- the commit of an application transaction. Runs inside COMMIT by the
-- deferred trigger txnq.publish_staged_at_commit; a client may call it as the
-- last statement before COMMIT to learn the offsets (the trigger then finds
-- nothing left). Calling it twice is harmless. v2 (revision 0015) appends
-- with txnq.append_v4 (which checks the permission to produce again) and
-- checks the permission to consume before applying staged acks;
-- publish_staged_v1 and the trigger function publish_staged_at_commit_v1
-- become wrappers of v2.
--
-- Parameters: none (the caller's transaction, pg_current_xact_id()); what it
--   publishes was checked when it was staged.
-- Returns one row per staged batch: stage_id, topic_id, partition, the
--   entry_offset it was appended at, and first_batch_index (the index of its
--   first message in that entry: a partition's staged batches become one entry).
-- Does: per (topic_id, partition) in order, one txnq.append_v4 of every message
--   staged for it (non-transactional: the PostgreSQL commit makes them visible
--   together with the application's rows); then per (topic_id, partition,
--   subscription) in order, txnq.authorize_v1(topic_id, 'consume'), locks the
--   cursor row, checks that no message is acknowledged already
--   (txnq.check_ack_once_v1) and applies the acks.
-- Locks: head rows then cursor rows, in (topic_id, partition) order, as every
--   completer takes them; held until the caller's transaction ends, which is at
--   once when the trigger runs this inside COMMIT.
-- Errors: TQ012 a message acknowledged by another transaction first (the
--   caller's transaction must roll back), TQ006 a subscription gone, TQ018 not
--   permitted, and the errors of txnq.append_v4.
CREATE OR REPLACE FUNCTION txnq.publish_staged_v2()
RETURNS TABLE (stage_id bigint, topic_id integer, partition integer, entry_offset bigint,
               first_batch_index integer)
LANGUAGE plpgsql AS $$
DECLARE
    v_xact xid8 := pg_current_xact_id();
    v_target record;
    v_batch record;
    v_offset bigint;
BEGIN
    FOR v_target IN
        SELECT DISTINCT s.topic_id, s.partition FROM txnq.staged_sends s
         WHERE s.xact = v_xact ORDER BY s.topic_id, s.partition
    LOOP
        WITH moved AS (
            DELETE FROM txnq.staged_sends s
             WHERE s.xact = v_xact AND s.topic_id = v_target.topic_id AND s.partition = v_target.partition
            RETURNING s.stage_id, s.payloads, s.keys, s.properties, s.event_times
        )
        SELECT array_agg(u.p ORDER BY m.stage_id, u.n) AS payloads,
               CASE WHEN bool_or(u.k IS NOT NULL) THEN array_agg(u.k ORDER BY m.stage_id, u.n) END AS keys,
               CASE WHEN bool_or(u.pr IS NOT NULL) THEN array_agg(u.pr ORDER BY m.stage_id, u.n) END AS props,
               CASE WHEN bool_or(u.t IS NOT NULL) THEN array_agg(u.t ORDER BY m.stage_id, u.n) END AS times,
               array_agg(m.stage_id ORDER BY m.stage_id, u.n) AS stages
          INTO v_batch
          FROM moved m, unnest(m.payloads, m.keys, m.properties, m.event_times) WITH ORDINALITY AS u(p, k, pr, t, n)
         WHERE u.n <= cardinality(m.payloads);
        SELECT a.entry_offset INTO v_offset
          FROM txnq.append_v4(v_target.topic_id, v_target.partition, NULL, NULL, NULL,
                              v_batch.payloads, v_batch.keys, v_batch.props, v_batch.times) a;
        RETURN QUERY
            SELECT x.stage_id, v_target.topic_id, v_target.partition, v_offset, (min(x.n) - 1)::integer
              FROM unnest(v_batch.stages) WITH ORDINALITY AS x(stage_id, n)
             GROUP BY x.stage_id ORDER BY x.stage_id;
    END LOOP;

    FOR v_target IN
        SELECT DISTINCT a.topic_id, a.partition, a.subscription_id FROM txnq.staged_acks a
         WHERE a.xact = v_xact ORDER BY a.topic_id, a.partition, a.subscription_id
    LOOP
        WITH moved AS (
            DELETE FROM txnq.staged_acks a
             WHERE a.xact = v_xact AND a.topic_id = v_target.topic_id AND a.partition = v_target.partition
               AND a.subscription_id = v_target.subscription_id
            RETURNING a.offsets, a.batch_indexes, a.batch_sizes
        ), acks AS (
            SELECT DISTINCT u.o, u.i, u.s FROM moved m, unnest(m.offsets, m.batch_indexes, m.batch_sizes) AS u(o, i, s)
        )
        SELECT array_agg(acks.o ORDER BY acks.o, acks.i) AS offsets,
               array_agg(acks.i ORDER BY acks.o, acks.i) AS indexes,
               array_agg(acks.s ORDER BY acks.o, acks.i) AS sizes
          INTO v_batch FROM acks;
        PERFORM txnq.authorize_v1(v_target.topic_id, 'consume');
        PERFORM 1 FROM txnq.cursors c
         WHERE c.topic_id = v_target.topic_id AND c.partition = v_target.partition
           AND c.subscription_id = v_target.subscription_id
           FOR UPDATE;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ006',
                MESSAGE = format('subscription id %s has no cursor on partition %s of topic id %s',
                                 v_target.subscription_id, v_target.partition, v_target.topic_id),
                HINT = 'it was unsubscribed or its topic deleted while the transaction ran';
        END IF;
        PERFORM txnq.check_ack_once_v1(v_target.topic_id, v_target.partition, v_target.subscription_id,
                                       v_batch.offsets, v_batch.indexes);
        PERFORM txnq.apply_acks_v1(v_target.topic_id, v_target.partition, v_target.subscription_id, NULL,
                                   v_batch.offsets, v_batch.indexes, v_batch.sizes);
    END LOOP;
END;
$$;

-- The deferred trigger: whatever a transaction staged is published inside its
-- COMMIT, also when nobody calls publish_staged_v2 (a SQL trigger's outbox, a
-- client that commits the connection directly). Fires once per staged row;
-- the first firing publishes everything, the others find nothing.
CREATE OR REPLACE FUNCTION txnq.publish_staged_at_commit_v2()
RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM txnq.publish_staged_v2();
    RETURN NULL;
END;
$$;

DROP TRIGGER IF EXISTS publish_staged_at_commit ON txnq.staged_sends;
CREATE CONSTRAINT TRIGGER publish_staged_at_commit AFTER INSERT ON txnq.staged_sends
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION txnq.publish_staged_at_commit_v2();
DROP TRIGGER IF EXISTS publish_staged_at_commit ON txnq.staged_acks;
CREATE CONSTRAINT TRIGGER publish_staged_at_commit AFTER INSERT ON txnq.staged_acks
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION txnq.publish_staged_at_commit_v2();
