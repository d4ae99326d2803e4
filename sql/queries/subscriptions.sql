-- Shared and key_shared subscriptions (revision 0008, docs/subscriptions.md):
-- each query is one call of a versioned txnq function, one round trip.

-- name: claim
SELECT partition, entry_offset, batch_index, batch_size, publish_time, producer_id, sequence,
       payload, key, properties, event_time, redelivery_count
  FROM txnq.claim_v6(%(topic_id)s, %(subscription_id)s, %(consumer_id)s, %(max_messages)s,
                     %(ack_timeout_seconds)s, %(max_redeliver_count)s, %(dead_letter_topic_id)s)

-- name: ack_shared
SELECT txnq.ack_shared_v5(%(topic_id)s, %(partition)s, %(subscription_id)s, %(offsets)s::bigint[],
                          %(batch_indexes)s::int[], %(txn_tc)s, %(txn_seq)s)

-- name: ack_shared_lazy
-- ack_shared, committed without waiting for the WAL flush (as ack_lazy in
-- data_path.sql: txnq.consumer.delivery.Delivery.ack_query says why).
SELECT txnq.ack_shared_v5(%(topic_id)s, %(partition)s, %(subscription_id)s, %(offsets)s::bigint[],
                          %(batch_indexes)s::int[], %(txn_tc)s, %(txn_seq)s)
  FROM pg_catalog.set_config('synchronous_commit', 'off', true) AS lazy

-- name: nack_shared
SELECT txnq.nack_shared_v3(%(topic_id)s, %(partition)s, %(subscription_id)s, %(consumer_id)s,
                           %(offsets)s::bigint[], %(batch_indexes)s::int[], %(delays)s::float8[])

-- name: release_claims
SELECT txnq.release_claims_v3(%(subscription_id)s, %(consumer_id)s)

-- name: next_visible_claim
-- Seconds until the next outstanding message of the subscription becomes
-- deliverable (a nack delay, an ack timeout, a delayed message); NULL: none.
SELECT txnq.next_visible_claim_v2(%(subscription_id)s)

-- name: append_delayed_positional
-- append_delayed_v2 with positional parameters: those of append_positional, then deliver_at.
SELECT entry_offset, publish_time, duplicate, roll_entry_log
  FROM txnq.append_delayed_v2(%s, %s, %s, %s, %s, %b, %b, %s::text[]::jsonb[], %s, %s, %s, %s)

-- name: dead_letter
-- A claimed message this consumer cannot decode, moved to the dead-letter topic
-- of its DeadLetterPolicy (true: moved; false: acknowledged or moved meanwhile).
SELECT txnq.dead_letter_v3(%(topic_id)s, %(partition)s, %(subscription_id)s, %(entry_offset)s,
                           %(batch_index)s, %(dead_letter_topic_id)s, %(reason)s)
