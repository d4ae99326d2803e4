-- txnq.open_txn_v2: superseded by revision 0026; kept for the clients of
-- earlier revisions (and the Spark sink) as a thin wrapper of
-- txnq.open_txn_v3 that opens durably (same signature and result).
CREATE OR REPLACE FUNCTION txnq.open_txn_v2(
    p_tc_id integer,
    p_timeout_seconds double precision,
    OUT tc_id integer,
    OUT txn_seq bigint,
    OUT timeout_at timestamptz
)
LANGUAGE sql AS $$
    SELECT o.tc_id, o.txn_seq, o.timeout_at FROM txnq.open_txn_v3(p_tc_id, p_timeout_seconds, false) o
$$;
