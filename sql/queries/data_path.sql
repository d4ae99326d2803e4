-- The data path: each query is one call of a versioned txnq function, one round trip.

-- name: append
SELECT entry_offset, publish_time, duplicate, roll_entry_log
  FROM txnq.append_v6(%(topic_id)s, %(partition)s, %(producer_id)s, %(epoch)s, %(first_sequence)s,
                      %(payloads)b, %(keys)b, %(properties)s::text[]::jsonb[], %(event_times)s,
                      %(txn_tc)s, %(txn_seq)s)

-- name: append_positional
-- The same call with positional parameters (the producer's hot path): topic_id,
-- partition, producer_id, epoch, first_sequence, payloads, keys, properties,
-- event_times, txn_tc, txn_seq.
SELECT entry_offset, publish_time, duplicate, roll_entry_log
  FROM txnq.append_v6(%s, %s, %s, %s, %s, %b, %b, %s::text[]::jsonb[], %s, %s, %s)

-- name: append_positional_unflushed
-- append_positional in a client transaction: committed without waiting for
-- the WAL flush (synchronous_commit off for this statement's transaction
-- only); the transaction's decision waits for it (open_txn_unflushed in
-- transactions.sql says why that is safe).
SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
  FROM pg_catalog.set_config('synchronous_commit', 'off', true) AS lazy,
       txnq.append_v6(%s, %s, %s, %s, %s, %b, %b, %s::text[]::jsonb[], %s, %s, %s) AS a

-- name: append_decided
-- append_positional into the commit of its client transaction, made by the
-- same PostgreSQL transaction just before (end_and_complete_txn first): a
-- commit that carries the producer's last batches (txnq.producer.decided).
-- Committed with that transaction, durably.
SELECT entry_offset, publish_time, duplicate, roll_entry_log
  FROM txnq.append_v6(%s, %s, %s, %s, %s, %b, %b, %s::text[]::jsonb[], %s, %s, %s, true)

-- name: roll_entry_log
SELECT txnq.roll_entry_log_v4(%(force)s)

-- name: register_producer
SELECT producer_id, epoch, partition, last_sequence
  FROM txnq.register_producer_v2(%(topic_id)s, %(name)s)

-- name: fetch
SELECT entry_offset, publish_time, producer_id, first_sequence, message_count,
       payloads, keys, properties, event_times, acked_batch_indexes
  FROM txnq.fetch_v4(%(topic_id)s, %(partition)s, %(subscription_id)s, %(after_offset)s,
                     %(max_entries)s, %(max_bytes)s)

-- name: cursor_generation
-- Run after ack_v3 in the same PostgreSQL transaction: the cursor row is locked,
-- so this reads the latest committed generation (a cumulative ack in a
-- transaction checks that no rewind happened since its message was delivered).
SELECT txnq.cursor_generation_v1(%(topic_id)s, %(partition)s, %(subscription_id)s) AS generation

-- name: ack
SELECT txnq.ack_v3(%(topic_id)s, %(partition)s, %(subscription_id)s, %(cumulative_offset)s,
                   %(offsets)s::bigint[], %(batch_indexes)s::int[], %(batch_sizes)s::int[],
                   %(cumulative_batch_index)s, %(cumulative_batch_size)s, %(txn_tc)s, %(txn_seq)s)

-- name: ack_lazy
-- ack, committed without waiting for the WAL flush: synchronous_commit is off
-- for this statement's transaction only (set_config's is_local; a FROM item,
-- so it is set before ack_v3 runs). For acks outside a transaction: why, and
-- what it gives up, in txnq.consumer.delivery.Delivery.ack_query.
SELECT txnq.ack_v3(%(topic_id)s, %(partition)s, %(subscription_id)s, %(cumulative_offset)s,
                   %(offsets)s::bigint[], %(batch_indexes)s::int[], %(batch_sizes)s::int[],
                   %(cumulative_batch_index)s, %(cumulative_batch_size)s, %(txn_tc)s, %(txn_seq)s)
  FROM pg_catalog.set_config('synchronous_commit', 'off', true) AS lazy

-- name: ack_lazy_positional
-- ack_lazy with positional parameters, in ack_v3's order (a consumer's
-- acknowledgement outside a transaction): run as the prepared statement
-- ack_lazy_prepared (prepared.sql) on a sync connection.
SELECT txnq.ack_v3(%s, %s, %s, %s, %s::bigint[], %s::int[], %s::int[], %s, %s, %s, %s)
  FROM pg_catalog.set_config('synchronous_commit', 'off', true) AS lazy

-- name: seek
SELECT txnq.seek_v2(%(topic_id)s, %(partition)s, %(subscription_id)s, %(offset)s, %(time)s)

-- name: subscribe
SELECT txnq.subscribe_v2(%(topic_id)s, %(name)s, %(subscription_type)s, %(isolation)s,
                         %(initial_position)s)

-- name: unsubscribe
SELECT txnq.unsubscribe_v2(%(subscription_id)s, %(except_consumer_id)s, %(force)s)

-- name: register_consumer
SELECT txnq.register_consumer_v2(%(subscription_id)s, %(name)s, %(priority)s, %(lease_seconds)s)

-- name: heartbeat_consumer
SELECT consumer_id, name, priority FROM txnq.heartbeat_consumer_v2(%(consumer_id)s, %(lease_seconds)s)

-- name: close_consumer
SELECT txnq.close_consumer_v1(%(topic_id)s, %(consumer_id)s)

-- name: register_waiters
SELECT txnq.register_waiters_v1(%(topic_id)s, %(consumer_id)s, %(partitions)s::int[])

-- name: cursor_positions
SELECT partition, mark_delete_offset, generation
  FROM txnq.cursor_positions_v1(%(topic_id)s, %(subscription_id)s)
