-- The functions a txnq cluster proxy routes (docs/cluster.md), with the names,
-- signatures and results of the shard functions the Python client calls. Each
-- rule of txnq_cluster.routing is a shape here:
--   partition  a PL/Proxy function, RUN ON txnq_cluster.route(topic, partition)
--   first      a PL/Proxy function, RUN ON 0
--   all        a PL/Proxy function txnq_cluster.<name>_all (RUN ON ALL) and a
--              txnq.<name> that checks the shards agree
--   all_ids    as all, under txnq_cluster.lock_ids, with an id from this
--              database's sequence set on each shard's identity sequence in
--              the statement that creates the row (the scalar subquery is
--              evaluated before the function it is an argument of)
--   owned      a PL/Proxy function txnq_cluster.<name>_on (RUN ON its first
--              argument, a shard number) called for each shard, keeping the
--              rows of the partitions that shard owns
--   summed     the same per-shard calls, per-partition counts added up
-- A PL/Proxy call commits on each shard on its own: a call that reaches
-- several shards is not atomic across them (docs/cluster.md, limits).

-- ---------------------------------------------------------------- partition

-- The data path: append_v5 and fetch_v4 keep the shard API's names and
-- signatures for the client, but the hop to the shard carries the payloads in
-- types PL/Proxy 2.10 sends in binary (it sends an argument, and receives a
-- result row, as text unless the type is a plain scalar such as bytea or
-- bigint: a bytea[] of 1000 x 100-byte payloads was printed and parsed as a
-- hex literal). The shard functions append_packed_v1 / fetch_packed_v1
-- (revision 0028) unpack / pack and call append_v5 / fetch_v4 there, so every
-- check stays on the shard. Keys, properties and event times are NULL in the
-- common case and go as before.
CREATE OR REPLACE FUNCTION txnq_cluster.append_packed(
    p_topic_id integer, p_partition integer, p_producer_id bigint, p_producer_epoch integer,
    p_first_sequence bigint, p_payload_bytes bytea, p_payload_lengths integer[], p_keys bytea[],
    p_properties jsonb[], p_event_times timestamptz[], p_txn_tc integer, p_txn_seq bigint,
    OUT entry_offset bigint, OUT publish_time timestamptz, OUT duplicate boolean,
    OUT roll_entry_log boolean)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      FROM txnq.append_packed_v1(p_topic_id, p_partition, p_producer_id, p_producer_epoch,
                                 p_first_sequence, p_payload_bytes, p_payload_lengths, p_keys,
                                 p_properties, p_event_times, p_txn_tc,
                                 txnq.cluster_txn_writable_v1(p_txn_tc, p_txn_seq)) a;
$$;

-- Payloads that do not pack (NULL, not one-dimensional from 1) go as they
-- are, for the shard's append_v5 to refuse with its own error; so does a
-- single payload of at most 8 KB.
CREATE OR REPLACE FUNCTION txnq_cluster.append_unpacked(
    p_topic_id integer, p_partition integer, p_producer_id bigint, p_producer_epoch integer,
    p_first_sequence bigint, p_payloads bytea[], p_keys bytea[], p_properties jsonb[],
    p_event_times timestamptz[], p_txn_tc integer, p_txn_seq bigint,
    OUT entry_offset bigint, OUT publish_time timestamptz, OUT duplicate boolean,
    OUT roll_entry_log boolean)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      FROM txnq.append_v5(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc,
                          txnq.cluster_txn_writable_v1(p_txn_tc, p_txn_seq)) a;
$$;

-- PL/pgSQL: its statements' plans are cached for the session.
CREATE OR REPLACE FUNCTION txnq.append_v5(
    p_topic_id integer, p_partition integer, p_producer_id bigint, p_producer_epoch integer,
    p_first_sequence bigint, p_payloads bytea[], p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL, p_event_times timestamptz[] DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL, p_txn_seq bigint DEFAULT NULL,
    OUT entry_offset bigint, OUT publish_time timestamptz, OUT duplicate boolean,
    OUT roll_entry_log boolean)
LANGUAGE plpgsql AS $$
DECLARE
    v_bytes bytea;
    v_lengths integer[];
