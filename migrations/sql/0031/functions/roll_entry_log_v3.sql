-- txnq.roll_entry_log_v3: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.roll_entry_log_v4 (same signature and
-- result). Revision 0031 (its body since revision 0023 is v4's, less the lock).
--
-- roll_entry_log_v3 -> roll_entry_log_v4: the roll holds SHARE on
-- txnq.entries until it commits, so an append never routes a row with the
-- partitions it knew before the roll.
CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v3(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, txnq, pg_temp AS $$
    SELECT txnq.roll_entry_log_v4(p_force)
$$;
