-- txnq.roll_entry_log_v3: start a new entry log (a new PostgreSQL partition of
-- txnq.entries) when the active one is full or old, or always when forced.
-- Revision 0023: roll_entry_log_v2 whose new table takes the compression of
-- txnq.entries' columns too (LIKE ... INCLUDING COMPRESSION): revision 0023
-- compresses an entry's arrays with lz4 where the server has it (pglz, the
-- default, cost a batch of 1,000 messages more than the rest of its append;
-- docs/benchmarks.md), and a table made LIKE another without it takes the
-- server's default_toast_compression. roll_entry_log_v2 (and through it v1)
-- is a wrapper of it.
--
-- Parameters: force (roll even if the active log is neither full nor old).
-- Returns the id of the active entry log after the call.
-- Runs as its owner (SECURITY DEFINER, search_path pinned, as every public
--   function after grant_roles_v2): an append of a txnq_client that finds the
--   log full rolls it.
-- Locks: a transaction-level advisory lock so one roll happens at a time (a
--   concurrent caller returns at once); SHARE UPDATE EXCLUSIVE on txnq.entries
--   for ATTACH PARTITION, which does not block appends or reads.
-- Invariants: the new table is created empty and attached, so no scan happens;
--   the sealed log stays readable until GC drops it; table names come from the
--   integer id only, never from user text.
-- Errors: TQ005 force is NULL; TQ018 when an untrusted caller forces a roll.
CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v3(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
DECLARE
    v_active integer;
    v_next integer;
    v_table text;
BEGIN
    IF p_force IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'roll_entry_log_v3: force must be true or false, not NULL',
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