BEGIN
    -- A single small payload (a send()) costs less as text than the packing
    -- statement: it goes unpacked.
    IF array_ndims(p_payloads) = 1 AND array_lower(p_payloads, 1) = 1
       AND (cardinality(p_payloads) > 1 OR octet_length(p_payloads[1]) > 8192) THEN
        -- One pass in the array's order (no ORDER BY: a sort doubled it).
        SELECT coalesce(string_agg(u.p, ''::bytea), ''::bytea), array_agg(coalesce(length(u.p), -1))
          INTO v_bytes, v_lengths
          FROM unnest(p_payloads) u(p);
        SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
          INTO entry_offset, publish_time, duplicate, roll_entry_log
          FROM txnq_cluster.append_packed(p_topic_id, p_partition, p_producer_id, p_producer_epoch,
                                          p_first_sequence, v_bytes, v_lengths, p_keys, p_properties,
                                          p_event_times, p_txn_tc, p_txn_seq) a;
    ELSE
        SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
          INTO entry_offset, publish_time, duplicate, roll_entry_log
          FROM txnq_cluster.append_unpacked(p_topic_id, p_partition, p_producer_id, p_producer_epoch,
                                            p_first_sequence, p_payloads, p_keys, p_properties,
                                            p_event_times, p_txn_tc, p_txn_seq) a;
    END IF;
END $$;

-- append_v6 (shard revision 0032) routed as append_v5, which the client
-- called before. A decided append (p_decided: a client transaction's commit
-- carrying its last batches) is refused: its decision and entries must
-- commit in one PostgreSQL transaction, and through the proxy the decision
-- and each partition's hop are transactions of their own. The client knows
-- it talks to a proxy and commits the usual way (docs/transactions.md).
CREATE OR REPLACE FUNCTION txnq.append_v6(
    p_topic_id integer, p_partition integer, p_producer_id bigint, p_producer_epoch integer,
    p_first_sequence bigint, p_payloads bytea[], p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL, p_event_times timestamptz[] DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL, p_txn_seq bigint DEFAULT NULL, p_decided boolean DEFAULT false,
    OUT entry_offset bigint, OUT publish_time timestamptz, OUT duplicate boolean,
    OUT roll_entry_log boolean)
LANGUAGE plpgsql AS $$
BEGIN
    IF p_decided IS DISTINCT FROM false THEN
        RAISE EXCEPTION USING ERRCODE = 'TQ030',
            MESSAGE = 'txnq.append_v6 with decided true is not supported through a txnq cluster proxy: '
                      'a commit that carries its batches needs the decision and the entries in one '
                      'PostgreSQL transaction, on one database',
            HINT = 'append with decided false, then commit with txnq.end_and_complete_txn_v1 (what '
                   'txnq''s client does through a proxy); nothing was written';
    END IF;
    SELECT a.entry_offset, a.publish_time, a.duplicate, a.roll_entry_log
      INTO entry_offset, publish_time, duplicate, roll_entry_log
      FROM txnq.append_v5(p_topic_id, p_partition, p_producer_id, p_producer_epoch, p_first_sequence,
                          p_payloads, p_keys, p_properties, p_event_times, p_txn_tc, p_txn_seq) a;
END $$;

CREATE OR REPLACE FUNCTION txnq_cluster.fetch_packed(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_after_offset bigint,
    p_max_entries integer, p_max_bytes bigint, p_from_mark_delete boolean)
