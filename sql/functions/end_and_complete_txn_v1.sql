-- txnq.end_and_complete_txn_v1: decide a transaction and run its whole marker
-- phase in one call (protocol steps 5 to 7): what a client's commit() and
-- abort() run, in one PostgreSQL transaction and one WAL flush.
-- Revision 0029: until now the client ran end_txn_v3 and complete_txn_v2 in
-- one statement. Together they locked and read the transaction row three
-- times, checked the caller twice, wrote the row twice (COMMITTING, then
-- COMMITTED) and re-read the decision for every partition and subscription
-- (complete_txn_partition_v2, complete_txn_subscription_v2, finish_txn_v2):
-- 245 us of server time for a one-partition commit, measured with
-- track_functions (docs/benchmarks.md). This function does the same work
-- once: one lock of the transaction row, one check of the caller, each
-- partition's marker and each subscription's acks as those functions do
-- them, one UPDATE of the row to its final state and one INSERT of its log
-- rows. Its effects are exactly end_txn_v3's followed by complete_txn_v2's:
-- the same rows, markers, cursors and transaction log (the decision row,
-- then the final one). end_txn_v3 and complete_txn_v2 stay for the split
-- path (commit(wait=False), the coordinator workers, the admin).
--
-- Parameters: (tc_id, txn_seq), commit (true: commit, false: abort), reason
--   ('client' or 'admin'); none of them NULL.
-- Returns one row: state and reason as the decision left them (as end_txn_v3
--   returns), and final_state, COMMITTED or ABORTED (as complete_txn_v2
--   returns). Idempotent: a transaction decided already (by an earlier call,
--   the timeout job or an admin) is not decided again; its marker phase is
--   finished, and state and reason say the decision that stands. A commit
--   past the transaction's timeout decides ABORTING (reason timeout); a
--   commit of a transaction opened in another server incarnation decides
--   ABORTING (reason crash): see end_txn_v3.
-- Permissions: txnq.authorize_txn_v1 once the transaction is found, before
--   anything is changed.
-- Locks: the transaction row FOR UPDATE first (waits for the appends and acks
--   in flight, which hold it FOR SHARE); then each unmarked partition of the
--   transaction in (topic, partition) order, its txn_partitions row before
--   its head row, as complete_txn_partition_v2 does, so a coordinator worker
--   marking the same partition is waited for and its marker kept; then each
--   unfinished subscription, its txn_subscriptions row before its cursor.
-- Errors: TQ005 NULL argument or bad reason, TQ014 unknown transaction, TQ018
--   not permitted.
CREATE OR REPLACE FUNCTION txnq.end_and_complete_txn_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_commit boolean,
    p_reason text DEFAULT 'client',
    OUT state text,
    OUT reason text,
    OUT final_state text
)
LANGUAGE plpgsql AS $$
DECLARE
    v_timeout_at timestamptz;
    v_incarnation uuid;
    v_decided boolean := false;
    v_oldest_ongoing bigint;
    v_next_offset bigint;
    v_ledger_id bigint;
    v_publish_time timestamptz;
    v_acks record;
    r record;
