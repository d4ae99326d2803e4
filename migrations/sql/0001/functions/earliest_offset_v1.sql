-- txnq.earliest_offset_v1: the first offset of a partition still retained
-- (the first offset of its oldest ledger that is not DELETED).
CREATE OR REPLACE FUNCTION txnq.earliest_offset_v1(p_topic_id integer, p_partition integer)
RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT coalesce(min(l.first_offset), 0)
      FROM txnq.ledgers l
     WHERE l.topic_id = p_topic_id AND l.partition = p_partition AND l.state <> 'DELETED';
$$;
