-- txnq.authorize_txn_v1: may the calling role write into, acknowledge in, or
-- end this transaction? Only the role that opened it (transactions.opened_by,
-- or a role that has its privileges), or a trusted caller
-- (txnq.caller_is_trusted_v1: admins and the worker roles, which end and
-- complete every role's transactions). Every public function that takes
-- (txn_tc, txn_seq) calls it. Transactions opened before revision 0015 have
-- no opener recorded and stay open to every role allowed to call the
-- function. Revision 0015 (docs/security.md).
--
-- Parameters: (tc_id, txn_seq) of the transaction (checked to exist by the
--   caller's txn_require_open_v1 / end logic: an unknown one passes here).
-- Returns nothing.
-- Locks: none (reads the transaction row by its primary key).
-- Errors: TQ018 when the transaction belongs to another role.
CREATE OR REPLACE FUNCTION txnq.authorize_txn_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
    v_caller name := txnq.caller_v1();
    v_opened_by oid;
BEGIN
    IF txnq.caller_is_trusted_v1(v_caller) THEN
        RETURN;
    END IF;
    SELECT t.opened_by INTO v_opened_by
      FROM txnq.transactions t WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq;
    IF v_opened_by IS NULL OR pg_catalog.pg_has_role(v_caller, v_opened_by, 'USAGE') THEN
        RETURN;
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'TQ018',
        MESSAGE = format('permission denied: transaction %s:%s belongs to role %s, not to %s',
                         p_tc_id, p_txn_seq,
                         quote_ident(pg_catalog.pg_get_userbyid(v_opened_by)), quote_ident(v_caller)),
        HINT = 'only the role that opened a transaction (or a txnq admin) may write into, commit or abort it';
END;
$$;