BEGIN
    IF p_tc_id IS NULL OR p_txn_seq IS NULL OR p_commit IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('end_and_complete_txn_v1: tc_id (%s), txn_seq (%s) and commit (%s) must not be NULL',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL'),
                             coalesce(p_commit::text, 'NULL')),
            HINT = 'pass the transaction id and commit true (commit) or false (abort); nothing was decided';
    END IF;
    IF p_reason IS NULL OR p_reason NOT IN ('client', 'admin') THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('end_and_complete_txn_v1: reason must be client or admin, not %s',
                             coalesce(quote_literal(p_reason), 'NULL')),
            HINT = 'a client ends its transactions with reason client; nothing was decided';
    END IF;
    SELECT t.state, t.reason, t.timeout_at, t.incarnation INTO state, reason, v_timeout_at, v_incarnation
      FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq
       FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ014',
            MESSAGE = format('transaction %s:%s does not exist', p_tc_id, p_txn_seq),
            HINT = 'pass the id txnq.open_txn_v3 returned; nothing was decided';
    END IF;
    PERFORM txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    final_state := state;
    IF state IN ('COMMITTED', 'ABORTED') THEN
        RETURN;
    END IF;
    IF state = 'OPEN' THEN
        -- The decision, as end_txn_v3 makes it.
        v_decided := true;
        IF p_commit AND v_timeout_at <= now() THEN
            state := 'ABORTING';
            reason := 'timeout';
        ELSIF p_commit AND v_incarnation IS NOT NULL
              AND v_incarnation IS DISTINCT FROM (SELECT i.incarnation FROM txnq.server_incarnation i) THEN
            state := 'ABORTING';
            reason := 'crash';
        ELSE
            state := CASE WHEN p_commit THEN 'COMMITTING' ELSE 'ABORTING' END;
            reason := p_reason;
        END IF;
    END IF;

    -- The final state and the log rows first: within this one PostgreSQL
    -- transaction nobody else sees the row before the markers, and the
    -- trigger on pending_acks (claims_after_pending_acks_v1) reads the
    -- decision from it. Every partition gets its marker and every
    -- subscription is done below, and the row's lock keeps new ones out, so
    -- the transaction is finished, as finish_txn_v2 would record it.
    final_state := CASE WHEN state = 'COMMITTING' THEN 'COMMITTED' ELSE 'ABORTED' END;
    UPDATE txnq.transactions t
       SET state = end_and_complete_txn_v1.final_state, reason = end_and_complete_txn_v1.reason,
           decided_at = CASE WHEN v_decided THEN now() ELSE t.decided_at END, completed_at = now()
     WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    INSERT INTO txnq.txn_log (tc_id, txn_seq, state, reason)
    SELECT p_tc_id, p_txn_seq, s.logged, end_and_complete_txn_v1.reason
      FROM unnest(CASE WHEN v_decided THEN ARRAY[state, final_state] ELSE ARRAY[final_state] END)
           WITH ORDINALITY AS s(logged, n)
     ORDER BY s.n;

    -- Each partition's marker, as complete_txn_partition_v2 writes it. A
    -- row a coordinator worker marked meanwhile is skipped (FOR UPDATE
    -- re-checks marker_offset IS NULL once that worker commits).
    FOR r IN
        SELECT tp.topic_id, tp.partition, tp.first_offset FROM txnq.txn_partitions tp
         WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq AND tp.marker_offset IS NULL
         ORDER BY tp.topic_id, tp.partition
           FOR UPDATE
    LOOP
        -- The head row lock first, then the transaction buffer it guards.
        PERFORM 1 FROM txnq.partitions h WHERE h.topic_id = r.topic_id AND h.partition = r.partition
           FOR UPDATE;
        DELETE FROM txnq.txn_buffer_ongoing o
         WHERE o.topic_id = r.topic_id AND o.partition = r.partition
           AND o.tc_id = p_tc_id AND o.txn_seq = p_txn_seq;
        SELECT min(o.first_offset) INTO v_oldest_ongoing FROM txnq.txn_buffer_ongoing o
         WHERE o.topic_id = r.topic_id AND o.partition = r.partition;
        UPDATE txnq.partitions h
           SET next_offset = h.next_offset + 1,
               ongoing_txns = greatest(h.ongoing_txns - 1, 0),
               max_read_offset = greatest(h.max_read_offset, coalesce(v_oldest_ongoing - 1, h.next_offset)),
               last_publish_time = greatest(clock_timestamp(), h.last_publish_time)
         WHERE h.topic_id = r.topic_id AND h.partition = r.partition
        RETURNING h.next_offset, h.ledger_id, h.last_publish_time
             INTO v_next_offset, v_ledger_id, v_publish_time;
        IF NOT FOUND THEN
            -- The topic was deleted under the transaction: nothing to mark.
            UPDATE txnq.txn_partitions tp SET marker_offset = -1
             WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq
               AND tp.topic_id = r.topic_id AND tp.partition = r.partition;
            CONTINUE;
        END IF;
        INSERT INTO txnq.entries (topic_id, partition, entry_offset, entry_log_id, ledger_id, publish_time,
                                  message_count, payload_bytes, payloads, txn_tc, txn_seq, marker)
        SELECT r.topic_id, r.partition, v_next_offset - 1, c.active_entry_log_id, v_ledger_id,
               v_publish_time, 0, 0, '{}', p_tc_id, p_txn_seq,
               CASE WHEN state = 'COMMITTING' THEN 1 ELSE 2 END
          FROM txnq.config c;
        IF state = 'ABORTING' THEN
            INSERT INTO txnq.aborted_txns (topic_id, partition, tc_id, txn_seq, first_offset, marker_offset)
            VALUES (r.topic_id, r.partition, p_tc_id, p_txn_seq, r.first_offset, v_next_offset - 1)
            ON CONFLICT DO NOTHING;
        END IF;
        UPDATE txnq.txn_partitions tp SET marker_offset = v_next_offset - 1
         WHERE tp.tc_id = p_tc_id AND tp.txn_seq = p_txn_seq
           AND tp.topic_id = r.topic_id AND tp.partition = r.partition;
        -- The max read offset moved: wake consumers waiting on the partition.
        DELETE FROM txnq.consumer_waiters w WHERE w.topic_id = r.topic_id AND w.partition = r.partition;
        IF FOUND THEN
            PERFORM pg_notify('txnq_topic_' || r.topic_id, r.partition::text);
        END IF;
    END LOOP;

    -- Each subscription's acknowledgements, as complete_txn_subscription_v2
    -- applies (commit) or releases (abort) them.
    FOR r IN
        SELECT ts.topic_id, ts.partition, ts.subscription_id FROM txnq.txn_subscriptions ts
         WHERE ts.tc_id = p_tc_id AND ts.txn_seq = p_txn_seq AND NOT ts.done
         ORDER BY ts.topic_id, ts.partition, ts.subscription_id
           FOR UPDATE
    LOOP
        PERFORM 1 FROM txnq.cursors c
         WHERE c.topic_id = r.topic_id AND c.partition = r.partition AND c.subscription_id = r.subscription_id
           FOR UPDATE;
        IF FOUND THEN
            IF state = 'COMMITTING' THEN
                SELECT max(pa.entry_offset) FILTER (WHERE pa.cumulative) AS cumulative,
                       coalesce(array_agg(pa.entry_offset) FILTER (WHERE NOT pa.cumulative), '{}') AS offsets,
                       coalesce(array_agg(pa.batch_index) FILTER (WHERE NOT pa.cumulative), '{}') AS indexes,
                       coalesce(array_agg(pa.batch_size) FILTER (WHERE NOT pa.cumulative), '{}') AS sizes
                  INTO v_acks
                  FROM txnq.pending_acks pa
                 WHERE pa.topic_id = r.topic_id AND pa.partition = r.partition
                   AND pa.subscription_id = r.subscription_id AND pa.tc_id = p_tc_id AND pa.txn_seq = p_txn_seq;
                PERFORM txnq.apply_acks_v2(r.topic_id, r.partition, r.subscription_id, v_acks.cumulative,
                                           v_acks.offsets, v_acks.indexes, v_acks.sizes);
            ELSE
                UPDATE txnq.cursors c SET generation = c.generation + 1, updated_at = now()
                 WHERE c.topic_id = r.topic_id AND c.partition = r.partition
                   AND c.subscription_id = r.subscription_id;
            END IF;
        END IF;
        DELETE FROM txnq.pending_acks pa
         WHERE pa.topic_id = r.topic_id AND pa.partition = r.partition
           AND pa.subscription_id = r.subscription_id AND pa.tc_id = p_tc_id AND pa.txn_seq = p_txn_seq;
        UPDATE txnq.txn_subscriptions ts SET done = true
         WHERE ts.tc_id = p_tc_id AND ts.txn_seq = p_txn_seq AND ts.topic_id = r.topic_id
           AND ts.partition = r.partition AND ts.subscription_id = r.subscription_id;
    END LOOP;
END;
$$;
