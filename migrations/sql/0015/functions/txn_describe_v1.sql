-- txnq.txn_describe_v1: one transaction of txnq.transaction_status, for its
-- own role (or a trusted caller). Revision 0015.
--
-- Parameters: (tc_id, txn_seq). Returns the row, none for an unknown one.
-- Locks: none. Errors: TQ018 for another role's transaction.
CREATE OR REPLACE FUNCTION txnq.txn_describe_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS SETOF txnq.transaction_status
LANGUAGE sql STABLE AS $$
    SELECT txnq.authorize_txn_v1(p_tc_id, p_txn_seq);
    SELECT s.* FROM txnq.transaction_status s WHERE s.tc_id = p_tc_id AND s.txn_seq = p_txn_seq;
$$;
