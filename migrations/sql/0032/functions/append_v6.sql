-- txnq.append_v6: append one producer batch to one partition as one entry,
-- optionally inside a transaction, or into the commit of one. Revision 0032.
-- What changed from append_v5 (whose signature and result it keeps, adding
-- p_decided; append_v5 becomes a thin wrapper of it): with p_decided, the
-- batch goes into a client transaction that this same PostgreSQL transaction
-- has just committed with txnq.end_and_complete_txn_v1: the commit of a
-- client transaction whose last batches were still queued in the producer
-- (docs/transactions.md, "A commit that carries its batches"). Decision,
-- marker phase and those entries then commit together, in one round trip and
-- one WAL flush, instead of one append transaction per partition, each
-- registering the transaction on the partition (txn_partitions,
-- txn_buffer_ongoing, ongoing_txns), and then the decision's transaction
-- writing the markers and undoing that registration. The entry carries the
-- transaction's id as any of its entries; on a partition the transaction had
-- not written before, its COMMIT marker follows it and the partition is
-- recorded in txn_partitions with both offsets, as the marker phase leaves
-- them; nothing waits for a marker, so the max read offset moves as for a
-- batch outside a transaction (up to the marker, unless other transactions
-- are ongoing on the partition, invariant 2).
--
-- Everything else is append_v5's, described below: arguments, checks,
-- idempotence, quota, permissions, locks, invariants and errors.
--
-- p_decided (default false; not NULL): true only with txn_tc/txn_seq, for a
--   transaction whose row this PostgreSQL transaction has set to COMMITTED
--   (its xmin is this transaction's id): anything else writes nothing and
--   raises TQ005 (still OPEN: commit it first, in the same transaction) or
--   TQ013 (ended by another transaction, or aborted), TQ014 unknown. A retry
--   of a batch written before is recognised first, as always, and answers
--   its original offset: so the whole commit can be sent again after a lost
--   connection (the decision, decided already, is not taken again).
-- Locks (decided): the transaction row is held FOR UPDATE by the caller's
--   txnq.end_and_complete_txn_v1, then the head row: the lock order of every
--   transactional write (transaction row -> head row).
--
-- From append_v5's description:
--
-- The grants lookup is an uncorrelated EXISTS (an InitPlan, run once) done
-- for every caller, trusted or not, and combined with the trusted check in
-- PL/pgSQL afterwards. Not `v_trusted OR EXISTS (...)` in the statement, nor
-- a subquery correlated with the topic row: either makes a custom plan look
-- cheaper than the generic one to the plan cache (the OR folds away for a
-- trusted caller; a correlated subplan is costed once per estimated row of
-- txnq.config), so PL/pgSQL planned the statement anew on every call, about
-- 100 us. Grants to groups the role belongs to, and the refusal, are
-- txnq.authorize_v2's, called only when the role has no grant of its own.
--
-- Parameters: (topic_id, partition) first, so Citus can route the call to the
--   node owning the shard; producer_id, producer_epoch and first_sequence are
--   all NULL (a producer without idempotence) or all given (a producer
--   registered on this topic by txnq.register_producer_v2; first_sequence
--   from 0); payloads[i], keys[i], properties[i], event_times[i] describe
--   message i: payloads a one-dimensional array (indexed from 1) of at least
--   one non-NULL payload; keys, properties and event_times NULL as a whole or
--   one element per payload (a NULL element: none for that message);
--   properties JSON objects of strings; event times within 0001..9999 UTC;
--   txn_tc/txn_seq: the transaction the batch belongs to, or both NULL.
-- Returns one row: entry_offset, publish_time, duplicate (true when this batch
--   was written before: entry_offset is then the original offset, or NULL when
--   the batch is older than the five batches remembered), roll_entry_log (a
--   hint that the active entry log is full or old: call txnq.roll_entry_log_v1).
-- Checks cost: a single send reaches no more plpgsql expressions than in
--   append_v3 (see the body); the head-row update proves the partition, the
--   entry insert's epoch check also requires the producer's topic, and the
--   error paths tell the cases apart; properties, event times and array
--   shapes of keys, properties and event times are read only when given.
-- Backlog quota: the topic's row in txnq.backlog_quota_exceeded (written by
--   the periodic txnq.check_backlog_quota_v1, never computed here) refuses the
--   batch with TQ016 (policy producer_error) or TQ017 (producer_hold: the
--   client waits, re-checks and retries). A retry of a batch already written
--   still gets its original offset (the duplicate check comes first), and
--   transactional batches are refused as any other (Pulsar applies the quota
--   to every producer); markers are not appends and are never refused.
-- Permissions: trusted callers pass (txnq.caller_is_trusted_v1); a role's own
--   grant is read with the topic (above), its groups' grants by
--   txnq.authorize_v2(topic_id, 'produce'), both before anything is written or
--   an error tells the topic's state. In a transaction authorize_v2 runs before
--   the transaction row is read, then txnq.authorize_txn_v1 once it is found.
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
--   partition and a gap is an error (invariant 6); a fenced epoch writes
--   nothing; a rejected call writes nothing.
-- Errors (SQLSTATE): TQ001 unknown (or NULL) topic/partition, TQ002 producer
--   fenced, TQ003 out-of-order sequence, TQ004 message too large, TQ005 invalid
--   argument (array shapes, NULL payloads, producer arguments, a producer not
--   registered on the topic, properties, event times), TQ016 / TQ017 backlog
--   quota exceeded, TQ018 not permitted, and the transaction errors of
--   txnq.txn_require_open_v1 (TQ014 unknown, TQ013 ended, TQ015 timed out,
--   TQ002 fenced).
CREATE OR REPLACE FUNCTION txnq.append_v6(
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
    p_decided boolean DEFAULT false,
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
    v_quota_policy text;
    v_producer_topic integer;
    v_producer_epoch integer;
    v_head txnq.partitions%ROWTYPE;
    v_caller name;
    v_allowed boolean;
    v_own_grant boolean;
    -- Set for a decided append only; NULL otherwise, and every use below
    -- reads NULL as false, so a single send evaluates no expression more
    -- than in append_v5 (docs/benchmarks.md).
    v_txn_state text;
    v_decided_here boolean;
    v_refused boolean;
    v_marker boolean;
BEGIN
    duplicate := false;
    roll_entry_log := false;
    -- The checks cost a single send next to nothing (bench/produce_consume.py):
    -- plpgsql prepares every expression it reaches anew in each transaction,
    -- and a single send is one transaction, so the common path reaches no
    -- more expressions than append_v3 did. The argument checks that cost no
    -- read are one expression; which argument failed is worked out only when
    -- one did. What a lookup proves anyway (the topic exists, the partition
    -- has a head row, a single payload is not NULL) is not checked twice; a
    -- partition out of range or a negative sequence is told apart on the
    -- paths that meet it (error paths and retries).
    IF v_count IS NULL OR v_count = 0
       OR (p_producer_id IS NULL) <> (p_first_sequence IS NULL)
       OR (p_producer_id IS NULL) <> (p_producer_epoch IS NULL)
       OR (p_txn_tc IS NULL) <> (p_txn_seq IS NULL)
       OR p_decided IS NULL OR (p_decided AND p_txn_tc IS NULL) THEN
        IF v_count IS NULL OR v_count = 0 THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = 'append_v6: a batch needs at least one payload',
                HINT = 'pass ARRAY[payload, ...]::bytea[]; nothing was written';
        END IF;
        IF (p_txn_tc IS NULL) <> (p_txn_seq IS NULL) THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005', MESSAGE = 'append_v6: txn_tc and txn_seq go together',
                HINT = 'pass both parts of the transaction id (txnq.open_txn_v2), or neither; '
                       'nothing was written';
        END IF;
        IF p_decided IS NULL OR p_decided THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('append_v6: decided (%s) must be true or false, and true only with a '
                                 'transaction (txn_tc and txn_seq)', coalesce(p_decided::text, 'NULL')),
                HINT = 'pass decided => true only for the transaction this PostgreSQL transaction has '
                       'just committed with txnq.end_and_complete_txn_v1; nothing was written';
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = 'append_v6: producer_id, producer_epoch and first_sequence are all NULL (no '
                      'idempotence) or all given',
            HINT = 'register the producer with txnq.register_producer_v2 and pass the producer_id, epoch '
                   'and next sequence it returns; nothing was written';
    END IF;
    IF p_keys IS NOT NULL OR p_properties IS NOT NULL OR p_event_times IS NOT NULL THEN
        IF (p_keys IS NOT NULL AND (array_ndims(p_keys) IS DISTINCT FROM 1 OR array_lower(p_keys, 1) <> 1
                                    OR cardinality(p_keys) <> v_count))
           OR (p_properties IS NOT NULL AND (array_ndims(p_properties) IS DISTINCT FROM 1
                                             OR array_lower(p_properties, 1) <> 1
                                             OR cardinality(p_properties) <> v_count))
           OR (p_event_times IS NOT NULL AND (array_ndims(p_event_times) IS DISTINCT FROM 1
                                              OR array_lower(p_event_times, 1) <> 1
                                              OR cardinality(p_event_times) <> v_count)) THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('append_v6: keys (%s), properties (%s) and event_times (%s) must each be NULL '
                                 'or a one-dimensional array with one element per payload (%s)',
                                 coalesce(array_dims(p_keys), 'NULL or empty'),
                                 coalesce(array_dims(p_properties), 'NULL or empty'),
                                 coalesce(array_dims(p_event_times), 'NULL or empty'), array_dims(p_payloads)),
                HINT = 'a message without a key, properties or event time has a NULL element; '
                       'nothing was written';
        END IF;
        IF p_properties IS NOT NULL THEN
            PERFORM txnq.require_properties_v1(p_properties);
        END IF;
        IF p_event_times IS NOT NULL THEN
            PERFORM txnq.require_timestamps_v1('event time', p_event_times);
        END IF;
    END IF;

    -- Permission: trusted callers pass here; a role's own grant is read with
    -- the topic below (see the header: why there, and why not in an OR).
    v_caller := txnq.caller_v1();
    v_allowed := txnq.caller_is_trusted_v1(v_caller);
    IF p_txn_tc IS NOT NULL THEN
        -- A role learns nothing of a transaction on a topic it may not use.
        PERFORM txnq.authorize_v2(p_topic_id, 'produce');
        v_allowed := true;
        -- Before the head row: lock order transaction row -> head row everywhere
        -- (decided: the caller's end_and_complete_txn_v1 holds it FOR UPDATE).
        IF p_decided THEN
            -- Only into the commit this PostgreSQL transaction made (the row's
            -- xmin is this transaction's id); refused after the duplicate
            -- check, so that a retried commit gets its offsets back.
            SELECT t.state, t.xmin = pg_catalog.pg_current_xact_id()::xid INTO v_txn_state, v_decided_here
              FROM txnq.transactions t WHERE t.tc_id = p_txn_tc AND t.txn_seq = p_txn_seq;
            v_refused := v_txn_state IS DISTINCT FROM 'COMMITTED' OR NOT v_decided_here;
            -- The partition's first entry of the transaction gets its COMMIT marker.
            v_marker := NOT EXISTS (SELECT 1 FROM txnq.txn_partitions tp
                                     WHERE tp.tc_id = p_txn_tc AND tp.txn_seq = p_txn_seq
                                       AND tp.topic_id = p_topic_id AND tp.partition = p_partition);
        ELSE
            PERFORM txnq.txn_require_open_v1(p_txn_tc, p_txn_seq);
        END IF;
        PERFORM txnq.authorize_txn_v1(p_txn_tc, p_txn_seq);
    END IF;

    -- One read for everything checked before the offset is taken: the topic's
    -- size limit, the server settings, the producer's
    -- last sequence, whether a consumer waits for this partition, and whether
    -- the last backlog quota check found the topic over its quota, and whether
    -- the caller holds a grant of its own on the topic's name or a prefix.
    SELECT t.max_message_bytes, c.active_entry_log_id, c.ledger_max_entries, c.ledger_max_bytes,
           c.ledger_min_rollover_seconds, c.ledger_max_rollover_seconds,
           (SELECT s.last_sequence FROM txnq.producer_sequences s
             WHERE s.topic_id = p_topic_id AND s.partition = p_partition AND s.producer_id = p_producer_id),
           EXISTS (SELECT 1 FROM txnq.consumer_waiters w
                    WHERE w.topic_id = p_topic_id AND w.partition = p_partition),
           (SELECT q.policy FROM txnq.backlog_quota_exceeded q WHERE q.topic_id = p_topic_id),
           EXISTS (SELECT 1 FROM txnq.topics n JOIN txnq.topic_permissions p
                      ON CASE WHEN p.is_prefix THEN pg_catalog.starts_with(n.name, p.resource)
                              ELSE p.resource = n.name COLLATE "C" END
                    WHERE n.topic_id = p_topic_id AND p.grantee = v_caller::text COLLATE "C"
                      AND p.action IN ('produce', 'admin'))
      INTO v_max_message_bytes, v_active_entry_log, v_ledger_max_entries, v_ledger_max_bytes,
           v_ledger_min_rollover_seconds, v_ledger_max_rollover_seconds, v_last_sequence, v_waiters,
           v_quota_policy, v_own_grant
      FROM txnq.topics t CROSS JOIN txnq.config c WHERE t.topic_id = p_topic_id;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('topic id %s does not exist', coalesce(p_topic_id::text, 'NULL')),
            HINT = 'look the topic up by name (txnq.topics) or create it first; nothing was written';
    END IF;
    IF NOT (v_allowed OR v_own_grant) THEN
        -- Grants to the role's groups, else TQ018: before any other error.
        PERFORM txnq.authorize_v2(p_topic_id, 'produce');
    END IF;
    IF v_count = 1 THEN
        -- NULL for a NULL payload, and for a one-element array that is not
        -- one-dimensional from 1 (told apart below).
        v_largest := octet_length(p_payloads[1]);
        v_bytes := v_largest;
    ELSE
        IF array_ndims(p_payloads) <> 1 OR array_lower(p_payloads, 1) <> 1 THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('append_v6: payloads must be a one-dimensional array indexed from 1, not %s',
                                 array_dims(p_payloads)),
                HINT = 'pass ARRAY[payload, ...]::bytea[]; nothing was written';
        END IF;
        -- v_largest NULL when any payload is.
        SELECT CASE WHEN count(p) = count(*) THEN max(octet_length(p)) END, sum(octet_length(p))
          INTO v_largest, v_bytes
          FROM unnest(p_payloads) AS p;
    END IF;
    IF v_largest > v_max_message_bytes OR v_largest IS NULL THEN
        IF v_largest IS NULL THEN
            IF array_ndims(p_payloads) <> 1 OR array_lower(p_payloads, 1) <> 1 THEN
                RAISE EXCEPTION USING ERRCODE = 'TQ005',
                    MESSAGE = format('append_v6: payloads must be a one-dimensional array indexed from 1, not %s',
                                     array_dims(p_payloads)),
                    HINT = 'pass ARRAY[payload, ...]::bytea[]; nothing was written';
            END IF;
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('append_v6: payload %s of %s is NULL', array_position(p_payloads, NULL),
                                 v_count),
                HINT = 'every message needs a payload (an empty one is ''''::bytea); nothing was written';
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'TQ004',
            MESSAGE = format('a payload of %s bytes is larger than the topic''s max message size of %s bytes',
                             v_largest, v_max_message_bytes),
            HINT = 'split the payload, or raise the topic''s max_message_bytes';
    END IF;

    IF p_producer_id IS NOT NULL THEN
        -- A retry of a written batch is recognised before any offset is taken.
        IF p_first_sequence <= v_last_sequence THEN
            IF p_first_sequence < 0 THEN
                RAISE EXCEPTION USING ERRCODE = 'TQ005',
                    MESSAGE = format('append_v6: first_sequence must be 0 or more, not %s', p_first_sequence),
                    HINT = 'number batches from the last_sequence + 1 that txnq.register_producer_v2 returned; '
                           'nothing was written';
            END IF;
            SELECT d.entry_offset, d.duplicate INTO entry_offset, duplicate
              FROM txnq.find_duplicate_v1(p_topic_id, p_partition, p_producer_id, p_first_sequence, v_count) d;
            RETURN;
        ELSIF p_first_sequence > coalesce(v_last_sequence, -1) + 1 THEN
            IF v_last_sequence IS NULL THEN
                -- No sequence row: a partition out of range, or no producer of
                -- this topic with this id, rather than a gap.
                PERFORM txnq.require_partition_v1(p_topic_id, p_partition);
                IF NOT EXISTS (SELECT 1 FROM txnq.producers pr
                                WHERE pr.producer_id = p_producer_id AND pr.topic_id = p_topic_id) THEN
                    RAISE EXCEPTION USING ERRCODE = 'TQ005',
                        MESSAGE = format('append_v6: producer id %s is not registered on topic id %s',
                                         p_producer_id, p_topic_id),
                        HINT = 'register it with txnq.register_producer_v2 on this topic and use the '
                               'producer_id it returns; nothing was written';
                END IF;
            END IF;
            RAISE EXCEPTION USING ERRCODE = 'TQ003',
                MESSAGE = format('sequence %s on partition %s skips ahead: the next expected is %s',
                                 p_first_sequence, p_partition, coalesce(v_last_sequence, -1) + 1),
                HINT = 'messages between were never written; resend them in order';
        END IF;
    END IF;

    -- Backlog quota: after the duplicate check (a retry of a written batch
    -- still gets its offset), before anything is written.
    IF v_quota_policy IN ('producer_hold', 'producer_error') OR v_refused THEN
        IF v_refused THEN
            -- A decided append outside the commit of its transaction (header).
            IF v_txn_state IS NULL THEN
                RAISE EXCEPTION USING ERRCODE = 'TQ014',
                    MESSAGE = format('transaction %s:%s does not exist', p_txn_tc, p_txn_seq),
                    HINT = 'pass the id txnq.open_txn_v3 returned; nothing was written';
            END IF;
            IF v_txn_state = 'OPEN' THEN
                RAISE EXCEPTION USING ERRCODE = 'TQ005',
                    MESSAGE = format('append_v6: transaction %s:%s is open: a decided append goes into its '
                                     'commit', p_txn_tc, p_txn_seq),
                    HINT = 'commit it first in the same PostgreSQL transaction (txnq.end_and_complete_txn_v1 '
                           'with commit true), or append with decided false; nothing was written';
            END IF;
            RAISE EXCEPTION USING ERRCODE = 'TQ013',
                MESSAGE = format('transaction %s:%s has ended (%s) in another PostgreSQL transaction than '
                                 'this decided append''s', p_txn_tc, p_txn_seq, lower(v_txn_state)),
                HINT = 'a decided append only goes into the commit made by the same PostgreSQL transaction; '
                       'open a new transaction; nothing was written';
        END IF;
        PERFORM txnq.require_partition_v1(p_topic_id, p_partition);  -- a bad partition is the first error
        RAISE EXCEPTION USING ERRCODE = CASE WHEN v_quota_policy = 'producer_hold' THEN 'TQ017' ELSE 'TQ016' END,
            MESSAGE = coalesce((SELECT q.reason FROM txnq.backlog_quota_exceeded q WHERE q.topic_id = p_topic_id),
                              format('topic id %s is over its backlog quota', p_topic_id)),
            HINT = 'consume and acknowledge that subscription''s backlog (or reset or delete the '
                   'subscription), or raise the topic''s backlog quota (txnq topics set-policy '
                   '--backlog-quota-size / --backlog-quota-age)';
    END IF;

    -- The head row lock: allocate the offset. Publish times never go backwards
    -- within a partition, so seek-by-time and TTL can rely on their order.
    UPDATE txnq.partitions h
       SET next_offset = h.next_offset + CASE WHEN v_marker THEN 2 ELSE 1 END,
           -- A transaction's entries, and everything after the first entry of
           -- an ongoing transaction, wait for the marker phase to be readable;
           -- a decided entry is committed already (up to its marker, if any).
           max_read_offset = CASE WHEN h.ongoing_txns = 0 AND (p_txn_tc IS NULL OR p_decided)
                                  THEN h.next_offset + CASE WHEN v_marker THEN 1 ELSE 0 END
                                  ELSE h.max_read_offset END,
           ledger_bytes = h.ledger_bytes + v_bytes,
           last_publish_time = greatest(clock_timestamp(), h.last_publish_time)
     WHERE h.topic_id = p_topic_id AND h.partition = p_partition
    RETURNING h.* INTO v_head;
    IF NOT FOUND THEN
        -- No head row: the partition is NULL or out of range.
        PERFORM txnq.require_partition_v1(p_topic_id, p_partition);
        RAISE EXCEPTION USING ERRCODE = 'TQ001',
            MESSAGE = format('partition %s of topic id %s does not exist', p_partition, p_topic_id);
    END IF;
    entry_offset := v_head.next_offset - CASE WHEN v_marker THEN 2 ELSE 1 END;
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
            -- First write of this producer on a partition added after it
            -- registered (or of an unknown producer: the entry insert refuses it).
            IF p_first_sequence < 0 THEN
                RAISE EXCEPTION USING ERRCODE = 'TQ005',
                    MESSAGE = format('append_v6: first_sequence must be 0 or more, not %s', p_first_sequence),
                    HINT = 'a producer numbers its batches from 0 on a partition it has not written yet; '
                           'nothing was written';
            END IF;
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
    -- a newer session (register_producer_v2 holds these rows while it bumps) is
    -- seen, and the fenced session writes nothing.
    INSERT INTO txnq.entries (topic_id, partition, entry_offset, entry_log_id, ledger_id, publish_time,
                              producer_id, first_sequence, message_count, payload_bytes,
                              payloads, keys, properties, event_times, txn_tc, txn_seq)
    SELECT p_topic_id, p_partition, entry_offset, v_active_entry_log, v_head.ledger_id, publish_time,
           p_producer_id, p_first_sequence, v_count, v_bytes,
           p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq
     WHERE p_producer_id IS NULL
        OR EXISTS (SELECT 1 FROM txnq.producers pr
                    WHERE pr.producer_id = p_producer_id AND pr.epoch = p_producer_epoch
                      AND pr.topic_id = p_topic_id);
    IF NOT FOUND THEN
        -- The error path only: an unknown producer, one of another topic, or
        -- an epoch it never had are bad arguments, not a fenced session.
        SELECT pr.topic_id, pr.epoch INTO v_producer_topic, v_producer_epoch
          FROM txnq.producers pr WHERE pr.producer_id = p_producer_id;
        IF v_producer_topic IS DISTINCT FROM p_topic_id THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('append_v6: producer id %s is not registered on topic id %s',
                                 p_producer_id, p_topic_id),
                HINT = 'register it with txnq.register_producer_v2 on this topic and use the producer_id '
                       'it returns; nothing was written';
        END IF;
        IF p_producer_epoch < 0 OR p_producer_epoch > v_producer_epoch THEN
            RAISE EXCEPTION USING ERRCODE = 'TQ005',
                MESSAGE = format('append_v6: producer %s has no epoch %s (its epochs are 0 to %s)',
                                 p_producer_id, p_producer_epoch, v_producer_epoch),
                HINT = 'pass the epoch txnq.register_producer_v2 returned; nothing was written';
        END IF;
        RAISE EXCEPTION USING ERRCODE = 'TQ002',
            MESSAGE = format('producer %s epoch %s was fenced by a newer session with the same name',
                             p_producer_id, p_producer_epoch),
            HINT = 'close this producer; only the newest producer of a name may write';
    END IF;

    IF p_txn_tc IS NOT NULL THEN
        IF p_decided THEN
            IF v_marker THEN
                -- A decided entry on a partition new to the transaction: its COMMIT
                -- marker right after it, and the partition in the transaction's log
                -- as the marker phase leaves it (end_and_complete_txn_v1).
                INSERT INTO txnq.entries (topic_id, partition, entry_offset, entry_log_id, ledger_id,
                                          publish_time, message_count, payload_bytes, payloads, txn_tc,
                                          txn_seq, marker)
                VALUES (p_topic_id, p_partition, entry_offset + 1, v_active_entry_log, v_head.ledger_id,
                        publish_time, 0, 0, '{}', p_txn_tc, p_txn_seq, 1);
                INSERT INTO txnq.txn_partitions (tc_id, txn_seq, topic_id, partition, first_offset,
                                                 marker_offset)
                VALUES (p_txn_tc, p_txn_seq, p_topic_id, p_partition, entry_offset, entry_offset + 1);
            END IF;
        ELSE
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
    END IF;

    -- Ledger rollover, with Pulsar's rules: full (entries or bytes) and older than
    -- the minimum rollover time, or older than the maximum rollover time.
    IF ((entry_offset - v_head.ledger_first_offset + 1 >= v_ledger_max_entries
         OR v_head.ledger_bytes >= v_ledger_max_bytes)
        AND extract(epoch FROM publish_time - v_head.ledger_opened_at) >= v_ledger_min_rollover_seconds)
       OR extract(epoch FROM publish_time - v_head.ledger_opened_at) >= v_ledger_max_rollover_seconds THEN
        PERFORM txnq.roll_ledger_v2(p_topic_id, p_partition,
                                    entry_offset + CASE WHEN v_marker THEN 1 ELSE 0 END);
    END IF;

    -- Wake a waiting consumer: one NOTIFY per wait, never one per message.
    -- Only when the entry is readable by read_committed consumers: entries of a
    -- transaction become readable at its marker, which wakes them then
    -- (read_uncommitted consumers see them at their next poll).
    IF v_waiters AND v_head.max_read_offset >= entry_offset THEN
        DELETE FROM txnq.consumer_waiters w WHERE w.topic_id = p_topic_id AND w.partition = p_partition;
        PERFORM pg_notify('txnq_topic_' || p_topic_id, p_partition::text);
    END IF;

    -- Sampled check (one append in 1024 per partition) whether the entry log is full or old.
    IF entry_offset % 1024 = 1023 OR (v_marker AND entry_offset % 1024 = 1022) THEN
        roll_entry_log := txnq.entry_log_needs_roll_v1();
    END IF;
END;
$$;
