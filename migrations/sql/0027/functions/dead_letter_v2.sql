-- txnq.dead_letter_v2: revision 0027 made it a thin wrapper of
-- txnq.dead_letter_v3 (same parameters, result and errors), which unfolds
-- a claim range covering the message first.
CREATE OR REPLACE FUNCTION txnq.dead_letter_v2(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_entry_offset bigint,
    p_batch_index integer,
    p_dead_letter_topic_id integer,
    p_reason text
) RETURNS boolean
LANGUAGE sql AS $$
    SELECT txnq.dead_letter_v3(p_topic_id, p_partition, p_subscription_id, p_entry_offset, p_batch_index, p_dead_letter_topic_id, p_reason);
$$;
