-- txnq.append_v2: superseded; kept for the clients of earlier revisions as a
-- thin wrapper of txnq.append_v3 (same signature and result). Made by revision
-- 0006 (functions/v2_over_v3.sql); revision 0017 moved it to a file of its
-- own, unchanged.
--
-- Revision 0006: append_v2 becomes a thin wrapper of append_v3, with the same
-- signature, so clients of revisions 0002-0003 (and, through append_v1, of
-- 0001) keep working during an upgrade and still honour the backlog quota.
-- (The body of revision 0002 stays in append_v2.sql, which replaying revision
-- 0002 installs and downgrading 0006 reinstalls; this file replaces it.)
CREATE OR REPLACE FUNCTION txnq.append_v2(
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
      FROM txnq.append_v3(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq) a
$$;
