-- Transactions across a cluster's shards (docs/cluster.md, "Transactions
-- across shards"; issue 19 item 3), with the names and signatures of the
-- shard functions the Python client and the coordinator worker call.
--
-- The home shard of coordinator tc is txnq_cluster.home(tc) & (N - 1): the
-- transaction is numbered there (open_txn_v3), its decision is written there
-- durably (cluster_end_txn_v1, end_txn_v3's flush), and it is finished there
-- last. Every other shard keeps a mirror (cluster_txn_mirror_v1) made at the
-- open, so the partitions' appends, acks and read_committed filtering run on
-- their own shard as on one server (append_v5 and ack_v3 are routed by
-- partition as outside a transaction). A commit first asks every other shard
-- to prepare (cluster_txn_prepare_v1: still open, in time, no crash since the
-- open; flushes its writes; lifts its timeout there), then decides on the
-- home shard (an abort if any shard vetoed), then applies the decision on
-- each other shard with its markers and pending acks (cluster_txn_apply_v1,
-- idempotent), then completes and finishes on the home shard. A decided,
-- unfinished transaction is finished by the coordinator worker through the
-- proxy (txnq.cluster.transactions.run_cluster_marker_phase). Each PL/Proxy
-- call commits on its shard on its own: the order above is the protocol.

-- The hash of a coordinator's home shard (PL/Proxy applies & (N - 1)); a NULL
-- routes to shard 0, whose function rejects it with its own TQ005.
CREATE OR REPLACE FUNCTION txnq_cluster.home(p_tc_id integer)
RETURNS integer
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT coalesce(p_tc_id & 2147483647, 0)
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.home_shard(p_tc_id integer)
RETURNS integer
LANGUAGE sql STABLE AS $$
    SELECT txnq_cluster.home(p_tc_id) & (txnq_cluster.shard_count() - 1)
$$;

-- ---------------------------------------------------------------- on one shard

CREATE OR REPLACE FUNCTION txnq_cluster.open_txn_on_home(
    p_tc_id integer, p_timeout_seconds double precision, p_unflushed boolean,
    OUT tc_id integer, OUT txn_seq bigint, OUT timeout_at timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.home(p_tc_id);
    SELECT o.tc_id, o.txn_seq, o.timeout_at FROM txnq.open_txn_v3(p_tc_id, p_timeout_seconds, p_unflushed) o;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_mirror_on(
    p_shard integer, p_tc_id integer, p_txn_seq bigint, p_timeout_seconds double precision,
    p_timeout_at timestamptz)
RETURNS integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT 1 FROM txnq.cluster_txn_mirror_v1(p_tc_id, p_txn_seq, p_timeout_seconds, p_timeout_at);
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_prepare_on(p_shard integer, p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT txnq.cluster_txn_prepare_v1(p_tc_id, p_txn_seq);
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.end_txn_on_home(
    p_tc_id integer, p_txn_seq bigint, p_commit boolean, p_reason text, p_notify boolean, p_veto text,
    OUT state text, OUT reason text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.home(p_tc_id);
    SELECT e.state, e.reason FROM txnq.cluster_end_txn_v1(p_tc_id, p_txn_seq, p_commit, p_reason, p_notify, p_veto) e;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_apply_on(
    p_shard integer, p_tc_id integer, p_txn_seq bigint, p_commit boolean, p_reason text)
RETURNS text
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT txnq.cluster_txn_apply_v1(p_tc_id, p_txn_seq, p_commit, p_reason);
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.complete_txn_on_home(p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.home(p_tc_id);
    SELECT txnq.complete_txn_v2(p_tc_id, p_txn_seq);
$$;

-- A shard PL/Proxy could not reach (its error is internal_error, XX000, with
-- libpq's words): raised again as connection_failure (08006), so the client
-- treats it as PostgreSQL unreachable (commit() retries, then raises
-- ServerUnavailableError) and the coordinator worker as an outage. Any other
-- error is raised as it is.
CREATE OR REPLACE FUNCTION txnq_cluster.raise_unreachable(p_message text, p_detail text, p_context text)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF p_message ~ '(PQconnectPoll|PQconsumeInput|PQsendQuery|connection|server closed|timeout)' THEN
        RAISE EXCEPTION USING ERRCODE = '08006',
            MESSAGE = 'a shard of the txnq cluster could not be reached: ' || p_message,
            HINT = 'nothing is decided unless the home shard wrote the decision; the call can be repeated '
                   '(its steps are idempotent), and the coordinator worker finishes a decided transaction '
                   'once the shard is back (docs/cluster.md, "Transactions across shards")';
    END IF;
    RAISE EXCEPTION USING ERRCODE = 'XX000', MESSAGE = p_message, DETAIL = coalesce(p_detail, ''),
        HINT = coalesce(p_context, '');
END;
$$;

-- The idempotent steps once more when the first try fails (PL/Proxy's error,
-- internal_error): a shard that restarted since the proxy's last call to it
-- fails that call on the connection PL/Proxy kept, and the second try connects
-- anew. Any other error, or a second failure, is raised.
CREATE OR REPLACE FUNCTION txnq_cluster.txn_prepare(p_shard integer, p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN txnq_cluster.txn_prepare_on(p_shard, p_tc_id, p_txn_seq);
EXCEPTION WHEN internal_error THEN
    RETURN txnq_cluster.txn_prepare_on(p_shard, p_tc_id, p_txn_seq);
END;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.txn_apply(
    p_shard integer, p_tc_id integer, p_txn_seq bigint, p_commit boolean, p_reason text)
RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
    RETURN txnq_cluster.txn_apply_on(p_shard, p_tc_id, p_txn_seq, p_commit, p_reason);
EXCEPTION WHEN internal_error THEN
    RETURN txnq_cluster.txn_apply_on(p_shard, p_tc_id, p_txn_seq, p_commit, p_reason);
END;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.bind_txn_on_home(
    p_tc_id integer, p_txn_seq bigint, p_transactional_id text, p_epoch integer)
RETURNS integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.home(p_tc_id);
    SELECT 1 FROM txnq.bind_txn_v2(p_tc_id, p_txn_seq, p_transactional_id, p_epoch);
$$;

CREATE OR REPLACE FUNCTION txnq.txn_state_v1(p_tc_id integer, p_txn_seq bigint)
RETURNS TABLE (state text, reason text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.home(p_tc_id);
$$;

CREATE OR REPLACE FUNCTION txnq.txn_limits_v1()
RETURNS TABLE (tc_count integer, txn_max_timeout_seconds double precision)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
$$;

-- ---------------------------------------------------------------- the client's calls

-- Numbered on the home shard, then a mirror on every other shard (a shard
-- down fails the open: the home's row times out there, and the coordinator
-- worker aborts it on every shard).
CREATE OR REPLACE FUNCTION txnq.open_txn_v3(
    p_tc_id integer, p_timeout_seconds double precision, p_unflushed boolean DEFAULT false,
    OUT tc_id integer, OUT txn_seq bigint, OUT timeout_at timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
    v_home integer;
BEGIN
    v_home := txnq_cluster.home_shard(p_tc_id);
    FOR v_attempt IN 1 .. 3 LOOP
        SELECT o.tc_id, o.txn_seq, o.timeout_at INTO tc_id, txn_seq, timeout_at
          FROM txnq_cluster.open_txn_on_home(p_tc_id, p_timeout_seconds, p_unflushed) o;
        BEGIN
            FOR v_shard IN 0 .. txnq_cluster.shard_count() - 1 LOOP
                CONTINUE WHEN v_shard = v_home;
                PERFORM txnq_cluster.txn_mirror_on(v_shard, tc_id, txn_seq, p_timeout_seconds, timeout_at);
            END LOOP;
            RETURN;
        EXCEPTION WHEN SQLSTATE 'TQ031' THEN
            -- The id is taken on a shard by a transaction opened there
            -- directly (cluster_txn_mirror_v1): abort this one on its home
            -- shard (its mirrors time out and the worker aborts them) and
            -- open under the next id.
            IF v_attempt = 3 THEN
                RAISE;
            END IF;
            PERFORM 1 FROM txnq_cluster.end_txn_on_home(tc_id, txn_seq, false, 'admin', true, NULL);
        END;
    END LOOP;
EXCEPTION WHEN internal_error THEN
    DECLARE
        v_message text;
        v_detail text;
        v_context text;
    BEGIN
        GET STACKED DIAGNOSTICS v_message = MESSAGE_TEXT, v_detail = PG_EXCEPTION_DETAIL,
                                v_context = PG_EXCEPTION_CONTEXT;
        PERFORM txnq_cluster.raise_unreachable(v_message, v_detail, v_context);
    END;
END;
$$;

CREATE OR REPLACE FUNCTION txnq.open_txn_v2(
    p_tc_id integer, p_timeout_seconds double precision,
    OUT tc_id integer, OUT txn_seq bigint, OUT timeout_at timestamptz)
LANGUAGE sql AS $$
    SELECT o.tc_id, o.txn_seq, o.timeout_at FROM txnq.open_txn_v3(p_tc_id, p_timeout_seconds, false) o
$$;

CREATE OR REPLACE FUNCTION txnq.bind_txn_v2(
    p_tc_id integer, p_txn_seq bigint, p_transactional_id text, p_epoch integer)
RETURNS void
LANGUAGE sql AS $$
    SELECT FROM (SELECT txnq_cluster.bind_txn_on_home(p_tc_id, p_txn_seq, p_transactional_id, p_epoch)) b
$$;

-- A transactional id's sessions on every shard alike (a transaction binds on
-- its home shard, which may be any); fencing aborts an older session's open
-- transaction on its home shard (the decision), and the coordinator worker
-- applies that abort on the other shards.
CREATE OR REPLACE FUNCTION txnq_cluster.init_transactional_id_all(p_transactional_id text)
RETURNS TABLE (epoch integer, fenced_tc_ids integer[], fenced_txn_seqs bigint[])
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT i.epoch, i.fenced_tc_ids, i.fenced_txn_seqs FROM txnq.init_transactional_id_v3(p_transactional_id) i;
$$;

CREATE OR REPLACE FUNCTION txnq.init_transactional_id_v3(
    p_transactional_id text, OUT epoch integer, OUT fenced_tc_ids integer[], OUT fenced_txn_seqs bigint[])
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM txnq_cluster.lock_ids();
    SELECT txnq_cluster.require_same('init_transactional_id_v3', min(a.epoch), max(a.epoch))::integer,
           coalesce(array_agg(f.tc ORDER BY f.tc, f.seq) FILTER (WHERE f.tc IS NOT NULL), '{}'),
           coalesce(array_agg(f.seq ORDER BY f.tc, f.seq) FILTER (WHERE f.tc IS NOT NULL), '{}')
      INTO epoch, fenced_tc_ids, fenced_txn_seqs
      FROM txnq_cluster.init_transactional_id_all(p_transactional_id) a
      LEFT JOIN LATERAL unnest(a.fenced_tc_ids, a.fenced_txn_seqs) f(tc, seq) ON true;
END;
$$;

-- The decision: prepare every other shard (their votes), then decide on the
-- home shard. An abort needs no votes. Repeating the call after a decision
-- returns the decision (the home shard's row is no longer open).
CREATE OR REPLACE FUNCTION txnq.end_txn_v3(
    p_tc_id integer, p_txn_seq bigint, p_commit boolean, p_reason text DEFAULT 'client',
    p_notify boolean DEFAULT false, OUT state text, OUT reason text)
LANGUAGE plpgsql AS $$
DECLARE
    v_home integer;
    v_vote text;
    v_veto text;
BEGIN
    IF p_commit IS TRUE AND p_tc_id IS NOT NULL AND p_txn_seq IS NOT NULL THEN
        v_home := txnq_cluster.home_shard(p_tc_id);
        FOR v_shard IN 0 .. txnq_cluster.shard_count() - 1 LOOP
            CONTINUE WHEN v_shard = v_home;
            v_vote := txnq_cluster.txn_prepare(v_shard, p_tc_id, p_txn_seq);
            IF v_vote <> 'prepared' AND v_veto IS NULL THEN
                v_veto := v_vote;
            END IF;
        END LOOP;
    END IF;
    SELECT e.state, e.reason INTO state, reason
      FROM txnq_cluster.end_txn_on_home(p_tc_id, p_txn_seq, p_commit, p_reason, p_notify, v_veto) e;
EXCEPTION WHEN internal_error THEN
    DECLARE
        v_message text;
        v_detail text;
        v_context text;
    BEGIN
        GET STACKED DIAGNOSTICS v_message = MESSAGE_TEXT, v_detail = PG_EXCEPTION_DETAIL,
                                v_context = PG_EXCEPTION_CONTEXT;
        PERFORM txnq_cluster.raise_unreachable(v_message, v_detail, v_context);
    END;
END;
$$;

-- The marker phase after a durable decision: every other shard applies the
-- decision with its markers and pending acks, then the home shard completes
-- and finishes. Idempotent; an open or unknown transaction gets the home
-- shard's complete_txn_v2 errors.
CREATE OR REPLACE FUNCTION txnq.complete_txn_v2(p_tc_id integer, p_txn_seq bigint)
RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    v_state text;
    v_reason text;
    v_home integer;
BEGIN
    SELECT s.state, s.reason INTO v_state, v_reason FROM txnq.txn_state_v1(p_tc_id, p_txn_seq) s;
    IF v_state IN ('COMMITTING', 'ABORTING') THEN
        v_home := txnq_cluster.home_shard(p_tc_id);
        FOR v_shard IN 0 .. txnq_cluster.shard_count() - 1 LOOP
            CONTINUE WHEN v_shard = v_home;
            PERFORM txnq_cluster.txn_apply(v_shard, p_tc_id, p_txn_seq, v_state = 'COMMITTING',
                                              coalesce(v_reason, 'client'));
        END LOOP;
    END IF;
    RETURN txnq_cluster.complete_txn_on_home(p_tc_id, p_txn_seq);
EXCEPTION WHEN internal_error THEN
    DECLARE
        v_message text;
        v_detail text;
        v_context text;
    BEGIN
        GET STACKED DIAGNOSTICS v_message = MESSAGE_TEXT, v_detail = PG_EXCEPTION_DETAIL,
                                v_context = PG_EXCEPTION_CONTEXT;
        PERFORM txnq_cluster.raise_unreachable(v_message, v_detail, v_context);
    END;
END;
$$;

-- A client's commit() and abort(): end_and_complete_txn_v1 (revision 0029)
-- does both phases in one PostgreSQL transaction on one server. Across
-- shards it is the two calls above, one after the other: the durable
-- decision on the home shard (after every other shard prepared, for a
-- commit), then the marker phase on every shard. Each shard's part commits
-- on its own; a repeated call returns the decision that stands and finishes
-- what is left, and the coordinator worker finishes it if the client dies
-- between the two.
CREATE OR REPLACE FUNCTION txnq.end_and_complete_txn_v1(
    p_tc_id integer, p_txn_seq bigint, p_commit boolean, p_reason text DEFAULT 'client',
    OUT state text, OUT reason text, OUT final_state text)
LANGUAGE plpgsql AS $$
BEGIN
    SELECT e.state, e.reason INTO state, reason
      FROM txnq.end_txn_v3(p_tc_id, p_txn_seq, p_commit, p_reason, false) e;
    final_state := txnq.complete_txn_v2(p_tc_id, p_txn_seq);
END;
$$;

-- ---------------------------------------------------------------- the coordinator worker

CREATE OR REPLACE FUNCTION txnq_cluster.coordinator_decided_on(
    p_shard integer, p_tc_ids integer[], p_grace_seconds double precision, p_limit integer)
RETURNS TABLE (tc_id integer, txn_seq bigint, state text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT d.tc_id, d.txn_seq, d.state FROM txnq.coordinator_decided_v1(p_tc_ids, p_grace_seconds, p_limit) d;
$$;

-- A shard's prepared mirrors (no timeout since their vote) of the given
-- coordinators whose original timeout passed the grace ago: the decision
-- should have reached them by then. The run applies the home shard's decision
-- (also one the home shard finished alone: a worker run on it directly).
CREATE OR REPLACE FUNCTION txnq_cluster.prepared_mirrors_on(
    p_shard integer, p_tc_ids integer[], p_grace_seconds double precision, p_limit integer)
RETURNS TABLE (tc_id integer, txn_seq bigint, state text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT t.tc_id, t.txn_seq, 'PREPARED'::text AS state
      FROM txnq.transactions t
     WHERE t.state = 'OPEN' AND t.timeout_at = 'infinity' AND t.tc_id = ANY (p_tc_ids)
       AND t.opened_at + make_interval(secs => t.timeout_seconds + p_grace_seconds) < now()
     ORDER BY t.opened_at
     LIMIT p_limit;
$$;

-- Decided, unfinished transactions of the given coordinators on any shard:
-- the home shard's decisions, a participant's own (its timeout job aborted a
-- mirror that never prepared; the run then finds the home shard's state), and
-- prepared mirrors left behind (prepared_mirrors_on).
CREATE OR REPLACE FUNCTION txnq.coordinator_decided_v1(
    p_tc_ids integer[], p_grace_seconds double precision, p_limit integer)
RETURNS TABLE (tc_id integer, txn_seq bigint, state text)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT DISTINCT ON (d.tc_id, d.txn_seq) d.tc_id, d.txn_seq, d.state
      FROM generate_series(0, txnq_cluster.shard_count() - 1) s,
           LATERAL (SELECT * FROM txnq_cluster.coordinator_decided_on(s, p_tc_ids, p_grace_seconds, p_limit)
                    UNION ALL
                    SELECT * FROM txnq_cluster.prepared_mirrors_on(s, p_tc_ids, greatest(p_grace_seconds, 1),
                                                                   p_limit)) d
     ORDER BY d.tc_id, d.txn_seq, (s = txnq_cluster.home_shard(d.tc_id)) DESC, d.state = 'PREPARED'
     LIMIT p_limit;
END;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.coordinator_record_owner_all(p_owner text, p_tc_ids integer[])
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT 1 FROM txnq.coordinator_record_owner_v1(p_owner, p_tc_ids);
$$;

CREATE OR REPLACE FUNCTION txnq.coordinator_record_owner_v1(p_owner text, p_tc_ids integer[])
RETURNS void
LANGUAGE sql AS $$
    SELECT FROM (SELECT count(*) FROM txnq_cluster.coordinator_record_owner_all(p_owner, p_tc_ids)) c
$$;

INSERT INTO txnq_cluster.routing (function_name, rule, note) VALUES
    ('txn_limits_v1', 'first', 'transaction limits, alike on every shard'),
    ('txn_state_v1', 'home', 'on the transaction''s home shard'),
    ('bind_txn_v2', 'home', 'a transactional producer''s session, bound on the home shard'),
    ('open_txn_v3', 'txn', 'numbered on the home shard, a mirror on every other shard'),
    ('open_txn_v2', 'txn', 'open_txn_v3 without unflushed writes'),
    ('end_txn_v3', 'txn', 'prepare every other shard, then the durable decision on the home shard'),
    ('complete_txn_v2', 'txn', 'the decision applied with markers on every other shard, then the home shard'),
    ('end_and_complete_txn_v1', 'txn', 'a client''s commit() / abort(): end_txn_v3, then complete_txn_v2'),
    ('init_transactional_id_v3', 'all', 'a transactional id''s epoch on every shard alike; fencing on the home shard'),
    ('coordinator_decided_v1', 'txn', 'decided, unfinished transactions of every shard'),
    ('coordinator_record_owner_v1', 'all', 'who owns a coordinator, on every shard')
ON CONFLICT (function_name) DO UPDATE SET rule = EXCLUDED.rule, note = EXCLUDED.note;
