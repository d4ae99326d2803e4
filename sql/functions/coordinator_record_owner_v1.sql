-- txnq.coordinator_record_owner_v1: record which worker owns which
-- coordinators (txnq.coordinators.owner, for inspection). Replaces the
-- worker's direct INSERT/UPDATE. Revision 0015.
--
-- Parameters: owner (the worker's name), tc_ids.
-- Returns nothing. Locks: the coordinator rows it changes. Errors: none.
CREATE OR REPLACE FUNCTION txnq.coordinator_record_owner_v1(p_owner text, p_tc_ids integer[])
RETURNS void
LANGUAGE sql AS $$
    INSERT INTO txnq.coordinators AS c (tc_id, owner, owned_since)
    SELECT t, p_owner, now() FROM unnest(p_tc_ids) AS t
    ON CONFLICT (tc_id) DO UPDATE SET owner = excluded.owner, owned_since = excluded.owned_since
     WHERE c.owner IS DISTINCT FROM excluded.owner;
$$;
