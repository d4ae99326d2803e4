-- txnq.dead_letter_v1: superseded; kept for the clients of earlier revisions
-- as a thin wrapper of txnq.dead_letter_v2 (same signature and result). Made
-- by revision 0015 (functions/superseded_0015_produce.sql); revision 0017
-- moved it to a file of its own, unchanged.
CREATE OR REPLACE FUNCTION txnq.dead_letter_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_entry_offset bigint,
    p_batch_index integer,
    p_dead_letter_topic_id integer,
    p_reason text
) RETURNS boolean
LANGUAGE sql AS $$
    SELECT txnq.dead_letter_v2(p_topic_id, p_partition, p_subscription_id, p_entry_offset, p_batch_index,
                               p_dead_letter_topic_id, p_reason)
$$;
