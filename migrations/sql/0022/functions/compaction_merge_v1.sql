-- txnq.compaction_merge_v1: merge one sealed entry log into another (revision
-- 0022): the live rows of p_source move into p_target and p_source is
-- dropped, in ONE transaction. Compaction turns one log into one; with a
-- slow subscription holding a little of many logs, their count never
-- shrank. GC (txnq/lifecycle/entry_logs.py) merges the small sealed logs
-- of a run into one this way, within ENTRY_LOG_MAX_BYTES (BookKeeper's
-- compaction writes the live entries of many entry logs into one).
--
-- Why one transaction, where compaction copies into a detached table in
-- many: the rows land in a log that readers already see, so they must
-- become visible in the same commit that hides the source. A statement runs
-- before that commit (it sees the source's rows) or after it (the target's),
-- never both, never neither -- as compaction_swap_v2 guarantees for its
-- swap. The copy holds back vacuum for its length, so GC merges only logs
-- whose live payload is small (txnq.lifecycle.entry_logs.MERGE_MAX_LIVE_BYTES).
--
-- Parameters: target and source (two different SEALED entry logs, both
--   attached, neither in a compaction), lock_timeout (1 ms to 60 s).
-- Returns moved_entries, moved_bytes (payload bytes of the live rows moved).
-- Locks: both entry_logs rows; ROW EXCLUSIVE on the target's table for the
--   copy; ACCESS EXCLUSIVE on txnq.entries for the detach (running statements
--   on entries finish first and new ones wait, at most p_lock_timeout; then
--   TQ020 and nothing changed), held only until the caller commits.
-- Invariants: every live row of the source is in the target when the source
--   is dropped (rows that arrive after the copy, which a log sealed past the
--   grace period cannot get, are copied again under the lock); offsets are
--   unique per partition, so a row never meets itself in the target.
-- Errors: TQ005 a log that is not a sealed, attached log outside a
--   compaction, the same log twice, a lock timeout out of range; TQ020 busy.
CREATE OR REPLACE FUNCTION txnq.compaction_merge_v1(
    p_target integer, p_source integer, p_lock_timeout text DEFAULT '2s',
    OUT moved_entries bigint, OUT moved_bytes bigint
)
LANGUAGE plpgsql AS $$
DECLARE
    v_target_table text;
    v_source_table text;
    v_ok integer;
    v_timeout_ms bigint;
    v_late bigint;
    v_late_bytes bigint;
    v_copy text;
BEGIN
    IF p_target IS NULL OR p_source IS NULL OR p_target = p_source THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('compaction_merge_v1: target (%s) and source (%s) must be two different entry logs',
                             coalesce(p_target::text, 'NULL'), coalesce(p_source::text, 'NULL')),
            HINT = 'pass the entry_log_id of two SEALED logs (txnq.entry_log_status)';
    END IF;
    -- Both rows locked in id order (GC runs one at a time; this orders any other caller).
    SELECT count(*) INTO v_ok FROM (
        SELECT 1 FROM txnq.entry_logs l
         WHERE l.entry_log_id IN (p_target, p_source) AND l.state = 'SEALED'
           AND NOT EXISTS (SELECT 1 FROM txnq.entry_logs c
                            WHERE c.state = 'COMPACTING' AND c.compacted_from = l.entry_log_id)
           AND EXISTS (SELECT 1 FROM pg_inherits i
                        WHERE i.inhparent = 'txnq.entries'::regclass AND NOT i.inhdetachpending
                          AND i.inhrelid = to_regclass(format('txnq.%I', l.table_name)))
         ORDER BY l.entry_log_id
           FOR UPDATE OF l) AS x;
    IF v_ok <> 2 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry logs %s and %s must both be sealed, attached and outside a compaction',
                             p_target, p_source),
            HINT = 'see txnq.entry_log_status; GC picks the logs it merges itself';
    END IF;
    SELECT l.table_name INTO v_target_table FROM txnq.entry_logs l WHERE l.entry_log_id = p_target;
    SELECT l.table_name INTO v_source_table FROM txnq.entry_logs l WHERE l.entry_log_id = p_source;
    IF v_target_table !~ '^entries_[0-9]+$' OR v_source_table !~ '^entries_[0-9]+$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry logs %s and %s have unexpected tables', p_target, p_source);
    END IF;
    IF p_lock_timeout IS NOT NULL THEN
        BEGIN
            PERFORM set_config('lock_timeout', p_lock_timeout, true);
            SELECT s.setting::bigint INTO v_timeout_ms FROM pg_settings s WHERE s.name = 'lock_timeout';
        EXCEPTION WHEN invalid_parameter_value THEN
            v_timeout_ms := NULL;
        END;
    END IF;
    IF v_timeout_ms IS NULL OR v_timeout_ms < 1 OR v_timeout_ms > 60000 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('compaction_merge_v1: the lock timeout must be from 1ms to 60s, not %L',
                             p_lock_timeout),
            HINT = 'pass a duration such as ''2s'': appends and fetches queue behind the detach while it waits';
    END IF;
    -- The live rows (their ledger is not DELETED; a row without a ledger row
    -- counts as live) the target does not hold yet.
    v_copy := format(
        'WITH moved AS (
             INSERT INTO txnq.%2$I (%3$s, entry_log_id)
             SELECT %4$s, %5$s FROM txnq.%1$I e
              WHERE NOT EXISTS (SELECT 1 FROM txnq.ledgers dl
                                 WHERE dl.topic_id = e.topic_id AND dl.partition = e.partition
                                   AND dl.ledger_id = e.ledger_id AND dl.state = ''DELETED'')
                AND NOT EXISTS (SELECT 1 FROM txnq.%2$I t
                                 WHERE t.topic_id = e.topic_id AND t.partition = e.partition
                                   AND t.entry_offset = e.entry_offset)
             RETURNING payload_bytes)
         SELECT count(*), coalesce(sum(payload_bytes), 0) FROM moved',
        v_source_table, v_target_table, txnq.compaction_columns_v1(''), txnq.compaction_columns_v1('e.'),
        p_target);
    EXECUTE v_copy INTO moved_entries, moved_bytes;
    BEGIN
        EXECUTE format('ALTER TABLE txnq.entries DETACH PARTITION txnq.%I', v_source_table);
    EXCEPTION WHEN lock_not_available THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ020',
            MESSAGE = format('entry log %s is busy (readers or appends held txnq.entries for %s)',
                             p_source, p_lock_timeout),
            HINT = 'nothing was merged; the next GC run tries again';
    END;
    -- Detached: nothing reaches the source now; what came since the copy goes too.
    EXECUTE v_copy INTO v_late, v_late_bytes;
    moved_entries := moved_entries + v_late;
    moved_bytes := moved_bytes + v_late_bytes;
    EXECUTE format('DROP TABLE txnq.%I', v_source_table);
    UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now() WHERE entry_log_id = p_source;
END;
$$;
