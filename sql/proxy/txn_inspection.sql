-- Transaction inspection over the whole cluster (docs/cluster.md,
-- "Transactions across shards", "Inspecting transactions"): the proxy's
-- txnq.transaction_status view and txn_describe_v1, txn_list_v1,
-- txn_describe_partitions_v1, txn_describe_subscriptions_v1, txn_history_v1
-- and txn_find_hanging_v1, with the shard functions' names, signatures and
-- results (`txnq txn list / describe / find-hanging / abort`,
-- client.admin.describe_transaction and list_transactions, unchanged).
-- Run by `txnq cluster init` after txnq_cluster.install_refusals (which made
-- them refuse: same signatures and results, so CREATE OR REPLACE takes them)
-- and after views.sql and views_shards.sql.
--
-- Where a transaction's rows live (transactions.sql): its home shard
-- (txnq_cluster.home_shard(tc_id)) numbered, decided and finished it and keeps
-- its transactional id and epoch; every other shard keeps a mirror row of
-- txnq.transactions with the same id, and each shard its own txn_partitions,
-- txn_subscriptions, pending_acks and txn_log rows. So:
--
--   - a transaction is one row: its home shard's (state, reason, times,
--     transactional id, epoch, ages), with partitions, partitions_marked,
--     subscriptions and subscriptions_done added up over every shard (home
--     and mirrors). A transaction whose home row is gone (each shard's
--     history purge forgets finished ones on its own) does not show;
--   - its partitions and subscriptions: every shard's rows (each partition's
--     on its owner);
--   - its history: the home shard's log as it is, then each participant
--     shard's own lines (mirror opened, prepared, decision applied, finished)
--     with `shard N (participant)` before their detail, in time order;
--   - hanging transactions: each shard's own (a hanging transaction holds
--     back read_committed on that shard's partitions), unioned; a
--     transaction open past its timeout without partitions shows once, from
--     its home shard when that shard lists it;
--   - aborting one (`txnq txn abort`) needs nothing here: its end_txn_v3 and
--     complete_txn_v2 are the proxy's (transactions.sql), which decide on the
--     home shard and apply the abort on every other shard.
--
-- Every per-shard call runs the shard's own function (its argument checks,
-- TQ005, and its permission checks, TQ018, on each shard; a mirror has the
-- home row's opener), except the view's, which reads each shard's
-- transaction_status. PL/Proxy receives the rows as text (timestamps).

-- ---------------------------------------------------------------- on one shard

CREATE OR REPLACE FUNCTION txnq_cluster.transaction_status_on(p_shard integer)
RETURNS SETOF txnq.transaction_status
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT * FROM txnq.transaction_status;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_describe_on(p_shard integer, p_tc_id integer, p_txn_seq bigint)
RETURNS SETOF txnq.transaction_status
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT * FROM txnq.txn_describe_v1(p_tc_id, p_txn_seq);
$$;

-- The transactions a shard is home to (tc_id & p_mask = p_shard) that
-- txn_list_v1 lists there, newest first, at most p_limit. A limit out of
-- range reaches txn_list_v1 as it is, for its TQ005 (LIMIT at least 1, so
-- that it runs); a valid one is applied after the home filter (the shard's
-- mirrors must not crowd its own out).
CREATE OR REPLACE FUNCTION txnq_cluster.txn_list_home_on(
    p_shard integer, p_mask integer, p_state text, p_older_than double precision, p_limit integer)
RETURNS SETOF txnq.transaction_status
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT l.*
      FROM txnq.txn_list_v1(p_state, p_older_than,
                            CASE WHEN p_limit IS NULL OR p_limit < 1 THEN p_limit ELSE 2147483647 END) l
     WHERE (l.tc_id & 2147483647) & p_mask = p_shard
     ORDER BY l.opened_at DESC, l.tc_id, l.txn_seq
     LIMIT greatest(p_limit, 1);
$$;

