-- txnq.fetch_v2: superseded; kept for the clients of earlier revisions as a
-- thin wrapper of txnq.fetch_v4 (same signature and result). Made by revision
-- 0015 (functions/superseded_0015_consume.sql); revision 0017 moved it to a
-- file of its own, unchanged.
--
-- fetch_v2 reads from after_offset, below the mark-delete offset too; fetch_v3
-- (revision 0012) and fetch_v4 from the greater of the two.
CREATE OR REPLACE FUNCTION txnq.fetch_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_after_offset bigint,
    p_max_entries integer DEFAULT 100,
    p_max_bytes bigint DEFAULT 8388608
) RETURNS TABLE (
    entry_offset bigint,
    publish_time timestamptz,
    producer_id bigint,
    first_sequence bigint,
    message_count integer,
    payloads bytea[],
    keys bytea[],
    properties jsonb[],
    event_times timestamptz[],
    acked_batch_indexes integer[]
)
LANGUAGE sql STABLE AS $$
    SELECT * FROM txnq.fetch_v4(p_topic_id, p_partition, p_subscription_id, p_after_offset,
                                        p_max_entries, p_max_bytes, false)
$$;
