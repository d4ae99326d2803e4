-- txnq.roll_entry_log_v1: superseded; kept for the clients of earlier
-- revisions as a thin wrapper of txnq.roll_entry_log_v2 (same signature and
-- result). Made by revision 0015 (functions/superseded_0015_permissions.sql);
-- revision 0017 moved it to a file of its own, unchanged.
--
-- roll_entry_log_v1 -> roll_entry_log_v2: forcing a roll is for trusted callers.
CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v1(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.roll_entry_log_v2(p_force)
$$;
