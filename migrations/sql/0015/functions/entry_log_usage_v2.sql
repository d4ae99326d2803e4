-- txnq.entry_log_usage_v2: what an entry log (one PostgreSQL partition of
-- txnq.entries) still holds: its entries and payload bytes, and those of them
-- that are live (their ledger is not DELETED; an entry whose ledger row is
-- missing counts as live: GC never drops what it cannot account for).
-- Revision 0015: entry_log_usage_v1 with its argument checked (a dropped log
-- failed with a raw "relation does not exist"); entry_log_usage_v1 is a
-- wrapper of it.
--
-- Parameters: entry_log_id.
-- Returns one row: entries, bytes, live_entries, live_bytes (all 0 when the
--   log is empty). Reads the whole log: a GC-time call, never on the data path.
-- Safety: the table name comes from txnq.entry_logs (entries_NNNNNN, made from
--   an integer by roll_entry_log_v2), quoted with %I.
-- Errors: TQ005 the id is NULL, names no entry log, or one whose table was
--   dropped (nothing left to measure).
CREATE OR REPLACE FUNCTION txnq.entry_log_usage_v2(
    p_entry_log_id integer,
    OUT entries bigint,
    OUT bytes bigint,
    OUT live_entries bigint,
    OUT live_bytes bigint
)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_table text;
    v_state text;
BEGIN
    SELECT l.table_name, l.state INTO v_table, v_state FROM txnq.entry_logs l
     WHERE l.entry_log_id = p_entry_log_id;
    IF NOT FOUND OR v_table !~ '^entries_[0-9]+$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s does not exist', coalesce(p_entry_log_id::text, 'NULL')),
            HINT = 'pass an entry_log_id of txnq.entry_logs';
    END IF;
    IF v_state = 'DROPPED' OR to_regclass(format('txnq.%I', v_table)) IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('entry log %s was dropped: its table %s holds nothing any more',
                             p_entry_log_id, v_table),
            HINT = 'measure the entry logs that are not DROPPED (txnq.entry_log_status)';
    END IF;
    EXECUTE format(
        'SELECT count(*), coalesce(sum(e.payload_bytes), 0),
                count(*) FILTER (WHERE dl.ledger_id IS NULL),
                coalesce(sum(e.payload_bytes) FILTER (WHERE dl.ledger_id IS NULL), 0)
           FROM txnq.%I e
           LEFT JOIN txnq.ledgers dl ON dl.topic_id = e.topic_id AND dl.partition = e.partition
                                    AND dl.ledger_id = e.ledger_id AND dl.state = ''DELETED''',
        v_table)
      INTO entries, bytes, live_entries, live_bytes;
END;
$$;
