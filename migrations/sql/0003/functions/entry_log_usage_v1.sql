-- txnq.entry_log_usage_v1: what an entry log (one PostgreSQL partition of
-- txnq.entries) still holds: its entries and payload bytes, and those of them
-- that are live (their ledger is not DELETED; an entry whose ledger row is
-- missing counts as live: GC never drops what it cannot account for).
--
-- Parameters: entry_log_id.
-- Returns one row: entries, bytes, live_entries, live_bytes (all 0 when the
--   log is empty). Reads the whole log: a GC-time call, never on the data path.
-- Safety: the table name comes from txnq.entry_logs (entries_NNNNNN, made from
--   an integer by roll_entry_log_v1), quoted with %I.
CREATE OR REPLACE FUNCTION txnq.entry_log_usage_v1(
    p_entry_log_id integer,
    OUT entries bigint,
    OUT bytes bigint,
    OUT live_entries bigint,
    OUT live_bytes bigint
)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_table text;
BEGIN
    SELECT l.table_name INTO v_table FROM txnq.entry_logs l WHERE l.entry_log_id = p_entry_log_id;
    IF NOT FOUND OR v_table !~ '^entries_[0-9]+$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = format('entry log %s does not exist', p_entry_log_id);
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
