-- Statements run by txnq.database.prepared: prepared once per connection and
-- executed through libpq directly (the producer's hot path). Parameters are
-- $n with their types cast in the text, so the client sends no type OIDs;
-- each has the same call and result as the cursor query it stands in for.

-- name: append_prepared
-- append_positional (data_path.sql) as a prepared statement: topic_id,
-- partition, producer_id, epoch, first_sequence, payloads, keys, properties
-- (JSON text), event_times, txn_tc, txn_seq.
SELECT entry_offset, publish_time, duplicate, roll_entry_log
  FROM txnq.append_v6($1::integer, $2::integer, $3::bigint, $4::integer, $5::bigint, $6::bytea[],
                      $7::bytea[], $8::text[]::jsonb[], $9::timestamptz[], $10::integer, $11::bigint)

-- name: ack_lazy_prepared
-- ack_lazy_positional (data_path.sql) as a prepared statement: topic_id,
-- partition, subscription_id, cumulative_offset, offsets, batch_indexes,
-- batch_sizes, cumulative_batch_index, cumulative_batch_size, txn_tc, txn_seq.
SELECT txnq.ack_v3($1::integer, $2::integer, $3::bigint, $4::bigint, $5::bigint[], $6::integer[],
                   $7::integer[], $8::integer, $9::integer, $10::integer, $11::bigint)
  FROM pg_catalog.set_config('synchronous_commit', 'off', true) AS lazy

-- name: append_prepared_unflushed
-- append_positional_unflushed (data_path.sql) as a prepared statement: the
-- parameters of append_prepared; committed without waiting for the WAL flush.
SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
  FROM pg_catalog.set_config('synchronous_commit', 'off', true) AS lazy,
       txnq.append_v6($1::integer, $2::integer, $3::bigint, $4::integer, $5::bigint, $6::bytea[],
                      $7::bytea[], $8::text[]::jsonb[], $9::timestamptz[], $10::integer, $11::bigint) AS a

-- name: open_txn_prepared
-- open_txn_unflushed (transactions.sql) as a prepared statement: tc_id
-- (NULL: round robin), timeout_seconds.
SELECT tc_id, txn_seq, timeout_at FROM txnq.open_txn_v3($1::integer, $2::double precision, true)

-- name: end_and_complete_txn_prepared
-- end_and_complete_txn (transactions.sql) as a prepared statement: txn_tc,
-- txn_seq, commit, reason.
SELECT state, reason, final_state
  FROM txnq.end_and_complete_txn_v1($1::integer, $2::bigint, $3::boolean, $4::text)
