-- txnq.purge_history_v1: delete the rows txnq keeps only as history, once
-- they are older than the retention the scheduler passes (revision 0020).
-- What keeps every table of txnq bounded, and which job does it, is the table
-- in docs/lifecycle.md ("Every table bounded"); this function is the
-- `purge_history` job's part of it.
--
-- What it deletes, at most p_limit rows of each kind per call (the job calls
-- it again while a kind was cut off by the limit):
--   transactions     COMMITTED or ABORTED (the marker phase finished) longer
--                    than p_finished_seconds ago, and no sink
--                    (txnq.sink_transactions) still names them; with them
--                    their txn_partitions and txn_subscriptions rows (pending
--                    acks and the transaction buffer went at completion; their
--                    txn_log rows go with their time partition,
--                    txnq.txn_log_maintain_v1). A client that asks about such a
--                    transaction afterwards gets TQ014 (unknown), as Kafka's
--                    coordinator forgets expired transactional state.
--   txn_log_default  rows of transactions that no longer exist (rows that
--                    fell outside every time partition of txnq.txn_log).
--   aborted_txns     an aborted transaction's range of a partition once no
--                    entry of that partition at or below its marker is left
--                    (retention and GC removed them): nothing is left to hide.
--   ledgers          DELETED longer than p_history_seconds ago and no entry in
--                    their offset range is left in any entry log (an entry
--                    without a ledger row counts as live for GC: the row must
--                    outlive its entries).
--   entry_logs       DROPPED longer than p_history_seconds ago.
--   gc_runs          finished longer than p_history_seconds ago.
--   consumers        whose lease expired longer than p_history_seconds ago
--                    and that hold no claim (release_claims_v2 releases the
--                    claims of an expired consumer through its row).
--   consumer_waiters of consumers that no longer exist.
--   producers        registered longer than p_producer_seconds ago and
--                    without an entry published since on any partition (the
--                    entry at the last offset each producer_sequences row
--                    remembers is gone or older), and not named after a
--                    transactional id; with their producer_sequences rows.
--                    Kafka's producer id expiration: the Python producer
--                    registers again when its next append is refused
--                    (txnq/producer/base.py).
--   transactional_ids  not initialised for p_producer_seconds, no
--                    transaction of theirs opened since or unfinished, no
--                    sink naming them; with the producers named after them.
--                    Kafka's transactional.id.expiration.ms. The epoch floor
--                    (txnq.config.transactional_epoch_floor) rises above
--                    their epochs first: the id starts again above them
--                    (init_transactional_id_v3), so a session of the
--                    forgotten id that wakes up is fenced.
--
-- Parameters: finished_seconds, history_seconds, producer_seconds (> 0, at
--   most 1e9), limit (1 .. 1,000,000).
-- Returns one row per kind: relation, purged (rows deleted), more (the limit
--   cut it off: call again).
-- Locks: the deleted rows (row locks); runs in the caller's transaction.
-- Invariants: nothing a reader, GC, recovery or a sink still needs is
--   deleted (the conditions above); a transaction is deleted whole.
-- Errors: TQ005 an argument NULL or out of range.
CREATE OR REPLACE FUNCTION txnq.purge_history_v1(
    p_finished_seconds double precision,
    p_history_seconds double precision,
    p_producer_seconds double precision,
    p_limit integer DEFAULT 10000
)
RETURNS TABLE (relation text, purged bigint, more boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_finished_before timestamptz;
    v_history_before timestamptz;
    v_producer_before timestamptz;
    v_count bigint;
BEGIN
    IF p_finished_seconds IS NULL OR p_history_seconds IS NULL OR p_producer_seconds IS NULL
       OR p_limit IS NULL
       OR NOT (p_finished_seconds > 0 AND p_finished_seconds <= 1e9)
       OR NOT (p_history_seconds > 0 AND p_history_seconds <= 1e9)
       OR NOT (p_producer_seconds > 0 AND p_producer_seconds <= 1e9)
       OR p_limit < 1 OR p_limit > 1000000 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('purge_history_v1: finished_seconds (%s), history_seconds (%s) and '
                             'producer_seconds (%s) must be more than 0 and at most 1e9, limit (%s) '
                             'from 1 to 1000000',
                             coalesce(p_finished_seconds::text, 'NULL'), coalesce(p_history_seconds::text, 'NULL'),
                             coalesce(p_producer_seconds::text, 'NULL'), coalesce(p_limit::text, 'NULL')),
            HINT = 'pass how long finished transactions, other history and idle producers are kept, '
                   'in seconds';
    END IF;
    v_finished_before := now() - make_interval(secs => p_finished_seconds);
    v_history_before := now() - make_interval(secs => p_history_seconds);
    v_producer_before := now() - make_interval(secs => p_producer_seconds);

    -- Finished transactions, whole (the CTEs' deletes run whatever the last
    -- statement does; its count is the transactions').
    WITH picked AS (
        SELECT t.tc_id, t.txn_seq FROM txnq.transactions t
         WHERE t.state IN ('COMMITTED', 'ABORTED') AND t.completed_at < v_finished_before
           AND NOT EXISTS (SELECT 1 FROM txnq.sink_transactions s
                            WHERE s.tc_id = t.tc_id AND s.txn_seq = t.txn_seq)
         ORDER BY t.completed_at
         LIMIT p_limit
    ), gone_partitions AS (
        DELETE FROM txnq.txn_partitions x USING picked p WHERE x.tc_id = p.tc_id AND x.txn_seq = p.txn_seq
    ), gone_subscriptions AS (
        DELETE FROM txnq.txn_subscriptions x USING picked p WHERE x.tc_id = p.tc_id AND x.txn_seq = p.txn_seq
    )
    DELETE FROM txnq.transactions t USING picked p WHERE t.tc_id = p.tc_id AND t.txn_seq = p.txn_seq;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'transactions'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    -- Log rows of transactions that are gone, in the default partition only:
    -- the time partitions go whole (txnq.txn_log_maintain_v1).
    DELETE FROM txnq.txn_log_default l
     WHERE l.ctid = ANY (ARRAY(
           SELECT o.ctid FROM txnq.txn_log_default o
            WHERE o.at < v_finished_before
              AND NOT EXISTS (SELECT 1 FROM txnq.transactions t
                               WHERE t.tc_id = o.tc_id AND t.txn_seq = o.txn_seq)
            LIMIT p_limit));
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'txn_log_default'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    DELETE FROM txnq.aborted_txns a
     WHERE (a.topic_id, a.partition, a.tc_id, a.txn_seq) IN (
           SELECT o.topic_id, o.partition, o.tc_id, o.txn_seq FROM txnq.aborted_txns o
            WHERE NOT EXISTS (SELECT 1 FROM txnq.entries e
                               WHERE e.topic_id = o.topic_id AND e.partition = o.partition
                                 AND e.entry_offset <= o.marker_offset)
            LIMIT p_limit);
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'aborted_txns'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    DELETE FROM txnq.ledgers l
     WHERE (l.topic_id, l.partition, l.ledger_id) IN (
           SELECT d.topic_id, d.partition, d.ledger_id FROM txnq.ledgers d
            WHERE d.state = 'DELETED' AND d.deleted_at < v_history_before
              AND NOT EXISTS (SELECT 1 FROM txnq.entries e
                               WHERE e.topic_id = d.topic_id AND e.partition = d.partition
                                 AND e.entry_offset BETWEEN d.first_offset AND coalesce(d.last_offset, d.first_offset))
            LIMIT p_limit);
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'ledgers'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    DELETE FROM txnq.entry_logs l
     WHERE l.entry_log_id IN (SELECT d.entry_log_id FROM txnq.entry_logs d
                               WHERE d.state = 'DROPPED' AND d.dropped_at < v_history_before
                               LIMIT p_limit);
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'entry_logs'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    DELETE FROM txnq.gc_runs g
     WHERE g.run_id IN (SELECT o.run_id FROM txnq.gc_runs o WHERE o.finished_at < v_history_before
                         ORDER BY o.run_id LIMIT p_limit);
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'gc_runs'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    DELETE FROM txnq.consumers c
     WHERE c.consumer_id IN (
           SELECT o.consumer_id FROM txnq.consumers o
            WHERE o.lease_expires_at < v_history_before
              AND o.consumer_id NOT IN (SELECT k.consumer_id FROM txnq.claims k
                                         WHERE k.consumer_id IS NOT NULL)
            LIMIT p_limit);
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'consumers'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    DELETE FROM txnq.consumer_waiters w
     WHERE (w.topic_id, w.partition, w.consumer_id) IN (
           SELECT o.topic_id, o.partition, o.consumer_id FROM txnq.consumer_waiters o
            WHERE NOT EXISTS (SELECT 1 FROM txnq.consumers c WHERE c.consumer_id = o.consumer_id)
            LIMIT p_limit);
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'consumer_waiters'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    WITH idle AS (
        SELECT p.producer_id, p.topic_id FROM txnq.producers p
         WHERE p.last_seen_at < v_producer_before
           AND NOT EXISTS (SELECT 1 FROM txnq.transactional_ids x WHERE x.transactional_id = p.name)
           AND NOT EXISTS (
               SELECT 1 FROM txnq.producer_sequences q
                 JOIN txnq.entries e ON e.topic_id = q.topic_id AND e.partition = q.partition
                                    AND e.entry_offset = q.recent_offsets[cardinality(q.recent_offsets)]
                WHERE q.topic_id = p.topic_id AND q.producer_id = p.producer_id
                  AND e.publish_time >= v_producer_before)
         LIMIT p_limit
    ), gone_sequences AS (
        DELETE FROM txnq.producer_sequences q USING idle i
         WHERE q.topic_id = i.topic_id AND q.producer_id = i.producer_id
    )
    DELETE FROM txnq.producers p USING idle i WHERE p.producer_id = i.producer_id;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'producers'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;

    WITH idle AS (
        SELECT x.transactional_id, x.epoch FROM txnq.transactional_ids x
         WHERE x.updated_at < v_producer_before
           AND NOT EXISTS (SELECT 1 FROM txnq.transactions t
                            WHERE t.transactional_id = x.transactional_id
                              AND (t.state NOT IN ('COMMITTED', 'ABORTED') OR t.opened_at >= v_producer_before))
           AND NOT EXISTS (SELECT 1 FROM txnq.sink_transactions k WHERE k.transactional_id = x.transactional_id)
         LIMIT p_limit
         FOR UPDATE OF x SKIP LOCKED
    ), floor_raised AS (
        UPDATE txnq.config c
           SET transactional_epoch_floor = greatest(c.transactional_epoch_floor,
                                                    (SELECT max(i.epoch) + 1 FROM idle i))
         WHERE EXISTS (SELECT 1 FROM idle)
    ), producers_gone AS (
        DELETE FROM txnq.producers p USING idle i WHERE p.name = i.transactional_id
        RETURNING p.producer_id, p.topic_id
    ), sequences_gone AS (
        DELETE FROM txnq.producer_sequences q USING producers_gone g
         WHERE q.topic_id = g.topic_id AND q.producer_id = g.producer_id
    )
    DELETE FROM txnq.transactional_ids x USING idle i WHERE x.transactional_id = i.transactional_id;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    relation := 'transactional_ids'; purged := v_count; more := v_count = p_limit;
    RETURN NEXT;
END;
$$;
