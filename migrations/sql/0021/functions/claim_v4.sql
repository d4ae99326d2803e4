-- txnq.claim_v4: a thin wrapper of txnq.claim_v5 since revision 0021 (which
-- stops a key_shared key at its first message it could not lock, instead of
-- passing over it). Revision 0017 made v4 the body that reads messages
-- through claimed_messages_v2; claim_v1 to claim_v3 wrap it.
CREATE OR REPLACE FUNCTION txnq.claim_v4(
    p_topic_id integer,
    p_subscription_id bigint,
    p_consumer_id bigint,
    p_max_messages integer,
    p_ack_timeout_seconds double precision DEFAULT NULL,
    p_max_redeliver_count integer DEFAULT NULL,
    p_dead_letter_topic_id integer DEFAULT NULL
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
    SELECT * FROM txnq.claim_v5(p_topic_id, p_subscription_id, p_consumer_id, p_max_messages,
                                p_ack_timeout_seconds, p_max_redeliver_count, p_dead_letter_topic_id)
$$;
