-- txnq.append_packed_v1: txnq.append_v5 with the payloads packed into one
-- bytea, for a cluster proxy (docs/cluster.md). Revision 0028. PL/Proxy 2.10
-- sends an argument in binary only when its type is a plain scalar such as
-- bytea; a bytea[] goes as a hex-escaped text literal that the shard parses
-- back (1000 x 100-byte payloads: 4.7-5.9 ms through the proxy against
-- 1.1 ms directly). The proxy's txnq.append_v5 packs the payloads and calls
-- this on the partition's shard; it unpacks them and calls txnq.append_v5,
-- so every check, the idempotence, the fencing and the result stay there.
-- Called directly it is append_v5 with another encoding: the same
-- permission checks and errors, nothing else.
--
-- Parameters: append_v5's, with p_payloads replaced by payload_bytes (the
--   payloads concatenated in order) and payload_lengths (one element per
--   payload: its length in bytes, or -1 for a NULL payload, which append_v5
--   then refuses). Keys, properties and event times go as in append_v5 (NULL
--   in the common case; the proxy passes them through unchanged).
-- Returns append_v5's row.
-- Errors (SQLSTATE): TQ005 payload_bytes or payload_lengths NULL,
--   payload_lengths not a one-dimensional array indexed from 1, with a NULL
--   element or one below -1, or lengths that do not add up to
--   payload_bytes' length; then append_v5's.
CREATE OR REPLACE FUNCTION txnq.append_packed_v1(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_producer_epoch integer,
    p_first_sequence bigint,
    p_payload_bytes bytea,
    p_payload_lengths integer[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL,
    OUT entry_offset bigint,
    OUT publish_time timestamptz,
    OUT duplicate boolean,
    OUT roll_entry_log boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_total bigint;
    v_bad boolean;
    v_payloads bytea[];
BEGIN
    IF p_payload_bytes IS NULL OR p_payload_lengths IS NULL
       OR array_ndims(p_payload_lengths) IS DISTINCT FROM 1
       OR array_lower(p_payload_lengths, 1) <> 1 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'append_packed_v1: payload_bytes and payload_lengths are required, '
                      'payload_lengths a one-dimensional array indexed from 1';
    END IF;
    SELECT sum(greatest(l, 0)), bool_or(l IS NULL OR l < -1)
      INTO v_total, v_bad
      FROM unnest(p_payload_lengths) l;
    IF v_bad OR v_total <> length(p_payload_bytes) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('append_packed_v1: payload_lengths must be -1 or more and add up to '
                             'payload_bytes'' %s bytes', length(p_payload_bytes));
    END IF;
    -- Element i: the next payload_lengths[i] bytes (substr copies only them);
    -- e, the running sum, in unnest's order (a ROWS frame needs no sort).
    v_payloads := ARRAY(
        SELECT CASE WHEN s.l < 0 THEN NULL ELSE substr(p_payload_bytes, (s.e - s.l + 1)::integer, s.l) END
          FROM (SELECT u.l, sum(greatest(u.l, 0)) OVER (ROWS UNBOUNDED PRECEDING) AS e
                  FROM unnest(p_payload_lengths) u(l)) s);
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      INTO entry_offset, publish_time, duplicate, roll_entry_log
      FROM txnq.append_v5(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          v_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq) a;
END $$;
