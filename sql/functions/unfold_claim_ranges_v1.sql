-- txnq.unfold_claim_ranges_v1: turn claim ranges of a shared subscription
-- into a claim row per message they still cover (revision 0027,
-- schema/0027_claim_ranges.sql): what happens when one of a range's
-- messages becomes an exception (a nack, an ack inside a transaction, a dead
-- letter, the range's ack-timeout deadline, its consumer's release, a cursor
-- moved past it from outside). The claim rows keep the range's holder and
-- deadline and count one delivery, so they behave exactly as the claims of a
-- first delivery did before revision 0027 (and then as any claim: released,
-- redelivered, marked by a transaction, dead-lettered, deleted).
--
-- Parameters: (topic_id, partition), subscription_id, first_offsets (the
--   ranges, by their first entry offset; unknown ones are ignored).
-- Returns how many claim rows were written.
-- Locks: the range rows (deleted); a caller that needs them unchanged
--   between its read and this call locks them first (FOR UPDATE).
-- Internal (grant_roles_v6): called by the data-path functions only, which
--   checked their arguments.
CREATE OR REPLACE FUNCTION txnq.unfold_claim_ranges_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_first_offsets bigint[]
) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer;
BEGIN
    WITH gone AS (
        DELETE FROM txnq.claim_ranges r
         WHERE r.topic_id = p_topic_id AND r.partition = p_partition
           AND r.subscription_id = p_subscription_id AND r.first_offset = ANY (p_first_offsets)
        RETURNING r.first_offset, r.consumer_id, r.visible_at, r.batch_sizes, r.acked_offsets, r.acked_indexes
    ), covered AS (
        SELECT g.first_offset AS f, g.first_offset + s.n - 1 AS o, i.i, s.size, g.consumer_id, g.visible_at
          FROM gone g
         CROSS JOIN LATERAL unnest(g.batch_sizes) WITH ORDINALITY AS s(size, n)
         CROSS JOIN LATERAL generate_series(0, s.size - 1) AS i(i)
    ), done AS (
        SELECT g.first_offset AS f, a.o, a.i
          FROM gone g CROSS JOIN LATERAL unnest(g.acked_offsets, g.acked_indexes) AS a(o, i)
    )
    INSERT INTO txnq.claims (topic_id, partition, subscription_id, entry_offset, batch_index, batch_size,
                             consumer_id, visible_at, delivered)
    SELECT p_topic_id, p_partition, p_subscription_id, c.o, c.i::integer, c.size, c.consumer_id, c.visible_at, 1
      FROM covered c
      LEFT JOIN done d ON d.f = c.f AND d.o = c.o AND d.i = c.i
     WHERE d.o IS NULL
    ON CONFLICT ON CONSTRAINT claims_pkey DO NOTHING;
    GET DIAGNOSTICS v_count = ROW_COUNT;
    RETURN v_count;
END;
$$;
