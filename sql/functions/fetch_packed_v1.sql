-- txnq.fetch_packed_v1: txnq.fetch_v4's entries with every column in a type
-- PL/Proxy 2.10 receives in binary, for a cluster proxy (docs/cluster.md).
-- Revision 0028. PL/Proxy receives a result in binary only when every
-- column is a plain scalar such as bigint or bytea; fetch_v4's bytea[] and
-- timestamptz columns made it receive every row as text and parse it (a
-- 2 MB fetch: 65-93 ms through the proxy against 2.3 ms on the shard). The
-- proxy's txnq.fetch_v4 calls this on the partition's shard and unpacks the
-- rows; this calls txnq.fetch_v4, so every check, permission and delivery
-- rule stays there. Called directly it is a read like fetch_v4 in another
-- encoding.
--
-- Parameters: fetch_v4's.
-- Returns fetch_v4's rows, in offset order, with: publish_time_us (the
--   publish time in microseconds since 1970-01-01 00:00 UTC, exact);
--   payload_bytes (the entry's payloads concatenated) and payload_lengths
--   (an integer[] literal: each payload's length, -1 for a NULL one) for
--   payloads; keys, properties, event_times and acked_batch_indexes as the
--   text of fetch_v4's arrays (NULL when those are; keys are NULL unless a
--   message has one).
-- Errors: fetch_v4's (TQ001, TQ005, TQ006, authorize_v1's).
CREATE OR REPLACE FUNCTION txnq.fetch_packed_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_after_offset bigint,
    p_max_entries integer DEFAULT 100,
    p_max_bytes bigint DEFAULT 8388608,
    p_from_mark_delete boolean DEFAULT true
) RETURNS TABLE (
    entry_offset bigint,
    publish_time_us bigint,
    producer_id bigint,
    first_sequence bigint,
    message_count integer,
    payload_bytes bytea,
    payload_lengths text,
    keys text,
    properties text,
    event_times text,
    acked_batch_indexes text
)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT f.entry_offset, (extract(epoch FROM f.publish_time) * 1000000)::bigint,
           f.producer_id, f.first_sequence, f.message_count, pk.packed_bytes, pk.packed_lengths,
           f.keys::text, f.properties::text, f.event_times::text, f.acked_batch_indexes::text
      FROM txnq.fetch_v4(p_topic_id, p_partition, p_subscription_id, p_after_offset, p_max_entries,
                         p_max_bytes, p_from_mark_delete) f
     CROSS JOIN LATERAL (
           -- One pass over the array in its order (a plain aggregate over
           -- unnest: no sort, which doubled the cost with ORDER BY).
           SELECT coalesce(string_agg(u.p, ''::bytea), ''::bytea) AS packed_bytes,
                  array_agg(coalesce(length(u.p), -1))::text AS packed_lengths
             FROM unnest(f.payloads) u(p)) pk
     ORDER BY f.entry_offset;
END $$;
