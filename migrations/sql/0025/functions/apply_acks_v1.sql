-- txnq.apply_acks_v1: a thin wrapper of txnq.apply_acks_v2 since revision 0025
-- (whose walk over the entries above the mark-delete offset reads them 64 at
-- a time instead of the partition's whole backlog). Revision 0002 made it the
-- shared core of acks, commits of pending acks, TTL and the backlog quota;
-- their callers keep calling it.
CREATE OR REPLACE FUNCTION txnq.apply_acks_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_cumulative_offset bigint,
    p_offsets bigint[],
    p_batch_indexes integer[],
    p_batch_sizes integer[]
) RETURNS bigint
LANGUAGE sql AS $$
    SELECT txnq.apply_acks_v2(p_topic_id, p_partition, p_subscription_id, p_cumulative_offset,
                              p_offsets, p_batch_indexes, p_batch_sizes)
$$;
