-- txnq.append_v2: append one producer batch to one partition as one entry,
-- optionally inside a transaction (v2 adds txn_tc, txn_seq; append_v1 stays for
-- clients of revision 0001 and writes outside transactions).
--
-- Parameters: (topic_id, partition) first, so Citus can route the call to the
--   node owning the shard; producer_id/producer_epoch/first_sequence are NULL
--   for a producer without idempotence; payloads[i], keys[i], properties[i],
--   event_times[i] describe message i (the last three may be NULL as a whole);
--   txn_tc/txn_seq: the transaction the batch belongs to, or NULL.
-- Returns one row: entry_offset, publish_time, duplicate (true when this batch
--   was written before: entry_offset is then the original offset, or NULL when
--   the batch is older than the five batches remembered), roll_entry_log (a
--   hint that the active entry log is full or old: call txnq.roll_entry_log_v1).
-- Transactions: the transaction row is locked FOR SHARE first
--   (txnq.txn_require_open_v1: an ended or fenced transaction writes nothing).
--   The first batch of a transaction on a partition registers the partition
--   (txn_partitions, txn_buffer_ongoing, ongoing_txns + 1); while a partition
--   has ongoing transactions its max read offset does not move (invariant 2).
-- Locks: the partition head row (serialises appends, DESIGN invariant 1), then
--   the producer's sequence row (its conditional update is the idempotence
--   check). Both are held only until the calling statement's transaction
--   commits. Lock order head row -> sequence row everywhere: no deadlock.
-- Invariants: offsets are gapless and become visible in order (the head row
--   and the entry commit together); a sequence is written at most once per
--   partition and a gap is an error (invariant 6); a fenced epoch writes nothing.
-- Errors (SQLSTATE): TQ001 unknown topic/partition, TQ002 producer fenced,
--   TQ003 out-of-order sequence, TQ004 message too large, TQ005 invalid argument,
--   and the transaction errors of txnq.txn_require_open_v1.
CREATE OR REPLACE FUNCTION txnq.append_v2(
    p_topic_id integer,
    p_partition integer,
    p_producer_id bigint,
    p_producer_epoch integer,
    p_first_sequence bigint,
    p_payloads bytea[],
    p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL,
    p_event_times timestamptz[] DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL,
    OUT entry_offset bigint,
    OUT publish_time timestamptz,
    OUT duplicate boolean,
    OUT roll_entry_log boolean
)
LANGUAGE plpgsql AS $$
DECLARE
    v_count integer := cardinality(p_payloads);
    v_max_message_bytes integer;
    v_active_entry_log integer;
    v_ledger_max_entries bigint;
    v_ledger_max_bytes bigint;
    v_ledger_min_rollover_seconds double precision;
    v_ledger_max_rollover_seconds double precision;
    v_largest bigint;
    v_bytes bigint;
    v_last_sequence bigint;
    v_waiters boolean;
    v_head txnq.partitions%ROWTYPE;
