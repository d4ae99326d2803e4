-- txnq.claim_v5: a thin wrapper of txnq.claim_v6 since revision 0027 (which
-- hands out a shared subscription's new messages as one claim range per
-- partition instead of a claim row per message). Revision 0021 made v5 the
-- body that stops a key_shared key at its first message it could not lock;
-- claim_v1 to claim_v4 wrap it.
CREATE OR REPLACE FUNCTION txnq.claim_v5(
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
    SELECT * FROM txnq.claim_v6(p_topic_id, p_subscription_id, p_consumer_id, p_max_messages,
                                p_ack_timeout_seconds, p_max_redeliver_count, p_dead_letter_topic_id)
$$;
