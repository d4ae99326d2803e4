-- txnq.claimed_messages_v2: the messages claim_v4 hands out again (redelivered,
-- or key_shared claims taken from the waiting ones), read from their entries.
-- Revision 0017: the body revision 0014 installed under the name
-- claimed_messages_v1, which already had revision 0013's body; under a name
-- of its own, so one name means one body (sql/README.md). claimed_messages_v1
-- is a thin wrapper of it now.
--
-- Parameters: topic_id; partitions[i], offsets[i], batch_indexes[i],
--   batch_sizes[i], delivered[i] describe claimed message i.
-- Returns the messages in (partition, offset, batch index) order, with the
--   columns of txnq.claim_v4 (redelivery_count = delivered - 1).
-- Plan: each entry is looked up once by its primary key (a LATERAL subquery)
--   and its arrays unnested together (subscripting detoasts the whole array
--   per message), behind an OFFSET 0 fence with the batch index as a plain
--   column; its messages are matched with the claims in a hash or merge join
--   on (partition, offset, batch index). (Revision 0014: without the fence
--   PostgreSQL 18 joined the claims to the entries first and then compared
--   every claim with every unnested message, ~1,000,000 comparisons.) Nested loops are off for this function alone (its SET
--   clause; the LATERAL ones stay, having no alternative): with the row
--   estimates of arrays PostgreSQL otherwise chose one, comparing every
--   message of the entries with every claim (1000 messages: ~1,000,000
--   comparisons). JIT is off with it: the cost penalty of the remaining
--   nested loops would make every call compile its plan (~200 ms).
-- Locks: none (the caller holds the claims).
CREATE OR REPLACE FUNCTION txnq.claimed_messages_v2(
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
LANGUAGE plpgsql STABLE SET enable_nestloop = off SET jit = off AS $$
#variable_conflict use_column
BEGIN
    IF coalesce(cardinality(p_offsets), 0) = 0 THEN
        RETURN;
    END IF;
    RETURN QUERY
    SELECT a.p, a.o, a.i, a.size, m.publish_time, m.producer_id, m.first_sequence + a.i,
           m.value, m.k, m.props, m.at, a.delivered - 1
      FROM (SELECT e.partition, e.entry_offset, (u.n - 1)::integer AS i, e.publish_time,
                   e.producer_id, e.first_sequence, u.value, u.k, u.props, u.at
              FROM (SELECT DISTINCT x.p, x.o FROM unnest(p_partitions, p_offsets) AS x(p, o)) AS d
             CROSS JOIN LATERAL (
                   SELECT e.partition, e.entry_offset, e.publish_time, e.producer_id,
                          e.first_sequence, e.payloads, e.keys, e.properties, e.event_times
                     FROM txnq.entries e
                    WHERE e.topic_id = p_topic_id AND e.partition = d.p AND e.entry_offset = d.o
                   OFFSET 0) AS e
             CROSS JOIN LATERAL unnest(e.payloads, e.keys, e.properties, e.event_times)
                                WITH ORDINALITY AS u(value, k, props, at, n)
            OFFSET 0) AS m
      JOIN unnest(p_partitions, p_offsets, p_batch_indexes, p_batch_sizes, p_delivered)
           AS a(p, o, i, size, delivered)
        ON a.p = m.partition AND a.o = m.entry_offset AND a.i = m.i
     ORDER BY a.p, a.o, a.i;
END;
$$;
