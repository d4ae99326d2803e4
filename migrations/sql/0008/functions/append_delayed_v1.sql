-- txnq.append_delayed_v1: append one message for delayed delivery (Pulsar's
-- deliverAfter / deliverAt): txnq.append_v3 with one payload, plus its
-- delivery time in txnq.delayed_entries, in the same transaction.
--
-- Parameters: those of append_v3 (the arrays hold exactly one message: a
--   delayed message is its own entry, as Pulsar does not batch them), then
--   deliver_at.
-- Returns append_v3's row. A retried (duplicate) batch keeps its first
--   delivery time.
-- Shared and key_shared subscriptions deliver the message at deliver_at at the
--   earliest; exclusive and failover subscriptions deliver it in log order
--   right away (as Pulsar does), so a delayed message never holds a partition back.
-- Locks and errors: append_v3's; TQ005 more than one message.
CREATE OR REPLACE FUNCTION txnq.append_delayed_v1(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_producer_epoch integer,
    p_first_sequence bigint,
    p_payloads bytea[],
    p_keys bytea[],
    p_properties jsonb[],
    p_event_times timestamptz[],
    p_txn_tc integer,
    p_txn_seq bigint,
    p_deliver_at timestamptz,
    OUT entry_offset bigint,
    OUT publish_time timestamptz,
    OUT duplicate boolean,
    OUT roll_entry_log boolean
)
LANGUAGE plpgsql AS $$
BEGIN
    IF cardinality(p_payloads) IS DISTINCT FROM 1 OR p_deliver_at IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'append_delayed_v1: a delayed message is one payload with a delivery time';
    END IF;
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      INTO entry_offset, publish_time, duplicate, roll_entry_log
      FROM txnq.append_v3(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq) AS a;
    IF NOT duplicate AND p_deliver_at > publish_time THEN
        INSERT INTO txnq.delayed_entries (topic_id, partition, entry_offset, deliver_at)
        VALUES (p_topic_id, p_partition, entry_offset, p_deliver_at)
        ON CONFLICT DO NOTHING;
    END IF;
END;
$$;
