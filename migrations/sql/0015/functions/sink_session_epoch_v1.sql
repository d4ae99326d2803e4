-- txnq.sink_session_epoch_v1: the current session (epoch) of a transactional
-- id, with its row held FOR SHARE until the caller's commit (a newer session,
-- whose init_transactional_id_v1 updates the row, waits for it, or this one
-- sees the newer epoch). Revision 0015.
--
-- Parameters: transactional_id. Returns the epoch, none for an unknown id.
-- Locks: the transactional id's row, FOR SHARE, until the caller's transaction ends.
-- Errors: none.
CREATE OR REPLACE FUNCTION txnq.sink_session_epoch_v1(p_transactional_id text)
RETURNS SETOF integer
LANGUAGE sql AS $$
    SELECT i.epoch FROM txnq.transactional_ids i WHERE i.transactional_id = p_transactional_id FOR SHARE;
$$;