-- A shard's counts of the given transactions (its txn_describe_v1 of each):
-- what it holds of them, home row or mirror; none for a transaction it has
-- no row of.
CREATE OR REPLACE FUNCTION txnq_cluster.txn_counts_on(p_shard integer, p_tc_ids integer[], p_txn_seqs bigint[])
RETURNS TABLE (tc_id integer, txn_seq bigint, partitions bigint, partitions_marked bigint,
               subscriptions bigint, subscriptions_done bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT d.tc_id, d.txn_seq, d.partitions, d.partitions_marked, d.subscriptions, d.subscriptions_done
      FROM unnest(p_tc_ids, p_txn_seqs) AS i(tc_id, txn_seq),
           LATERAL txnq.txn_describe_v1(i.tc_id, i.txn_seq) d;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_describe_partitions_on(
    p_shard integer, p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (topic text, partition integer, first_offset bigint, marker_offset bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT d.topic, d.partition, d.first_offset, d.marker_offset
      FROM txnq.txn_describe_partitions_v1(p_tc_id, p_txn_seq) d;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_describe_subscriptions_on(
    p_shard integer, p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (topic text, partition integer, subscription text, done boolean, pending_acks bigint)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT d.topic, d.partition, d.subscription, d.done, d.pending_acks
      FROM txnq.txn_describe_subscriptions_v1(p_tc_id, p_txn_seq) d;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_history_on(p_shard integer, p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (at timestamptz, state text, reason text, detail text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT h.at, h.state, h.reason, h.detail FROM txnq.txn_history_v1(p_tc_id, p_txn_seq) h;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_find_hanging_on(p_shard integer, p_grace_seconds double precision)
RETURNS TABLE (id text, topic text, partition integer, first_offset bigint, max_read_offset bigint,
               state text, opened_at timestamptz, timeout_at timestamptz, age_seconds double precision,
               why text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT h.id, h.topic, h.partition, h.first_offset, h.max_read_offset, h.state, h.opened_at,
           h.timeout_at, h.age_seconds, h.why
      FROM txnq.txn_find_hanging_v1(p_grace_seconds) h;
$$;

-- ---------------------------------------------------------------- the view

-- Every shard's transaction_status: each transaction's home row, its counts
-- added up over every shard. Reads every shard's whole view (a WHERE on the
-- proxy's view does not reach the shards): for one transaction call
-- txnq.txn_describe_v1, for the newest txnq.txn_list_v1.
CREATE OR REPLACE VIEW txnq.transaction_status AS
WITH per_shard AS MATERIALIZED (
    SELECT s AS shard, r.*
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.transaction_status_on(s) r
), summed AS (
    SELECT c.tc_id, c.txn_seq,
           sum(c.partitions)::bigint AS partitions,
           sum(c.partitions_marked)::bigint AS partitions_marked,
           sum(c.subscriptions)::bigint AS subscriptions,
           sum(c.subscriptions_done)::bigint AS subscriptions_done
      FROM per_shard c
     GROUP BY c.tc_id, c.txn_seq
)
SELECT h.id, h.tc_id, h.txn_seq, h.state, h.reason, h.opened_at, h.timeout_at, h.decided_at,
       h.completed_at, h.timeout_seconds, h.transactional_id, h.producer_epoch,
       c.partitions, c.partitions_marked, c.subscriptions, c.subscriptions_done,
       h.age_seconds, h.overdue_seconds, h.time_to_timeout_seconds
  FROM per_shard h
  JOIN summed c ON c.tc_id = h.tc_id AND c.txn_seq = h.txn_seq
 WHERE h.shard = txnq_cluster.home_shard(h.tc_id);

-- ---------------------------------------------------------------- the functions

-- One transaction: its home shard's row, counts added up over every shard
-- (each shard's txn_describe_v1, which checks the caller there). None for an
-- unknown transaction (or one whose home row is gone).
CREATE OR REPLACE FUNCTION txnq.txn_describe_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS SETOF txnq.transaction_status
LANGUAGE sql STABLE AS $$
    WITH per_shard AS MATERIALIZED (
        SELECT s AS shard, r.*
          FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
               LATERAL txnq_cluster.txn_describe_on(s, p_tc_id, p_txn_seq) r
    )
    SELECT h.id, h.tc_id, h.txn_seq, h.state, h.reason, h.opened_at, h.timeout_at, h.decided_at,
           h.completed_at, h.timeout_seconds, h.transactional_id, h.producer_epoch,
           (SELECT sum(c.partitions) FROM per_shard c)::bigint,
           (SELECT sum(c.partitions_marked) FROM per_shard c)::bigint,
           (SELECT sum(c.subscriptions) FROM per_shard c)::bigint,
           (SELECT sum(c.subscriptions_done) FROM per_shard c)::bigint,
           h.age_seconds, h.overdue_seconds, h.time_to_timeout_seconds
      FROM per_shard h
     WHERE h.shard = txnq_cluster.home_shard(h.tc_id);
$$;

-- Transactions newest first, each from its home shard (txn_list_v1 there:
-- its argument checks, state and age filters and who sees what), merged and
-- cut to p_limit here; then their counts added up over every shard.
CREATE OR REPLACE FUNCTION txnq.txn_list_v1(p_state text, p_older_than double precision, p_limit integer)
RETURNS SETOF txnq.transaction_status
LANGUAGE sql STABLE AS $$
    WITH homes AS MATERIALIZED (
        SELECT r.*
          FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
               LATERAL txnq_cluster.txn_list_home_on(s, txnq_cluster.shard_count() - 1, p_state,
                                                     p_older_than, p_limit) r
         ORDER BY r.opened_at DESC, r.tc_id, r.txn_seq
         -- at least 1, so that shard 0 is asked and refuses a bad limit (TQ005)
         LIMIT greatest(p_limit, 1)
    ), ids AS (
        SELECT array_agg(h.tc_id) AS tc_ids, array_agg(h.txn_seq) AS txn_seqs FROM homes h
    ), counts AS MATERIALIZED (
        SELECT c.tc_id, c.txn_seq,
               sum(c.partitions)::bigint AS partitions,
               sum(c.partitions_marked)::bigint AS partitions_marked,
               sum(c.subscriptions)::bigint AS subscriptions,
               sum(c.subscriptions_done)::bigint AS subscriptions_done
          FROM ids, generate_series(0, txnq_cluster.shard_count() - 1) s,
               LATERAL txnq_cluster.txn_counts_on(s, ids.tc_ids, ids.txn_seqs) c
         WHERE ids.tc_ids IS NOT NULL
         GROUP BY c.tc_id, c.txn_seq
    )
    SELECT h.id, h.tc_id, h.txn_seq, h.state, h.reason, h.opened_at, h.timeout_at, h.decided_at,
           h.completed_at, h.timeout_seconds, h.transactional_id, h.producer_epoch,
           coalesce(c.partitions, h.partitions), coalesce(c.partitions_marked, h.partitions_marked),
           coalesce(c.subscriptions, h.subscriptions), coalesce(c.subscriptions_done, h.subscriptions_done),
           h.age_seconds, h.overdue_seconds, h.time_to_timeout_seconds
      FROM homes h
      LEFT JOIN counts c ON c.tc_id = h.tc_id AND c.txn_seq = h.txn_seq
     ORDER BY h.opened_at DESC, h.tc_id, h.txn_seq;
$$;

-- The partitions a transaction produced to: every shard's rows (each
-- partition's on the shard that owns it).
CREATE OR REPLACE FUNCTION txnq.txn_describe_partitions_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (topic text, partition integer, first_offset bigint, marker_offset bigint)
LANGUAGE sql STABLE AS $$
    SELECT d.topic, d.partition, d.first_offset, d.marker_offset
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.txn_describe_partitions_on(s, p_tc_id, p_txn_seq) d
     ORDER BY d.topic, d.partition, s;
$$;

-- The subscriptions a transaction acknowledged on, with its pending acks:
-- every shard's rows (pending acks are held on the partition's shard).
CREATE OR REPLACE FUNCTION txnq.txn_describe_subscriptions_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (topic text, partition integer, subscription text, done boolean, pending_acks bigint)
LANGUAGE sql STABLE AS $$
    SELECT d.topic, d.partition, d.subscription, d.done, d.pending_acks
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.txn_describe_subscriptions_on(s, p_tc_id, p_txn_seq) d
     ORDER BY d.topic, d.partition, d.subscription, s;
$$;

-- A transaction's history: the home shard's lines as they are, and each
-- other shard's lines with `shard N (participant)` before their detail, in
-- time order (the home shard's first at the same instant).
CREATE OR REPLACE FUNCTION txnq.txn_history_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (at timestamptz, state text, reason text, detail text)
LANGUAGE sql STABLE AS $$
    SELECT h.at, h.state, h.reason,
           CASE WHEN s = txnq_cluster.home_shard(p_tc_id) THEN h.detail
                ELSE format('shard %s (participant)', s) || coalesce(': ' || h.detail, '') END
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL txnq_cluster.txn_history_on(s, p_tc_id, p_txn_seq) h
     ORDER BY h.at, s <> txnq_cluster.home_shard(p_tc_id), s;
$$;

-- Hanging transactions: every shard's txn_find_hanging_v1 (admins only, its
-- checks on each shard), unioned: a partition's row from its shard, with
-- that shard's state of the transaction. A transaction open past its timeout
-- that wrote no partition is listed by its home shard and by its mirrors:
-- shown once, the home shard's line when there is one. Oldest first.
CREATE OR REPLACE FUNCTION txnq.txn_find_hanging_v1(p_grace_seconds double precision)
RETURNS TABLE (id text, topic text, partition integer, first_offset bigint, max_read_offset bigint,
               state text, opened_at timestamptz, timeout_at timestamptz, age_seconds double precision,
               why text)
LANGUAGE sql STABLE AS $$
    WITH per_shard AS MATERIALIZED (
        SELECT s AS shard, h.*
          FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
               LATERAL txnq_cluster.txn_find_hanging_on(s, p_grace_seconds) h
    ), merged AS (
        SELECT p.id, p.topic, p.partition, p.first_offset, p.max_read_offset, p.state, p.opened_at,
               p.timeout_at, p.age_seconds, p.why
          FROM per_shard p
         WHERE p.partition IS NOT NULL
        UNION ALL
        (SELECT DISTINCT ON (p.id)
                p.id, p.topic, p.partition, p.first_offset, p.max_read_offset, p.state, p.opened_at,
                p.timeout_at, p.age_seconds, p.why
           FROM per_shard p
          WHERE p.partition IS NULL
          ORDER BY p.id, p.shard <> txnq_cluster.home_shard(split_part(p.id, ':', 1)::integer), p.shard)
    )
    SELECT m.* FROM merged m ORDER BY m.age_seconds DESC, m.id, m.topic, m.partition;
$$;

-- ---------------------------------------------------------------- routing

INSERT INTO txnq_cluster.routing (function_name, rule, note) VALUES
    ('transaction_status', 'summed', 'view: each transaction''s home-shard row, partitions and subscriptions '
                                     'added up over every shard (reads every shard''s whole view)'),
    ('txn_describe_v1', 'summed', 'the home shard''s row, partitions and subscriptions added up over every shard'),
    ('txn_list_v1', 'summed', 'each transaction from its home shard, merged newest first and cut to the limit; '
                              'partitions and subscriptions added up over every shard'),
    ('txn_describe_partitions_v1', 'union', 'every shard''s rows (each partition''s on its owner)'),
    ('txn_describe_subscriptions_v1', 'union', 'every shard''s rows (pending acks on the partition''s shard)'),
    ('txn_history_v1', 'union', 'the home shard''s log, then each participant shard''s lines marked '
                                '"shard N (participant)", in time order'),
    ('txn_find_hanging_v1', 'union', 'every shard''s hanging transactions (each holds back its own partitions)')
ON CONFLICT (function_name) DO UPDATE SET rule = EXCLUDED.rule, note = EXCLUDED.note;
