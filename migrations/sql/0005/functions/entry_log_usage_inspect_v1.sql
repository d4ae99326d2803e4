-- txnq.entry_log_usage_inspect_v1: txnq.entry_log_usage_v1 for the inspection
-- view txnq.entry_log_status, callable by the txnq_reader role.
--
-- Parameters: entry_log_id.
-- Returns one row: entries, bytes, live_entries, live_bytes; all NULL when the
--   log's table is not there (DROPPED, or dropped by a GC that died before
--   recording it), instead of the error entry_log_usage_v1 raises.
-- Why SECURITY DEFINER: a view reads its tables with its owner's privileges,
--   but the functions it calls run with the caller's, and txnq_reader may not
--   read txnq.entries. This function runs as its owner (the role that migrated)
--   and returns counts only, never an entry; EXECUTE is revoked from PUBLIC and
--   granted to txnq_reader (see schema/0005_inspection.sql). search_path is
--   pinned so a caller's objects cannot stand in for pg_catalog's.
-- Locks: ACCESS SHARE on the entry log's table while it reads it (a whole-log
--   scan): a concurrent GC's DROP waits for it. An inspection call.
CREATE OR REPLACE FUNCTION txnq.entry_log_usage_inspect_v1(
    p_entry_log_id integer,
    OUT entries bigint,
    OUT bytes bigint,
    OUT live_entries bigint,
    OUT live_bytes bigint
)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    v_table text;
BEGIN
    SELECT l.table_name INTO v_table FROM txnq.entry_logs l
     WHERE l.entry_log_id = p_entry_log_id AND l.state <> 'DROPPED';
    IF NOT FOUND OR v_table !~ '^entries_[0-9]+$'
       OR to_regclass(format('txnq.%I', v_table)) IS NULL THEN
        RETURN;
    END IF;
    SELECT u.entries, u.bytes, u.live_entries, u.live_bytes
      INTO entries, bytes, live_entries, live_bytes
      FROM txnq.entry_log_usage_v1(p_entry_log_id) u;
END;
$$;
