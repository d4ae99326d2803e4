-- txnq.roll_entry_log_v2: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.roll_entry_log_v3 (same signature and
-- result). Revision 0023.
--
-- roll_entry_log_v2 -> roll_entry_log_v3: a new entry log takes the
-- compression of txnq.entries' columns (lz4 where the server has it).
CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v2(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
    SELECT txnq.roll_entry_log_v3(p_force)
$$;
