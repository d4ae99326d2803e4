-- txnq.gc_drop_entry_log_v1: entry-log GC's drop of a sealed entry log that
-- holds no live entry, for a scheduler that does not own txnq.entries (the
-- txnq_scheduler role, docs/security.md): runs as the owner. Revision 0015.
--
-- The owner's GC (txnq.lifecycle) detaches with DETACH PARTITION ...
-- CONCURRENTLY, which cannot run inside a function; this one detaches in its
-- own transaction, as compaction_swap_v1 does: ACCESS EXCLUSIVE on
-- txnq.entries for a moment, waited for at most lock_timeout (appends and
-- fetches queue behind it for that long at worst).
--
-- Parameters: entry_log_id (a SEALED entry log), lock_timeout (how long to
--   wait for txnq.entries; default 2s).
-- Returns what happened: 'dropped'; 'kept: live entries'; 'kept: busy, next
--   run' (the lock was not had in time); 'kept: a late append' (an append
--   reached it between the first look and the detach: nothing changed).
-- Locks: txnq.entries ACCESS EXCLUSIVE (DETACH), then the detached table
--   (DROP), until the caller commits.
-- Errors: TQ005 when the entry log is not sealed, or a concurrent detach of
--   it was interrupted (the owner finishes it: ALTER TABLE ... FINALIZE).
CREATE OR REPLACE FUNCTION txnq.gc_drop_entry_log_v1(p_entry_log_id integer, p_lock_timeout text DEFAULT '2s')
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_table text;
    v_state text;
    v_oid regclass;
    v_pending boolean;
BEGIN
    SELECT l.table_name, l.state INTO v_table, v_state FROM txnq.entry_logs l
     WHERE l.entry_log_id = p_entry_log_id;
    IF NOT FOUND OR v_state <> 'SEALED' OR v_table !~ '^entries_[0-9]+$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s is not a sealed entry log (state %s)',
                             coalesce(p_entry_log_id::text, 'NULL'), coalesce(v_state, 'none')),
            HINT = 'GC drops sealed entry logs only (txnq.entry_log_status)';
    END IF;
    v_oid := to_regclass(format('txnq.%I', v_table));
    IF v_oid IS NULL THEN  -- dropped by a run that died before recording it
        UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now() WHERE entry_log_id = p_entry_log_id;
        RETURN 'dropped';
    END IF;
    IF (SELECT u.live_entries FROM txnq.entry_log_usage_v1(p_entry_log_id) u) > 0 THEN
        RETURN 'kept: live entries';
    END IF;
    SELECT i.inhdetachpending INTO v_pending FROM pg_catalog.pg_inherits i WHERE i.inhrelid = v_oid;
    IF v_pending THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s: an interrupted concurrent detach of %s needs finishing',
                             p_entry_log_id, v_table),
            HINT = format('run the GC as the owner of txnq.entries (txnq_admin), or: '
                          'ALTER TABLE txnq.entries DETACH PARTITION txnq.%I FINALIZE', v_table);
    END IF;
    PERFORM set_config('lock_timeout', p_lock_timeout, true);
    BEGIN
        IF v_pending IS NOT NULL THEN  -- attached
            EXECUTE format('ALTER TABLE txnq.entries DETACH PARTITION txnq.%I', v_table);
        END IF;
        -- Detached in this transaction: no append can reach it any more. A
        -- second look catches one that came before the lock.
        IF (SELECT u.live_entries FROM txnq.entry_log_usage_v1(p_entry_log_id) u) > 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'late append';  -- undoes the detach
        END IF;
        EXECUTE format('DROP TABLE txnq.%I', v_table);
    EXCEPTION
        WHEN lock_not_available THEN
            RETURN 'kept: busy, next run';
        WHEN SQLSTATE 'TQ005' THEN
            RETURN 'kept: a late append';
    END;
    UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now() WHERE entry_log_id = p_entry_log_id;
    RETURN 'dropped';
END;
$$;