RETURNS TABLE (entry_offset bigint, publish_time_us bigint, producer_id bigint, first_sequence bigint,
               message_count integer, payload_bytes bytea, payload_lengths text, keys text,
               properties text, event_times text, acked_batch_indexes text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT f.entry_offset, f.publish_time_us, f.producer_id, f.first_sequence, f.message_count,
           f.payload_bytes, f.payload_lengths, f.keys, f.properties, f.event_times,
           f.acked_batch_indexes
      FROM txnq.fetch_packed_v1(p_topic_id, p_partition, p_subscription_id, p_after_offset,
                                p_max_entries, p_max_bytes, p_from_mark_delete) f;
$$;

-- Element i of payloads: the next payload_lengths[i] bytes (-1: NULL); e, the
-- running sum, in unnest's order (a ROWS frame without ORDER BY: no sort).
CREATE OR REPLACE FUNCTION txnq.fetch_v4(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_after_offset bigint,
    p_max_entries integer DEFAULT 100, p_max_bytes bigint DEFAULT 8388608,
    p_from_mark_delete boolean DEFAULT true)
RETURNS TABLE (entry_offset bigint, publish_time timestamptz, producer_id bigint, first_sequence bigint,
               message_count integer, payloads bytea[], keys bytea[], properties jsonb[],
               event_times timestamptz[], acked_batch_indexes integer[])
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT f.entry_offset, timestamptz 'epoch' + f.publish_time_us * interval '1 microsecond',
           f.producer_id, f.first_sequence, f.message_count,
           ARRAY(SELECT CASE WHEN s.l < 0 THEN NULL
                             ELSE substr(f.payload_bytes, (s.e - s.l + 1)::integer, s.l) END
                   FROM (SELECT u.l, sum(greatest(u.l, 0)) OVER (ROWS UNBOUNDED PRECEDING) AS e
                           FROM unnest(f.payload_lengths::integer[]) u(l)) s),
           f.keys::bytea[], f.properties::jsonb[], f.event_times::timestamptz[],
           f.acked_batch_indexes::integer[]
      FROM txnq_cluster.fetch_packed(p_topic_id, p_partition, p_subscription_id, p_after_offset,
                                     p_max_entries, p_max_bytes, p_from_mark_delete) f;
END $$;

CREATE OR REPLACE FUNCTION txnq.ack_v3(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_cumulative_offset bigint,
    p_offsets bigint[] DEFAULT '{}', p_batch_indexes integer[] DEFAULT '{}',
    p_batch_sizes integer[] DEFAULT '{}', p_cumulative_batch_index integer DEFAULT NULL,
    p_cumulative_batch_size integer DEFAULT NULL, p_txn_tc integer DEFAULT NULL,
    p_txn_seq bigint DEFAULT NULL)
RETURNS bigint
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
    SELECT txnq.ack_v3(p_topic_id, p_partition, p_subscription_id, p_cumulative_offset, p_offsets,
                       p_batch_indexes, p_batch_sizes, p_cumulative_batch_index, p_cumulative_batch_size,
                       p_txn_tc, txnq.cluster_txn_writable_v1(p_txn_tc, p_txn_seq));
$$;

CREATE OR REPLACE FUNCTION txnq.cursor_generation_v1(
    p_topic_id integer, p_partition integer, p_subscription_id bigint)
RETURNS integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
$$;

CREATE OR REPLACE FUNCTION txnq.seek_v2(
    p_topic_id integer, p_partition integer, p_subscription_id bigint,
    p_offset bigint DEFAULT NULL, p_time timestamptz DEFAULT NULL)
RETURNS bigint
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
$$;

-- ---------------------------------------------------------------- first

CREATE OR REPLACE FUNCTION txnq.schema_revision_v1()
RETURNS text
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
$$;

-- txnq.topics has no copy on the proxy: the same columns, by name.
CREATE OR REPLACE FUNCTION txnq.topic_by_name_v1(p_name text)
RETURNS TABLE (topic_id integer, name text, partitions integer, retention_seconds double precision,
               retention_bytes bigint, ttl_seconds double precision, max_message_bytes integer,
               created_at timestamptz, backlog_quota_bytes bigint, backlog_quota_seconds double precision,
               backlog_quota_policy text)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
    SELECT t.topic_id, t.name, t.partitions, t.retention_seconds, t.retention_bytes, t.ttl_seconds,
           t.max_message_bytes, t.created_at, t.backlog_quota_bytes, t.backlog_quota_seconds,
           t.backlog_quota_policy
      FROM txnq.topic_by_name_v1(p_name) t;
$$;

CREATE OR REPLACE FUNCTION txnq.topic_partition_count_v1(p_topic_id integer)
RETURNS integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
$$;

CREATE OR REPLACE FUNCTION txnq.subscription_by_name_v1(p_topic_id integer, p_name text)
RETURNS TABLE (subscription_id bigint, name text, subscription_type text, isolation text,
               created_at timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
$$;

CREATE OR REPLACE FUNCTION txnq.subscription_consumers_v1(p_subscription_id bigint)
RETURNS TABLE (consumer_id bigint, name text, priority integer, connected_at timestamptz,
               lease_expires_at timestamptz)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
$$;

-- ---------------------------------------------------------------- all

CREATE OR REPLACE FUNCTION txnq_cluster.add_partitions_all(p_topic_id integer, p_partitions integer)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.add_partitions_v2(p_topic_id, p_partitions);
$$;

CREATE OR REPLACE FUNCTION txnq.add_partitions_v2(p_topic_id integer, p_partitions integer)
RETURNS integer
LANGUAGE sql AS $$
    SELECT txnq_cluster.require_same('add_partitions_v2', min(a), max(a))::integer
      FROM txnq_cluster.add_partitions_all(p_topic_id, p_partitions) a
$$;

-- Void shard functions answer one row each through PL/Proxy: the count.
CREATE OR REPLACE FUNCTION txnq_cluster.delete_topic_all(p_topic_id integer, p_force boolean)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT 1 FROM txnq.delete_topic_v2(p_topic_id, p_force);
$$;

-- Unforced, the shards would each check their own backlog and consumers, and
-- one could refuse after another deleted: the whole cluster's backlog and
-- consumers are checked here first, with delete_topic_v2's own messages (TQ011:
-- the topic's name and a subscription's backlog, or its connected consumers).
CREATE OR REPLACE FUNCTION txnq.delete_topic_v2(p_topic_id integer, p_force boolean DEFAULT false)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_name text;
    v_backlog record;
BEGIN
    IF p_force IS FALSE THEN
        SELECT s.name, s.backlog_entries AS entries INTO v_backlog
          FROM txnq.list_subscriptions_v1(p_topic_id) s
         WHERE s.backlog_entries > 0
         ORDER BY s.name LIMIT 1;
        IF FOUND THEN
            SELECT t.name INTO v_name FROM txnq.list_topics_v1() t WHERE t.topic_id = p_topic_id;
            RAISE EXCEPTION USING ERRCODE = 'TQ011',
                MESSAGE = format('topic %L: subscription %L still has %s unacknowledged entries',
                                 v_name, v_backlog.name, v_backlog.entries),
                HINT = 'consume or reset the subscription, unsubscribe it, or force the delete';
        END IF;
        IF EXISTS (SELECT FROM txnq.list_subscriptions_v1(p_topic_id) s WHERE s.consumers > 0) THEN
            SELECT t.name INTO v_name FROM txnq.list_topics_v1() t WHERE t.topic_id = p_topic_id;
            RAISE EXCEPTION USING ERRCODE = 'TQ011',
                MESSAGE = format('topic %L has connected consumers', v_name),
                HINT = 'close them first, or force the delete';
        END IF;
    END IF;
    PERFORM count(*) FROM txnq_cluster.delete_topic_all(p_topic_id, p_force);
END;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.set_backlog_quota_all(
    p_topic_id integer, p_set_bytes boolean, p_limit_bytes bigint, p_set_seconds boolean,
    p_limit_seconds double precision, p_set_policy boolean, p_policy text)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT 1 FROM txnq.set_backlog_quota_v1(p_topic_id, p_set_bytes, p_limit_bytes, p_set_seconds,
                                            p_limit_seconds, p_set_policy, p_policy);
$$;

CREATE OR REPLACE FUNCTION txnq.set_backlog_quota_v1(
    p_topic_id integer, p_set_bytes boolean, p_limit_bytes bigint, p_set_seconds boolean,
    p_limit_seconds double precision, p_set_policy boolean, p_policy text)
RETURNS void
LANGUAGE sql AS $$
    SELECT FROM (SELECT count(*) FROM txnq_cluster.set_backlog_quota_all(
        p_topic_id, p_set_bytes, p_limit_bytes, p_set_seconds, p_limit_seconds, p_set_policy, p_policy)) c
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.set_topic_policy_all(
    p_topic_id integer, p_retention_seconds double precision, p_retention_bytes bigint,
    p_ttl_seconds double precision, p_clear_ttl boolean)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT 1 FROM txnq.set_topic_policy_v1(p_topic_id, p_retention_seconds, p_retention_bytes,
                                           p_ttl_seconds, p_clear_ttl);
$$;

CREATE OR REPLACE FUNCTION txnq.set_topic_policy_v1(
    p_topic_id integer, p_retention_seconds double precision, p_retention_bytes bigint,
    p_ttl_seconds double precision, p_clear_ttl boolean)
RETURNS void
LANGUAGE sql AS $$
    SELECT FROM (SELECT count(*) FROM txnq_cluster.set_topic_policy_all(
        p_topic_id, p_retention_seconds, p_retention_bytes, p_ttl_seconds, p_clear_ttl)) c
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.close_consumer_all(p_topic_id integer, p_consumer_id bigint)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT 1 FROM txnq.close_consumer_v1(p_topic_id, p_consumer_id);
$$;

CREATE OR REPLACE FUNCTION txnq.close_consumer_v1(p_topic_id integer, p_consumer_id bigint)
RETURNS void
LANGUAGE sql AS $$
    SELECT FROM (SELECT count(*) FROM txnq_cluster.close_consumer_all(p_topic_id, p_consumer_id)) c
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.unsubscribe_all(
    p_subscription_id bigint, p_except_consumer_id bigint, p_force boolean)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT 1 FROM txnq.unsubscribe_v2(p_subscription_id, p_except_consumer_id, p_force);
$$;

CREATE OR REPLACE FUNCTION txnq.unsubscribe_v2(
    p_subscription_id bigint, p_except_consumer_id bigint DEFAULT NULL, p_force boolean DEFAULT false)
RETURNS void
LANGUAGE sql AS $$
    SELECT FROM (SELECT count(*) FROM txnq_cluster.unsubscribe_all(
        p_subscription_id, p_except_consumer_id, p_force)) c
$$;

-- Every shard registers the waiter: harmless, and a proxy client is woken by
-- polling anyway (a shard's NOTIFY does not reach the proxy's LISTEN).
CREATE OR REPLACE FUNCTION txnq_cluster.register_waiters_all(
    p_topic_id integer, p_consumer_id bigint, p_partitions integer[])
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT 1 FROM txnq.register_waiters_v1(p_topic_id, p_consumer_id, p_partitions);
$$;

CREATE OR REPLACE FUNCTION txnq.register_waiters_v1(
    p_topic_id integer, p_consumer_id bigint, p_partitions integer[])
RETURNS void
LANGUAGE sql AS $$
    SELECT FROM (SELECT count(*) FROM txnq_cluster.register_waiters_all(
        p_topic_id, p_consumer_id, p_partitions)) c
$$;

-- The lease is renewed on every shard (each expires its own consumer rows);
-- the live consumers are those of shard 0 (registered everywhere alike).
CREATE OR REPLACE FUNCTION txnq_cluster.heartbeat_consumer_on(
    p_shard integer, p_consumer_id bigint, p_lease_seconds double precision)
RETURNS TABLE (consumer_id bigint, name text, priority integer)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON p_shard;
    SELECT h.consumer_id, h.name, h.priority FROM txnq.heartbeat_consumer_v2(p_consumer_id, p_lease_seconds) h;
$$;

CREATE OR REPLACE FUNCTION txnq.heartbeat_consumer_v2(p_consumer_id bigint, p_lease_seconds double precision)
RETURNS TABLE (consumer_id bigint, name text, priority integer)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    v_shard integer;
BEGIN
    FOR v_shard IN REVERSE txnq_cluster.shard_count() - 1 .. 1 LOOP
        PERFORM count(*) FROM txnq_cluster.heartbeat_consumer_on(v_shard, p_consumer_id, p_lease_seconds);
    END LOOP;
    RETURN QUERY SELECT h.consumer_id, h.name, h.priority
                   FROM txnq_cluster.heartbeat_consumer_on(0, p_consumer_id, p_lease_seconds) h;
END;
$$;

-- An append's hint that the entry log is full (the producer ignores the
-- answer): every shard checks its own active log, and rolls it when full or
-- old (unforced) or always (forced). The answer: the largest active entry log
-- id of the shards (each shard numbers its own logs; not compared).
CREATE OR REPLACE FUNCTION txnq_cluster.roll_entry_log_all(p_force boolean)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.roll_entry_log_v4(p_force);
$$;

