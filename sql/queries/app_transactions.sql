-- Application transactions (txnq.app_transaction): every statement runs on the
-- application's own connection, inside its transaction. One call each.

-- name: stage_send
SELECT txnq.stage_send_v2(%(topic_id)s, %(partition)s, %(payloads)b, %(keys)b,
                          %(properties)s::text[]::jsonb[], %(event_times)s)

-- name: send_at_commit
SELECT txnq.send_at_commit_v2(%(topic)s, %(payload)b, %(key)b, %(properties)s::jsonb, %(partition)s)

-- name: stage_ack
SELECT txnq.stage_ack_v2(%(topic_id)s, %(partition)s, %(subscription_id)s, %(offsets)s,
                         %(batch_indexes)s, %(batch_sizes)s)

-- name: publish_staged
SELECT stage_id, topic_id, partition, entry_offset, first_batch_index FROM txnq.publish_staged_v2()

-- name: discard_staged
-- abort(): the caller's transaction goes on without what txnq staged in it.
SELECT txnq.discard_staged_v1()
