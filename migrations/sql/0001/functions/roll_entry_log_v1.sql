-- txnq.roll_entry_log_v1: start a new entry log (a new PostgreSQL partition of
-- txnq.entries) when the active one is full or old, or always when forced.
--
-- Parameters: force (roll even if the active log is neither full nor old).
-- Returns the id of the active entry log after the call.
-- Locks: a transaction-level advisory lock so one roll happens at a time (a
--   concurrent caller returns at once); SHARE UPDATE EXCLUSIVE on txnq.entries
--   for ATTACH PARTITION, which does not block appends or reads.
-- Invariants: the new table is created empty and attached, so no scan happens;
--   the sealed log stays readable until GC drops it; table names come from the
--   integer id only, never from user text.
CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v1(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_active integer;
    v_next integer;
    v_table text;
BEGIN
    SELECT c.active_entry_log_id INTO v_active FROM txnq.config c;
    IF NOT pg_try_advisory_xact_lock(hashtext('txnq.roll_entry_log')) THEN
        RETURN v_active;
    END IF;
    IF NOT p_force AND NOT txnq.entry_log_needs_roll_v1() THEN
        RETURN v_active;
    END IF;
    SELECT max(l.entry_log_id) + 1 INTO v_next FROM txnq.entry_logs l;
    v_table := format('entries_%s', lpad(v_next::text, 6, '0'));
    EXECUTE format('CREATE TABLE txnq.%I (LIKE txnq.entries INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING STORAGE)',
                   v_table);
    EXECUTE format('ALTER TABLE txnq.entries ATTACH PARTITION txnq.%I FOR VALUES IN (%s)', v_table, v_next);
    INSERT INTO txnq.entry_logs (entry_log_id, table_name, state) VALUES (v_next, v_table, 'ACTIVE');
    UPDATE txnq.entry_logs SET state = 'SEALED', sealed_at = now() WHERE entry_log_id = v_active;
    UPDATE txnq.config SET active_entry_log_id = v_next, updated_at = now();
    RETURN v_next;
END;
$$;
