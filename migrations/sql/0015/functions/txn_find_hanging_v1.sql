-- txnq.txn_find_hanging_v1: transactions that hang (`txnq txn
-- find-hanging`): open past their timeout by more than a grace period (no
-- scheduler runs), decided but unmarked, or holding a partition's max read
-- offset longer than the maximum transaction timeout (Kafka KIP-664). An
-- operator's view over every role's transactions: txnq admins only
-- (txnq.caller_is_admin_v1). Revision 0015.
--
-- Parameters: grace_seconds (a finite number from 0 to 3155760000, 100 years).
-- Returns rows (id, topic, partition, first_offset, max_read_offset, state,
--   opened_at, timeout_at, age_seconds, why), oldest first.
-- Locks: none. Errors: TQ018 for any other role; TQ005 a grace period out of range.
CREATE OR REPLACE FUNCTION txnq.txn_find_hanging_v1(p_grace_seconds double precision)
RETURNS TABLE (id text, topic text, partition integer, first_offset bigint, max_read_offset bigint,
               state text, opened_at timestamptz, timeout_at timestamptz, age_seconds double precision,
               why text)
LANGUAGE plpgsql STABLE AS $$
BEGIN
    IF NOT txnq.caller_is_admin_v1(txnq.caller_v1()) THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ018',
            MESSAGE = format('permission denied: role %s may not list every role''s hanging transactions',
                             quote_ident(txnq.caller_v1())),
            HINT = 'run it as a member of txnq_admin; a role sees its own transactions with txnq txn list';
    END IF;
    PERFORM txnq.require_number_v1('txn_find_hanging_v1: grace_seconds', p_grace_seconds, 0, 3155760000);
    RETURN QUERY
    SELECT o.tc_id || ':' || o.txn_seq, t.name, o.partition, o.first_offset,
           h.max_read_offset, tx.state, tx.opened_at, tx.timeout_at,
           extract(epoch FROM (now() - tx.opened_at))::float8,
           CASE WHEN tx.state IS NULL THEN 'no transaction row'
                WHEN tx.state = 'OPEN' AND tx.timeout_at < now() - make_interval(secs => p_grace_seconds)
                    THEN 'open past its timeout'
                WHEN tx.state <> 'OPEN' THEN 'decided but its marker is missing'
                ELSE 'holds the max read offset longer than the maximum timeout' END
      FROM txnq.txn_buffer_ongoing o
      JOIN txnq.partitions h USING (topic_id, partition)
      LEFT JOIN txnq.topics t USING (topic_id)
      LEFT JOIN txnq.transactions tx ON tx.tc_id = o.tc_id AND tx.txn_seq = o.txn_seq
     WHERE tx.state IS NULL
        OR (tx.state = 'OPEN' AND tx.timeout_at < now() - make_interval(secs => p_grace_seconds))
        OR (tx.state <> 'OPEN' AND tx.decided_at < now() - make_interval(secs => p_grace_seconds))
        OR tx.opened_at < now() - make_interval(secs => (SELECT c.txn_max_timeout_seconds FROM txnq.config c))
    UNION ALL
    SELECT tx.tc_id || ':' || tx.txn_seq, NULL, NULL, NULL, NULL, tx.state, tx.opened_at, tx.timeout_at,
           extract(epoch FROM (now() - tx.opened_at))::float8,
           'open past its timeout (no partition written)'
      FROM txnq.transactions tx
     WHERE tx.state = 'OPEN' AND tx.timeout_at < now() - make_interval(secs => p_grace_seconds)
       AND NOT EXISTS (SELECT 1 FROM txnq.txn_buffer_ongoing o
                        WHERE o.tc_id = tx.tc_id AND o.txn_seq = tx.txn_seq)
    ORDER BY 9 DESC;
END;
$$;
