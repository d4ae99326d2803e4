-- txnq.coordinator_record_owner_v1: record which worker owns which
-- coordinators (txnq.coordinators.owner, for inspection). Replaces the
-- worker's direct INSERT/UPDATE. Revision 0015.
--
-- Parameters: owner (the worker's name: 1 to 200 characters, no control
--   characters), tc_ids (a non-empty one-dimensional array of coordinators,
--   each 0 .. tc_count - 1, no NULL; a repeated id counts once).
-- Returns nothing. Locks: the coordinator rows it changes.
-- Errors: TQ005 for a bad owner name or tc_ids (nothing is recorded).
CREATE OR REPLACE FUNCTION txnq.coordinator_record_owner_v1(p_owner text, p_tc_ids integer[])
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_tc_count integer;
BEGIN
    IF p_owner IS NULL OR p_owner !~ '^[^[:cntrl:]]{1,200}$' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('coordinator_record_owner_v1: owner %s is not valid: use 1 to 200 '
                             'characters, no control characters',
                             coalesce(quote_literal(left(p_owner, 80)), 'NULL')),
            HINT = 'pass the worker''s name; nothing was recorded';
    END IF;
    SELECT c.tc_count INTO v_tc_count FROM txnq.config c;
    IF p_tc_ids IS NULL OR cardinality(p_tc_ids) = 0 OR array_ndims(p_tc_ids) <> 1
       OR array_position(p_tc_ids, NULL) IS NOT NULL
       OR EXISTS (SELECT 1 FROM unnest(p_tc_ids) t WHERE t < 0 OR t >= v_tc_count) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('coordinator_record_owner_v1: tc_ids %s are not valid: give one or more '
                             'coordinators from 0 to %s', coalesce(left(p_tc_ids::text, 80), 'NULL'),
                             v_tc_count - 1),
            HINT = 'pass the coordinators the worker holds the leases of; nothing was recorded';
    END IF;
    INSERT INTO txnq.coordinators AS c (tc_id, owner, owned_since)
    SELECT DISTINCT t, p_owner, now() FROM unnest(p_tc_ids) AS t
    ON CONFLICT (tc_id) DO UPDATE SET owner = excluded.owner, owned_since = excluded.owned_since
     WHERE c.owner IS DISTINCT FROM excluded.owner;
END;
$$;
