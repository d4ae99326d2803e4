-- txnq.append_delayed_v2: append one message for delayed delivery (Pulsar's
-- deliverAfter / deliverAt): txnq.append_v4 with one payload, plus its
-- delivery time in txnq.delayed_entries, in the same transaction. v2
-- (revision 0015) checks the delivery time's range and appends with
-- append_v4, which validates the rest and checks the permission to produce;
-- append_delayed_v1 becomes a wrapper of it.
--
-- Parameters: those of append_v4 (the arrays hold exactly one message: a
--   delayed message is its own entry, as Pulsar does not batch them), then
--   deliver_at (not NULL, within 0001..9999 UTC: a consumer must be able to
--   read it back; a time not after the publish time delivers at once).
-- Returns append_v4's row. A retried (duplicate) batch keeps its first
--   delivery time.
-- Shared and key_shared subscriptions deliver the message at deliver_at at the
--   earliest; exclusive and failover subscriptions deliver it in log order
--   right away (as Pulsar does), so a delayed message never holds a partition back.
-- Locks and errors: append_v4's; TQ005 not exactly one message, or deliver_at
--   NULL or out of range.
CREATE OR REPLACE FUNCTION txnq.append_delayed_v2(
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
            MESSAGE = format('append_delayed_v2: a delayed message is one payload (got %s) with a delivery '
                             'time (got %s)', coalesce(cardinality(p_payloads)::text, 'NULL'),
                             coalesce(p_deliver_at::text, 'NULL')),
            HINT = 'send each delayed message on its own with its deliver_at; nothing was written';
    END IF;
    PERFORM txnq.require_timestamps_v1('deliver_at', ARRAY[p_deliver_at]);
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      INTO entry_offset, publish_time, duplicate, roll_entry_log
      FROM txnq.append_v4(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq) AS a;
    IF NOT duplicate AND p_deliver_at > publish_time THEN
        INSERT INTO txnq.delayed_entries (topic_id, partition, entry_offset, deliver_at)
        VALUES (p_topic_id, p_partition, entry_offset, p_deliver_at)
        ON CONFLICT DO NOTHING;
    END IF;
END;
$$;
