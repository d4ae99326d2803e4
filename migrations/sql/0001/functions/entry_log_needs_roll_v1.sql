-- txnq.entry_log_needs_roll_v1: is the active entry log over ENTRY_LOG_MAX_BYTES
-- or older than ENTRY_LOG_MAX_AGE_SECONDS?
--
-- Takes no locks. Called by append_v1 on a sample of appends and by workers.
CREATE OR REPLACE FUNCTION txnq.entry_log_needs_roll_v1()
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT pg_relation_size(format('txnq.%I', l.table_name)::regclass) >= c.entry_log_max_bytes
           OR now() - l.created_at >= make_interval(secs => c.entry_log_max_age_seconds)
      FROM txnq.config c
      JOIN txnq.entry_logs l ON l.entry_log_id = c.active_entry_log_id;
$$;
