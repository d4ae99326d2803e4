-- txnq.authorize_txn_v1: may the calling role write into, acknowledge in, or
-- end this transaction? Only the role that opened it (or an admin) may.
-- Every public function that takes (txn_tc, txn_seq) calls it. Revision 0015.
--
-- Parameters: (tc_id, txn_seq) of the transaction (checked to exist by the
--   caller's txn_require_open_v1 / end logic).
-- Returns nothing.
-- Errors: TQ018 when the transaction belongs to another role.
-- PERMISSIONS WORK IN PROGRESS (see authorize_v1).
CREATE OR REPLACE FUNCTION txnq.authorize_txn_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN;
END;
$$;
