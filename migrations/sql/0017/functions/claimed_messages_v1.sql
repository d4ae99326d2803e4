-- txnq.claimed_messages_v1: superseded by txnq.claimed_messages_v2 (revision
-- 0017), a thin wrapper of it with the same signature and result. Revision
-- 0013 installed a body under this name and revision 0014 another one, so a
-- database migrated before 0014 ran different code from a fresh one; revision
-- 0017 gave 0014's body its own name. Internal (called only by txnq
-- functions: claim_v2 and claim_v3 until revision 0017).
CREATE OR REPLACE FUNCTION txnq.claimed_messages_v1(
    p_topic_id integer,
    p_partitions integer[],
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_batch_sizes integer[],
    p_delivered integer[]
) RETURNS TABLE (
    partition integer,
    entry_offset bigint,
    batch_index integer,
    batch_size integer,
    publish_time timestamptz,
    producer_id bigint,
    sequence bigint,
    payload bytea,
    key bytea,
    properties jsonb,
    event_time timestamptz,
    redelivery_count integer
)
LANGUAGE sql STABLE AS $$
    SELECT * FROM txnq.claimed_messages_v2(p_topic_id, p_partitions, p_offsets, p_batch_indexes,
                                           p_batch_sizes, p_delivered)
$$;
