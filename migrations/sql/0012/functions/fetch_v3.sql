-- txnq.fetch_v3: fetch_v2 from no lower than the subscription's mark-delete
-- offset. Revision 0012.
--
-- A consumer's read position can be older than its cursor: a transaction (or
-- an application transaction) that acknowledged cumulatively, or another
-- consumer before a failover hand-over, may have moved the mark-delete offset
-- past what this consumer has fetched, without a seek or an abort (which bump
-- the cursor generation the consumer follows). fetch_v2 then returned those
-- acknowledged entries again (a transactional ack of them was refused, so
-- exactly-once held, but they were delivered twice); fetch_v3 starts above
-- max(after_offset, mark_delete_offset), read in the same snapshot.
--
-- Parameters, result, locks, invariants and errors: those of txnq.fetch_v2.
CREATE OR REPLACE FUNCTION txnq.fetch_v3(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_after_offset bigint,
    p_max_entries integer DEFAULT 100,
    p_max_bytes bigint DEFAULT 8388608
) RETURNS TABLE (
    entry_offset bigint,
    publish_time timestamptz,
    producer_id bigint,
    first_sequence bigint,
    message_count integer,
    payloads bytea[],
    keys bytea[],
    properties jsonb[],
    event_times timestamptz[],
    acked_batch_indexes integer[]
)
LANGUAGE sql STABLE AS $$
    SELECT * FROM txnq.fetch_v2(
        p_topic_id, p_partition, p_subscription_id,
        greatest(p_after_offset, (SELECT c.mark_delete_offset FROM txnq.cursors c
                                   WHERE c.topic_id = p_topic_id AND c.partition = p_partition
                                     AND c.subscription_id = p_subscription_id)),
        p_max_entries, p_max_bytes)
$$;
