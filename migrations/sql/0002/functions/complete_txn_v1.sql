-- txnq.complete_txn_v1: run the whole marker phase of a decided transaction and
-- finish it (protocol steps 6 and 7) in one call: the client's fast path after
-- its decision, and what `txnq txn abort` uses. Coordinator workers run the
-- same steps one PostgreSQL transaction each (complete_txn_partition_v1,
-- complete_txn_subscription_v1, finish_txn_v1), so a crash between steps keeps
-- the steps already done; every step is idempotent.
--
-- Parameters: (tc_id, txn_seq).
-- Returns the state after the call (COMMITTED or ABORTED; OPEN is an error).
-- Locks: the transaction row FOR UPDATE, then head rows in (topic_id, partition)
--   order, then cursor rows in order: the same order every completer takes, so
--   completers never deadlock each other.
-- Errors: TQ014 unknown transaction, TQ005 not decided yet.
CREATE OR REPLACE FUNCTION txnq.complete_txn_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    r record;
BEGIN
    SELECT t.state INTO v_state FROM txnq.transactions t
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s does not exist', p_tc_id, p_txn_seq);
    END IF;
    IF v_state IN ('COMMITTED', 'ABORTED') THEN
        RETURN v_state;
    END IF;
    FOR r IN
        SELECT tp.topic_id, tp.partition FROM txnq.txn_partitions tp
         WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq AND tp.marker_offset IS NULL
         ORDER BY tp.topic_id, tp.partition
    LOOP
        PERFORM txnq.complete_txn_partition_v1(p_tc_id, p_txn_seq, r.topic_id, r.partition);
    END LOOP;
    FOR r IN
        SELECT ts.topic_id, ts.partition, ts.subscription_id FROM txnq.txn_subscriptions ts
         WHERE ts.tc_id = p_tc_id AND ts.txn_seq = p_txn_seq AND NOT ts.done
         ORDER BY ts.topic_id, ts.partition, ts.subscription_id
    LOOP
        PERFORM txnq.complete_txn_subscription_v1(p_tc_id, p_txn_seq, r.topic_id, r.partition, r.subscription_id);
    END LOOP;
    RETURN txnq.finish_txn_v1(p_tc_id, p_txn_seq);
END;
$$;
