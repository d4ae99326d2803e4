-- txnq.delete_topic_v2: delete a topic. v2 (revision 0015) refuses a NULL
-- topic id or force (v1 took a NULL force for a forced delete) and checks the
-- caller's permission; delete_topic_v1 becomes a wrapper of it.
--
-- Parameters: topic_id, force (not NULL; default false).
-- Refused (TQ011) while a subscription has a backlog or a consumer is connected,
-- unless forced. The topic's ledgers go to DELETED; their entries stay in their
-- entry logs until storage GC drops or compacts those logs (no row deletes, no
-- bloat). Everything else of the topic is removed.
-- Permissions: txnq.authorize_v1(topic_id, 'admin') before anything is read.
-- Locks: the topic row.
-- Errors: TQ001 unknown topic, TQ005 NULL force, TQ011 busy, TQ018 not permitted.
CREATE OR REPLACE FUNCTION txnq.delete_topic_v2(p_topic_id integer, p_force boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_name text;
    v_backlog record;
BEGIN
    IF p_topic_id IS NULL OR p_force IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = CASE WHEN p_topic_id IS NULL THEN 'TQ001' ELSE 'TQ005' END,
            MESSAGE = format('delete_topic_v2: topic_id (%s) and force (%s) must not be NULL',
                             coalesce(p_topic_id::text, 'NULL'), coalesce(p_force::text, 'NULL')),
            HINT = 'pass the topic id (txnq.topics) and force true or false; nothing was deleted';
    END IF;
    PERFORM txnq.authorize_v1(p_topic_id, 'admin');
    SELECT t.name INTO v_name FROM txnq.topics t WHERE t.topic_id = p_topic_id FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic id %s does not exist', p_topic_id),
            HINT = 'look the topic up by name (txnq.topics); nothing was deleted';
    END IF;
    IF NOT p_force THEN
        SELECT s.name, sum(h.max_read_offset - c.mark_delete_offset) AS entries INTO v_backlog
          FROM txnq.cursors c
          JOIN txnq.subscriptions s ON s.subscription_id = c.subscription_id
          JOIN txnq.partitions h ON h.topic_id = c.topic_id AND h.partition = c.partition
         WHERE c.topic_id = p_topic_id AND c.mark_delete_offset < h.max_read_offset
         GROUP BY s.name LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ011',
                MESSAGE = format('topic %L: subscription %L still has %s unacknowledged entries',
                                 v_name, v_backlog.name, v_backlog.entries),
                HINT = 'consume or reset the subscription, unsubscribe it, or force the delete';
        END IF;
        IF EXISTS (SELECT 1 FROM txnq.consumers c
                    WHERE c.topic_id = p_topic_id AND c.lease_expires_at > clock_timestamp()) THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ011',
                MESSAGE = format('topic %L has connected consumers', v_name),
                HINT = 'close them first, or force the delete';
        END IF;
    END IF;
    UPDATE txnq.ledgers l SET state = 'DELETED', deleted_at = now(),
           last_offset = coalesce(l.last_offset, h.next_offset - 1)
      FROM txnq.partitions h
     WHERE l.topic_id = p_topic_id AND l.state <> 'DELETED' AND h.topic_id = l.topic_id AND h.partition = l.partition;
    DELETE FROM txnq.individual_acks WHERE topic_id = p_topic_id;
    DELETE FROM txnq.cursors WHERE topic_id = p_topic_id;
    DELETE FROM txnq.consumer_waiters WHERE topic_id = p_topic_id;
    DELETE FROM txnq.consumers WHERE topic_id = p_topic_id;
    DELETE FROM txnq.subscriptions WHERE topic_id = p_topic_id;
    DELETE FROM txnq.producer_sequences WHERE topic_id = p_topic_id;
    DELETE FROM txnq.producers WHERE topic_id = p_topic_id;
    DELETE FROM txnq.partitions WHERE topic_id = p_topic_id;
    DELETE FROM txnq.topics WHERE topic_id = p_topic_id;
END;
$$;
