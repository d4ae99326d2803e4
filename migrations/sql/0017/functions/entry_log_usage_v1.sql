-- txnq.entry_log_usage_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.entry_log_usage_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_workers.sql);
-- revision 0017 moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.entry_log_usage_v1(
    p_entry_log_id integer,
    OUT entries bigint,
    OUT bytes bigint,
    OUT live_entries bigint,
    OUT live_bytes bigint
)
LANGUAGE sql STABLE AS $$
    SELECT u.entries, u.bytes, u.live_entries, u.live_bytes FROM txnq.entry_log_usage_v2(p_entry_log_id) u
$$;