BEGIN
    duplicate := false;
    roll_entry_log := false;
    IF v_count IS NULL OR v_count = 0 THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'append_v2: a batch needs at least one payload';
    END IF;
    IF (p_keys IS NOT NULL AND cardinality(p_keys) <> v_count)
       OR (p_properties IS NOT NULL AND cardinality(p_properties) <> v_count)
       OR (p_event_times IS NOT NULL AND cardinality(p_event_times) <> v_count) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'append_v2: keys, properties and event_times must have one element per payload';
    END IF;
    IF (p_producer_id IS NULL) <> (p_first_sequence IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'append_v2: producer_id and first_sequence go together';
    END IF;
    IF (p_txn_tc IS NULL) <> (p_txn_seq IS NULL) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'append_v2: txn_tc and txn_seq go together';
    END IF;
    IF p_txn_tc IS NOT NULL THEN
        -- Before the head row: lock order transaction row -> head row everywhere.
        PERFORM txnq.txn_require_open_v1(p_txn_tc, p_txn_seq);
    END IF;

    -- One read for everything checked before the offset is taken: the topic's
    -- size limit, the server settings, the producer's last sequence, and
    -- whether a consumer waits for this partition.
    SELECT t.max_message_bytes, c.active_entry_log_id, c.ledger_max_entries, c.ledger_max_bytes,
           c.ledger_min_rollover_seconds, c.ledger_max_rollover_seconds,
           (SELECT s.last_sequence FROM txnq.producer_sequences s
             WHERE s.topic_id = p_topic_id AND s.partition = p_partition AND s.producer_id = p_producer_id),
           EXISTS (SELECT 1 FROM txnq.consumer_waiters w
                    WHERE w.topic_id = p_topic_id AND w.partition = p_partition)
      INTO v_max_message_bytes, v_active_entry_log, v_ledger_max_entries, v_ledger_max_bytes,
           v_ledger_min_rollover_seconds, v_ledger_max_rollover_seconds, v_last_sequence, v_waiters
      FROM txnq.topics t CROSS JOIN txnq.config c WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001', MESSAGE = format('topic id %s does not exist', p_topic_id);
    END IF;
    IF v_count = 1 THEN
        v_largest := octet_length(p_payloads[1]);
        v_bytes := v_largest;
    ELSE
        SELECT max(octet_length(p)), sum(octet_length(p)) INTO v_largest, v_bytes FROM unnest(p_payloads) AS p;
    END IF;
    IF v_largest > v_max_message_bytes OR v_largest IS NULL THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ004',
            MESSAGE = format('a payload of %s bytes is larger than the topic''s max message size of %s bytes',
                             coalesce(v_largest, 0), v_max_message_bytes),
            HINT = 'split the payload, or raise the topic''s max_message_bytes';
    END IF;

    IF p_producer_id IS NOT NULL THEN
        -- A retry of a written batch is recognised before any offset is taken.
        IF p_first_sequence <= v_last_sequence THEN
            SELECT d.entry_offset, d.duplicate INTO entry_offset, duplicate
              FROM txnq.find_duplicate_v1(p_topic_id, p_partition, p_producer_id, p_first_sequence, v_count) d;
            RETURN;
        ELSIF p_first_sequence > coalesce(v_last_sequence, -1) + 1 THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ003',
                MESSAGE = format('sequence %s on partition %s skips ahead: the next expected is %s',
                                 p_first_sequence, p_partition, coalesce(v_last_sequence, -1) + 1),
                HINT = 'messages between were never written; resend them in order';
        END IF;
    END IF;

    -- The head row lock: allocate the offset. Publish times never go backwards
    -- within a partition, so seek-by-time and TTL can rely on their order.
    UPDATE txnq.partitions h
       SET next_offset = h.next_offset + 1,
           -- A transaction's entries, and everything after the first entry of
           -- an ongoing transaction, wait for the marker phase to be readable.
           max_read_offset = CASE WHEN h.ongoing_txns = 0 AND p_txn_tc IS NULL
                                  THEN h.next_offset ELSE h.max_read_offset END,
           ledger_bytes = h.ledger_bytes + v_bytes,
           last_publish_time = greatest(clock_timestamp(), h.last_publish_time)
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition
    RETURNING h.* INTO v_head;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('partition %s of topic id %s does not exist', p_partition, p_topic_id);
    END IF;
    entry_offset := v_head.next_offset - 1;
    publish_time := v_head.last_publish_time;

    IF p_producer_id IS NOT NULL THEN
        -- Takes the sequence row lock. It matches only if no other session of
        -- this producer wrote these sequences since the check above.
        UPDATE txnq.producer_sequences s
           SET last_sequence = p_first_sequence + v_count - 1,
               recent_first_sequences = (s.recent_first_sequences || p_first_sequence)[greatest(1, cardinality(s.recent_first_sequences) - 3):],
               recent_offsets = (s.recent_offsets || entry_offset)[greatest(1, cardinality(s.recent_offsets) - 3):],
               recent_counts = (s.recent_counts || v_count)[greatest(1, cardinality(s.recent_counts) - 3):]
         WHERE s.topic_id = p_topic_id AND s.partition = p_partition AND s.producer_id = p_producer_id
           AND s.last_sequence = p_first_sequence - 1;
        IF NOT FOUND THEN
            IF v_last_sequence IS NOT NULL THEN
                RAISE EXCEPTION USING ERRCODE = 'TQ003',
                    MESSAGE = format('sequence %s on partition %s was written concurrently by another session '
                                     'of producer %s', p_first_sequence, p_partition, p_producer_id),
                    HINT = 'retry: a retried batch is recognised and returns its original offset';
            END IF;
            -- First write of this producer on a partition added after it registered.
            INSERT INTO txnq.producer_sequences (topic_id, partition, producer_id, last_sequence,
                                                 recent_first_sequences, recent_offsets, recent_counts)
            VALUES (p_topic_id, p_partition, p_producer_id, p_first_sequence + v_count - 1,
                    ARRAY[p_first_sequence], ARRAY[entry_offset], ARRAY[v_count])
            ON CONFLICT DO NOTHING;
            IF NOT FOUND THEN
                RAISE EXCEPTION USING ERRCODE = 'TQ003',
                    MESSAGE = format('producer %s started writing partition %s concurrently in another session',
                                     p_producer_id, p_partition),
                    HINT = 'retry: a retried batch is recognised and returns its original offset';
            END IF;
        END IF;
    END IF;

    -- The entry. For a producer, the insert also checks the epoch: its snapshot
    -- is taken after the sequence row lock above, so an epoch bump committed by
    -- a newer session (register_producer_v1 holds these rows while it bumps) is
    -- seen, and the fenced session writes nothing.
    INSERT INTO txnq.entries (topic_id, partition, entry_offset, entry_log_id, ledger_id, publish_time,
                              producer_id, first_sequence, message_count, payload_bytes,
                              payloads, keys, properties, event_times, txn_tc, txn_seq)
    SELECT p_topic_id, p_partition, entry_offset, v_active_entry_log, v_head.ledger_id, publish_time,
           p_producer_id, p_first_sequence, v_count, v_bytes,
           p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq
     WHERE p_producer_id IS NULL
        OR EXISTS (SELECT 1 FROM txnq.producers pr
                    WHERE pr.producer_id = p_producer_id AND pr.epoch = p_producer_epoch);
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ002',
            MESSAGE = format('producer %s epoch %s was fenced by a newer session with the same name',
                             p_producer_id, p_producer_epoch),
            HINT = 'close this producer; only the newest producer of a name may write';
    END IF;

    IF p_txn_tc IS NOT NULL THEN
        -- The transaction's first entry here registers the partition in the
        -- transaction log and in the partition's transaction buffer. Under the
        -- head row lock, so two sessions of one transaction count it once.
        INSERT INTO txnq.txn_partitions (tc_id, txn_seq, topic_id, partition, first_offset)
        VALUES (p_txn_tc, p_txn_seq, p_topic_id, p_partition, entry_offset)
        ON CONFLICT DO NOTHING;
        IF FOUND THEN
            INSERT INTO txnq.txn_buffer_ongoing (topic_id, partition, tc_id, txn_seq, first_offset)
            VALUES (p_topic_id, p_partition, p_txn_tc, p_txn_seq, entry_offset);
            UPDATE txnq.partitions h SET ongoing_txns = h.ongoing_txns + 1
             WHERE h.topic_id = p_topic_id AND h.partition = p_partition;
        END IF;
    END IF;

    -- Ledger rollover, with Pulsar's rules: full (entries or bytes) and older than
    -- the minimum rollover time, or older than the maximum rollover time.
    IF ((entry_offset - v_head.ledger_first_offset + 1 >= v_ledger_max_entries
         OR v_head.ledger_bytes >= v_ledger_max_bytes)
        AND extract(epoch FROM publish_time - v_head.ledger_opened_at) >= v_ledger_min_rollover_seconds)
       OR extract(epoch FROM publish_time - v_head.ledger_opened_at) >= v_ledger_max_rollover_seconds THEN
        PERFORM txnq.roll_ledger_v1(p_topic_id, p_partition, entry_offset);
    END IF;

    -- Wake a waiting consumer: one NOTIFY per wait, never one per message.
    -- Only when the entry is readable by read_committed consumers: entries of a
    -- transaction become readable at its marker, which wakes them then
    -- (read_uncommitted consumers see them at their next poll).
    IF v_waiters AND v_head.max_read_offset = entry_offset THEN
        DELETE FROM txnq.consumer_waiters w WHERE w.topic_id = p_topic_id AND w.partition = p_partition;
        PERFORM pg_notify('txnq_topic_' || p_topic_id, p_partition::text);
    END IF;

    -- Sampled check (one append in 1024 per partition) whether the entry log is full or old.
    IF entry_offset % 1024 = 1023 THEN
        roll_entry_log := txnq.entry_log_needs_roll_v1();
    END IF;
END;
$$;
