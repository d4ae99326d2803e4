-- txnq.roll_entry_log_v4: start a new entry log (a new PostgreSQL partition of
-- txnq.entries) when the active one is full or old, or always when forced.
-- Revision 0031: roll_entry_log_v3 that holds SHARE on txnq.entries until it
-- commits (see Locks), so no append can take the new log's id before its
-- partition is known to the appending session. roll_entry_log_v3 (and through
-- it v2 and v1) is a wrapper of it.
--
-- Parameters: force (roll even if the active log is neither full nor old).
-- Returns the id of the active entry log after the call.
-- Runs as its owner (SECURITY DEFINER, search_path pinned, as every public
--   function after grant_roles_v2): an append of a txnq_client that finds the
--   log full rolls it.
-- Locks: a transaction-level advisory lock so one roll happens at a time (a
--   concurrent caller returns at once); SHARE on txnq.entries (with ATTACH
--   PARTITION's SHARE UPDATE EXCLUSIVE) until the roll commits: appends wait
--   the few milliseconds of a roll, reads do not. Why: a committed roll is
--   visible to other sessions' snapshots a moment before PostgreSQL sends the
--   invalidation of txnq.entries' partitions, and ATTACH's own lock does not
--   keep an append out of that moment, so an append could read the new active
--   id and route its row with the partitions it knew before ("no partition of
--   relation entries found for row", seen in CI on PostgreSQL 18 and 15). An
--   append waiting for SHARE reads the partitions after the roll's
--   invalidation. A roll that cannot have SHARE within 200 ms (an application
--   transaction holds an append of its own open) changes nothing and returns
--   the active id: the next roll (the scheduler's, an append's hint) tries
--   again, and appends wait at most those 200 ms meanwhile.
-- Invariants: the new table is created empty and attached, so no scan happens;
--   the sealed log stays readable until GC drops it; table names come from the
--   integer id only, never from user text.
-- Errors: TQ005 force is NULL; TQ018 when an untrusted caller forces a roll.
CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v4(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
DECLARE
    v_active integer;
    v_next integer;
    v_table text;
    v_lock_timeout text := pg_catalog.current_setting('lock_timeout');
BEGIN
    IF p_force IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'roll_entry_log_v4: force must be true or false, not NULL',
            HINT = 'pass false to roll only a full or old entry log, true to roll it anyway';
    END IF;
    IF p_force AND NOT txnq.caller_is_trusted_v1(txnq.caller_v1()) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ018',
            MESSAGE = format('permission denied: role %s may not force an entry-log roll',
                             quote_ident(txnq.caller_v1())),
            HINT = 'the scheduler rolls the entry log by size and age; call it with force => false';
    END IF;
    SELECT c.active_entry_log_id INTO v_active FROM txnq.config c;
    IF NOT pg_try_advisory_xact_lock(hashtext('txnq.roll_entry_log')) THEN
        RETURN v_active;
    END IF;
    IF NOT p_force AND NOT txnq.entry_log_needs_roll_v1() THEN
        RETURN v_active;
    END IF;
    BEGIN
        PERFORM pg_catalog.set_config('lock_timeout', '200ms', true);
        LOCK TABLE txnq.entries IN SHARE MODE;
    EXCEPTION WHEN lock_not_available THEN
        RETURN v_active;
    END;
    PERFORM pg_catalog.set_config('lock_timeout', v_lock_timeout, true);
    SELECT max(l.entry_log_id) + 1 INTO v_next FROM txnq.entry_logs l;
    v_table := format('entries_%s', lpad(v_next::text, 6, '0'));
    EXECUTE format('CREATE TABLE txnq.%I (LIKE txnq.entries INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE '
                   'INCLUDING COMPRESSION)',
                   v_table);
    EXECUTE format('ALTER TABLE txnq.entries ATTACH PARTITION txnq.%I FOR VALUES IN (%s)', v_table, v_next);
    INSERT INTO txnq.entry_logs (entry_log_id, table_name, state) VALUES (v_next, v_table, 'ACTIVE');
    UPDATE txnq.entry_logs SET state = 'SEALED', sealed_at = now() WHERE entry_log_id = v_active;
    UPDATE txnq.config SET active_entry_log_id = v_next, updated_at = now();
    RETURN v_next;
END;
$$;
