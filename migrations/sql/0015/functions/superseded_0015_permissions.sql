-- Revision 0015 (permissions): the previous versions of functions whose
-- body changed become thin wrappers of the new ones, so clients of earlier
-- revisions get the new checks too. (The bodies of earlier revisions stay in
-- their own files, which replaying those revisions installs and downgrading
-- 0015 reinstalls; this file replaces them.)

-- roll_entry_log_v1 -> roll_entry_log_v2: forcing a roll is for trusted callers.
CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v1(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq.roll_entry_log_v2(p_force)
$$;
