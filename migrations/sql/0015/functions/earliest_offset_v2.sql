-- txnq.earliest_offset_v2: the first offset of a partition still retained
-- (the first offset of its oldest ledger that is not DELETED). Revision 0015;
-- replaces earliest_offset_v1 (same parameters and result for valid input),
-- which answered 0 for an unknown topic or partition.
--
-- Parameters: (topic_id, partition).
-- Returns the offset (0 for a partition that never deleted a ledger).
-- Locks: none.
-- Internal (grant_roles_v2): its callers check the caller's permission.
-- Errors: TQ001 unknown topic or partition.
CREATE OR REPLACE FUNCTION txnq.earliest_offset_v2(p_topic_id integer, p_partition integer)
RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
BEGIN
    PERFORM txnq.require_partition_v1(p_topic_id, p_partition);
    RETURN (SELECT coalesce(min(l.first_offset), 0)
              FROM txnq.ledgers l
             WHERE l.topic_id = p_topic_id AND l.partition = p_partition AND l.state <> 'DELETED');
END;
$$;
