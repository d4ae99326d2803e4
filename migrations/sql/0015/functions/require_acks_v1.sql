-- txnq.require_acks_v1: the check of a list of individual acknowledgements
-- of one partition against the entries they name (ack_v3, stage_ack_v2).
-- Revision 0015. A message id names an entry and a message of it; one that
-- names no message of the entry must not be taken for the whole entry (or
-- count towards it): messages never delivered would be marked consumed.
--
-- Parameters: what (the caller's name, for messages), (topic_id, partition),
--   mark_delete (the cursor's mark-delete offset: an offset at or below it may
--   name an entry retention has deleted), offsets[i], batch_indexes[i] (-1:
--   the whole entry; else 0 .. message_count - 1), batch_sizes[i] (the entry's
--   message_count, or NULL: looked up). The caller has checked the partition,
--   and the offsets against what the subscription can read (the head).
-- Returns batch_indexes and batch_sizes as acknowledged: sizes from the
--   entries, and -1 (the whole entry) for a message of a one-message entry.
-- Locks: none (reads each entry named once, by primary key; when sizes must
--   be looked up, a run of offsets by one index range scan).
-- Plans: generic (plan_cache_mode), so a call is not planned again. The
--   usual calls (every size given: one entry's messages, or one-message
--   entries) are checked with array operators and one lookup.
-- Errors: TQ005 (naming the first bad acknowledgement, 1-based): arrays of
--   different lengths or over 100,000 elements, a NULL element, an offset below
--   0, a batch index below -1, a size below 1; an offset above the mark-delete
--   offset with no entry; a marker; a batch index past the entry's messages;
--   a batch size other than the entry's message_count.
CREATE OR REPLACE FUNCTION txnq.require_acks_v1(
    p_what text,
    p_topic_id integer,
    p_partition integer,
    p_mark_delete bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_batch_sizes integer[],
    OUT batch_indexes integer[],
    OUT batch_sizes integer[]
)
LANGUAGE plpgsql STABLE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    v_bad bigint;
    v_entry record;
    v_min bigint;
    v_max bigint;

BEGIN
    IF cardinality(p_batch_indexes) <> cardinality(p_offsets)
       OR cardinality(p_batch_sizes) <> cardinality(p_offsets) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('%s: offsets, batch_indexes and batch_sizes must have the same length '
                             '(got %s, %s and %s)', p_what, cardinality(p_offsets),
                             cardinality(p_batch_indexes), cardinality(p_batch_sizes)),
            HINT = 'pass one batch index and one batch size (or NULL) per offset; nothing was acknowledged';
    END IF;
    IF cardinality(p_offsets) > 100000 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('%s: %s acknowledgements in one call; at most 100000', p_what,
                             cardinality(p_offsets)),
            HINT = 'split the acknowledgement into several calls; nothing was acknowledged';
    END IF;
    IF coalesce(cardinality(p_offsets), 0) = 0 THEN
        batch_indexes := '{}';
        batch_sizes := '{}';
        RETURN;
    END IF;
    -- The usual calls, checked with array operators (no unnest): every size
    -- given (the client knows them from fetch), and either the messages of
    -- one entry (a batch acknowledged message by message) or one-message
    -- entries. Anything else, and every error, takes the general path below.
    IF array_position(p_offsets, NULL) IS NULL AND array_position(p_batch_indexes, NULL) IS NULL
       AND array_position(p_batch_sizes, NULL) IS NULL AND NOT 0 > ANY (p_offsets)
       AND NOT -1 > ANY (p_batch_indexes) THEN
        IF p_offsets[1] = ALL (p_offsets) AND p_batch_sizes[1] = ALL (p_batch_sizes)
           AND NOT p_batch_sizes[1] <= ANY (p_batch_indexes) AND p_batch_sizes[1] >= 1 THEN
            SELECT e.message_count AS size, e.marker IS NOT NULL AS marker INTO v_entry FROM txnq.entries e
             WHERE e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset = p_offsets[1];
            IF (v_entry.size IS NULL AND p_offsets[1] <= p_mark_delete)
               OR (NOT v_entry.marker AND v_entry.size = p_batch_sizes[1]) THEN
                batch_sizes := p_batch_sizes;
                batch_indexes := CASE WHEN p_batch_sizes[1] = 1 THEN array_fill(-1, ARRAY[cardinality(p_offsets)])
                                      ELSE p_batch_indexes END;
                RETURN;
            END IF;
        ELSIF 1 = ALL (p_batch_sizes) AND 0 >= ALL (p_batch_indexes) THEN
            -- One-message entries, a run of offsets (one index range scan).
            -- Offsets are gapless (invariant 1) and retention deletes only
            -- what the cursor passed: an offset above the mark-delete offset
            -- and within the head (the caller checked) has its entry.
            SELECT min(o), max(o) INTO v_min, v_max FROM unnest(p_offsets) AS o;
            IF v_max - v_min < 2 * cardinality(p_offsets) + 64
               AND NOT EXISTS (SELECT 1 FROM txnq.entries e
                                WHERE e.topic_id = p_topic_id AND e.partition = p_partition
                                  AND e.entry_offset BETWEEN v_min AND v_max
                                  AND e.entry_offset = ANY (p_offsets)
                                  AND (e.message_count <> 1 OR e.marker IS NOT NULL)) THEN
                batch_sizes := p_batch_sizes;
                batch_indexes := array_fill(-1, ARRAY[cardinality(p_offsets)]);
                RETURN;
            END IF;
        END IF;
    END IF;
    -- The general path: the first malformed element, and the offset range.
    SELECT min(u.n) FILTER (WHERE u.o IS NULL OR u.o < 0 OR u.i IS NULL OR u.i < -1 OR u.s < 1),
           min(u.o), max(u.o)
      INTO v_bad, v_min, v_max
      FROM unnest(p_offsets, p_batch_indexes, p_batch_sizes) WITH ORDINALITY AS u(o, i, s, n);
    IF v_bad IS NOT NULL THEN
        v_entry := NULL;
    ELSE
        -- Each entry named read once, matched with the acknowledgements naming
        -- it (sizes looked up where NULL); a run of offsets (the messages one
        -- fetch returned) by one index range scan, sparse ones one by one.
        IF v_max - v_min < 2 * cardinality(p_offsets) + 64 THEN
            SELECT array_agg(coalesce(x.size, x.s, 1) ORDER BY x.n),
                   array_agg(CASE WHEN coalesce(x.size, x.s, 1) <= 1 THEN -1 ELSE x.i END ORDER BY x.n),
                   min(x.n) FILTER (WHERE CASE WHEN x.size IS NULL THEN x.o > p_mark_delete
                                               ELSE x.marker OR x.i >= x.size OR x.s <> x.size END)
              INTO batch_sizes, batch_indexes, v_bad
              FROM (SELECT u.n, u.o, u.i, u.s, m.size, m.marker
                      FROM unnest(p_offsets, p_batch_indexes, p_batch_sizes) WITH ORDINALITY AS u(o, i, s, n)
                      LEFT JOIN (SELECT e.entry_offset AS o, e.message_count AS size,
                                        e.marker IS NOT NULL AS marker
                                   FROM txnq.entries e
                                  WHERE e.topic_id = p_topic_id AND e.partition = p_partition
                                    AND e.entry_offset BETWEEN v_min AND v_max) AS m
                        ON m.o = u.o) AS x;
        ELSE
            SELECT array_agg(coalesce(x.size, x.s, 1) ORDER BY x.n),
                   array_agg(CASE WHEN coalesce(x.size, x.s, 1) <= 1 THEN -1 ELSE x.i END ORDER BY x.n),
                   min(x.n) FILTER (WHERE CASE WHEN x.size IS NULL THEN x.o > p_mark_delete
                                               ELSE x.marker OR x.i >= x.size OR x.s <> x.size END)
              INTO batch_sizes, batch_indexes, v_bad
              FROM (SELECT u.n, u.o, u.i, u.s, m.size, m.marker
                      FROM unnest(p_offsets, p_batch_indexes, p_batch_sizes) WITH ORDINALITY AS u(o, i, s, n)
                      LEFT JOIN (SELECT d.o, e.message_count AS size, e.marker IS NOT NULL AS marker
                                   FROM (SELECT DISTINCT o FROM unnest(p_offsets) AS o) AS d
                                  CROSS JOIN LATERAL (
                                        SELECT e.message_count, e.marker FROM txnq.entries e
                                         WHERE e.topic_id = p_topic_id AND e.partition = p_partition
                                           AND e.entry_offset = d.o
                                        OFFSET 0) AS e) AS m
                        ON m.o = u.o) AS x;
        END IF;
    END IF;
    IF v_bad IS NULL THEN
        RETURN;
    END IF;
    SELECT e.message_count AS size, e.marker IS NOT NULL AS marker INTO v_entry FROM txnq.entries e
     WHERE e.topic_id = p_topic_id AND e.partition = p_partition AND e.entry_offset = p_offsets[v_bad];
    RAISE EXCEPTION USING ERRCODE = 'TQ005',
        MESSAGE = format('%s: acknowledgement %s (offset %s, batch index %s, batch size %s) ', p_what, v_bad,
                         coalesce(p_offsets[v_bad]::text, 'NULL'), coalesce(p_batch_indexes[v_bad]::text, 'NULL'),
                         coalesce(p_batch_sizes[v_bad]::text, 'NULL'))
                  || CASE
            WHEN p_offsets[v_bad] IS NULL OR p_offsets[v_bad] < 0 OR p_batch_indexes[v_bad] IS NULL
                 OR p_batch_indexes[v_bad] < -1 OR p_batch_sizes[v_bad] < 1
                THEN 'is not a message id: an offset is 0 or more, a batch index -1 (the whole entry) or '
                     '0 or more, a batch size 1 or more (or NULL)'
            WHEN v_entry.size IS NULL
                THEN format('names no entry: offset %s of partition %s holds none', p_offsets[v_bad], p_partition)
            WHEN v_entry.marker
                THEN format('names a transaction marker (offset %s of partition %s), not a message',
                            p_offsets[v_bad], p_partition)
            WHEN p_batch_indexes[v_bad] >= v_entry.size
                THEN format('names no message: the entry at offset %s of partition %s holds %s (batch indexes '
                            '0 to %s, or -1 for the whole entry)', p_offsets[v_bad], p_partition, v_entry.size,
                            v_entry.size - 1)
            ELSE format('has the wrong batch size: the entry at offset %s of partition %s holds %s message(s)',
                        p_offsets[v_bad], p_partition, v_entry.size)
        END,
        HINT = 'acknowledge the message ids that were delivered (a NULL batch size is looked up); '
               'nothing was acknowledged';
END;
$$;
