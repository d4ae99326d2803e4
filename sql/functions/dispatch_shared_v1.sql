-- txnq.dispatch_shared_v1: revision 0027 made it a thin wrapper of
-- txnq.dispatch_shared_v2 (same parameters and result), which hands out a
-- shared consumer's messages as one claim range instead of a claim row per
-- message.
CREATE OR REPLACE FUNCTION txnq.dispatch_shared_v1(
    p_topic_id integer,
    p_partition integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_room integer,
    p_hold_until timestamptz,
    p_isolation text,
    p_hand_out boolean
) RETURNS TABLE (
    partition integer,
    entry_offset bigint,
    batch_index integer,
    batch_size integer,
    publish_time timestamptz,
    producer_id bigint,
    sequence bigint,
    payload bytea,
    key bytea,
    properties jsonb,
    event_time timestamptz,
    redelivery_count integer
)
LANGUAGE sql AS $$
    SELECT * FROM txnq.dispatch_shared_v2(p_topic_id, p_partition, p_subscription_id, p_consumer_id, p_room,
                                          p_hold_until, p_isolation, p_hand_out);
$$;
