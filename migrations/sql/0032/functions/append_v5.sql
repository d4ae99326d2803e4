-- txnq.append_v5: superseded by txnq.append_v6 (revision 0032), which added
-- p_decided (a batch written into the commit of its transaction, in the same
-- PostgreSQL transaction: docs/transactions.md); kept for the clients of
-- earlier revisions and for the shards' append_packed_v1 as a thin wrapper of
-- it (same signature and result, decided false): every check and fix of v6 is
-- its too. Revision 0019 made it (docs/benchmarks.md tells what it changed
-- from append_v4). txnq's own client calls append_v6: a wrapper in LANGUAGE
-- sql is planned anew on every call before PostgreSQL 18 (about 30 us of a
-- single send's ~150, bench/append_ab.py).
CREATE OR REPLACE FUNCTION txnq.append_v5(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_producer_epoch integer,
    p_first_sequence bigint,
    p_payloads bytea[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL,
    OUT entry_offset bigint,
    OUT publish_time timestamptz,
    OUT duplicate boolean,
    OUT roll_entry_log boolean
)
LANGUAGE sql AS $$
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      FROM txnq.append_v6(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq, false) a
$$;
