-- txnq.sink_session_lock_v1: recovery holds a transactional id's row while it
-- settles and fences (FOR UPDATE, until the caller's transaction ends).
-- Revision 0015.
--
-- Parameters: transactional_id. Returns the epoch, none for an unknown id.
-- Locks: the transactional id's row, FOR UPDATE. Errors: none.
CREATE OR REPLACE FUNCTION txnq.sink_session_lock_v1(p_transactional_id text)
RETURNS SETOF integer
LANGUAGE sql AS $$
    SELECT i.epoch FROM txnq.transactional_ids i WHERE i.transactional_id = p_transactional_id FOR UPDATE;
$$;
