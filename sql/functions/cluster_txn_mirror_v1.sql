-- txnq.cluster_txn_mirror_v1: a cluster's copy of a transaction on a
-- participant shard (docs/cluster.md, "Transactions across shards"). The
-- proxy's open_txn_v3 numbers the transaction on its home shard (open_txn_v3
-- there) and then calls this on every other shard, so that appends, acks and
-- read_committed filtering work on each shard as on one server: the mirror is
-- an OPEN row of txnq.transactions with the same id, timeout and opener. It
-- records this shard's incarnation (open_txn_v3's unflushed way): a crash of
-- this shard before the commit's prepare step (cluster_txn_prepare_v1) makes
-- that step vote for an abort. The mirror is never bound to a transactional
-- id (fencing decides on the home shard only). The coordinator row of tc_id
-- here is moved past txn_seq, so a transaction opened on this shard directly
-- never takes the id. Revision 0030.
--
-- Parameters: (tc_id, txn_seq) the id the home shard gave (tc_id below
--   tc_count, txn_seq 1 to 2^63 - 2), timeout_seconds and timeout_at as the
--   home shard set them; none NULL, timeout_seconds above 0 and finite.
-- Returns nothing. Idempotent: a mirror that exists is left as it is.
-- Permissions: none to check (the transaction names no topic yet; every call
--   that then names it checks txnq.authorize_txn_v1).
-- Locks: the coordinator row of tc_id, for this statement.
-- Errors: TQ005 NULL argument or timeout out of range.
CREATE OR REPLACE FUNCTION txnq.cluster_txn_mirror_v1(
    p_tc_id integer,
    p_txn_seq bigint,
    p_timeout_seconds double precision,
    p_timeout_at timestamptz
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_incarnation uuid;
BEGIN
    IF p_tc_id IS NULL OR p_tc_id < 0 OR p_tc_id >= (SELECT c.tc_count FROM txnq.config c)
       OR p_txn_seq IS NULL OR p_txn_seq < 1 OR p_txn_seq >= 9223372036854775807 OR p_timeout_at IS NULL
       OR p_timeout_seconds IS NULL OR NOT p_timeout_seconds > 0 OR p_timeout_seconds = 'Infinity' THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ005',
            MESSAGE = format('cluster_txn_mirror_v1: tc_id (%s), txn_seq (%s), timeout_seconds (%s) and '
                             'timeout_at (%s) must be given, tc_id a coordinator of this server, txn_seq and timeout above 0',
                             coalesce(p_tc_id::text, 'NULL'), coalesce(p_txn_seq::text, 'NULL'),
                             coalesce(p_timeout_seconds::text, 'NULL'), coalesce(p_timeout_at::text, 'NULL')),
            HINT = 'the cluster proxy passes what the home shard''s open_txn_v3 returned; nothing was opened';
    END IF;
    PERFORM pg_catalog.set_config('synchronous_commit', 'off', true);
    SELECT i.incarnation INTO v_incarnation FROM txnq.server_incarnation i;
    IF NOT FOUND THEN
        INSERT INTO txnq.server_incarnation AS i (singleton) VALUES (true)
        ON CONFLICT (singleton) DO UPDATE SET singleton = true
        RETURNING i.incarnation INTO v_incarnation;
    END IF;
    INSERT INTO txnq.coordinators AS c (tc_id, next_txn_seq, reserved_txn_seq)
    VALUES (p_tc_id, p_txn_seq + 1, p_txn_seq)
    ON CONFLICT ON CONSTRAINT coordinators_pkey DO UPDATE
       SET next_txn_seq = greatest(c.next_txn_seq, EXCLUDED.next_txn_seq),
           reserved_txn_seq = greatest(c.reserved_txn_seq, EXCLUDED.reserved_txn_seq)
     WHERE c.next_txn_seq <= p_txn_seq OR c.reserved_txn_seq < p_txn_seq;
    INSERT INTO txnq.transactions (tc_id, txn_seq, timeout_seconds, timeout_at, incarnation)
    VALUES (p_tc_id, p_txn_seq, p_timeout_seconds, p_timeout_at, v_incarnation)
    ON CONFLICT DO NOTHING;
    IF FOUND THEN
        INSERT INTO txnq.txn_log (tc_id, txn_seq, state, detail)
        VALUES (p_tc_id, p_txn_seq, 'OPEN', 'cluster participant (mirror of the home shard''s transaction)');
    ELSIF NOT EXISTS (SELECT 1 FROM txnq.transactions t
                       WHERE t.tc_id = p_tc_id AND t.txn_seq = p_txn_seq AND t.timeout_at = p_timeout_at) THEN
        -- Another transaction holds the id here (opened on this shard
        -- directly, numbered by this shard): never adopt it.
        RAISE EXCEPTION USING ERRCODE = 'TQ031',
            MESSAGE = format('transaction id %s:%s is taken on this shard by a transaction opened here directly',
                             p_tc_id, p_txn_seq),
            HINT = 'the proxy opens the transaction under the next id; open a cluster''s transactions through the proxy';
    END IF;
END;
$$;