-- v4 (shard revision 0031: the roll holds SHARE on txnq.entries) is what the
-- client calls; v3, a wrapper of v4 on the shards, stays for older clients.
CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v4(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE sql AS $$
    SELECT max(r) FROM txnq_cluster.roll_entry_log_all(p_force) r
$$;

CREATE OR REPLACE FUNCTION txnq.roll_entry_log_v3(p_force boolean DEFAULT false)
RETURNS integer
LANGUAGE sql AS $$
    SELECT max(r) FROM txnq_cluster.roll_entry_log_all(p_force) r
$$;

-- ---------------------------------------------------------------- grants

-- Grants live on every shard alike: a shard checks them on its own data path
-- (a client's direct route logs in there as itself, docs/cluster.md), and
-- topic_permissions_v1 merges them back (views_shards.sql). A grant or revoke
-- runs on every shard (RUN ON ALL); each shard commits on its own, so one
-- that fails (a role missing on one server) leaves the others changed: both
-- are idempotent, so running the same call again once the cause is fixed
-- makes the shards agree. The answer is the most any shard added or removed
-- (a grant an earlier partial call left on some shards counts as added).
CREATE OR REPLACE FUNCTION txnq_cluster.grant_topic_permission_all(
    p_role text, p_resource text, p_is_prefix boolean, p_actions text[])
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.grant_topic_permission_v1(p_role, p_resource, p_is_prefix, p_actions);
$$;

CREATE OR REPLACE FUNCTION txnq.grant_topic_permission_v1(
    p_role text, p_resource text, p_is_prefix boolean, p_actions text[])
RETURNS integer
LANGUAGE sql AS $$
    SELECT max(n)::integer
      FROM txnq_cluster.grant_topic_permission_all(p_role, p_resource, p_is_prefix, p_actions) n
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.revoke_topic_permission_all(
    p_role text, p_resource text, p_is_prefix boolean, p_actions text[])
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.revoke_topic_permission_v1(p_role, p_resource, p_is_prefix, p_actions);
$$;

CREATE OR REPLACE FUNCTION txnq.revoke_topic_permission_v1(
    p_role text, p_resource text, p_is_prefix boolean, p_actions text[])
RETURNS integer
LANGUAGE sql AS $$
    SELECT max(n)::integer
      FROM txnq_cluster.revoke_topic_permission_all(p_role, p_resource, p_is_prefix, p_actions) n
$$;

-- ---------------------------------------------------------------- the console

-- The web console through the proxy (docs/console.md): who it runs as, from
-- shard 0 (the proxy connects as the calling role, so the shard sees the
-- caller's role and memberships: roles must exist on every server alike);
-- its actions' audit trail on shard 0 (console_action_log merges every
-- shard's); its chart history sampled on every shard (each samples its own
-- topics; the scheduler of each shard does it anyway).
CREATE OR REPLACE FUNCTION txnq.console_role_v1(OUT role text, OUT may_administer boolean)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
$$;

CREATE OR REPLACE FUNCTION txnq.console_record_action_v1(
    p_action text, p_target text, p_details jsonb, p_error text)
RETURNS bigint
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON 0;
$$;

CREATE OR REPLACE FUNCTION txnq_cluster.console_sample_all(p_keep_seconds double precision)
RETURNS SETOF integer
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON ALL;
    SELECT txnq.console_sample_v1(p_keep_seconds);
$$;

-- Each shard samples every topic (their metadata is on every shard): the
-- number of topics sampled is any shard's, the largest.
CREATE OR REPLACE FUNCTION txnq.console_sample_v1(p_keep_seconds double precision)
RETURNS integer
LANGUAGE sql AS $$
    SELECT max(n)::integer FROM txnq_cluster.console_sample_all(p_keep_seconds) n
$$;
