-- txnq.grant_roles_v2: the grants of revision 0015 (docs/security.md), run
-- by `txnq migrate` after every upgrade (the newest grant_roles_vN). Replaces
-- grant_roles_v1's rules, whose ownership moves it reuses (it calls v1 first,
-- then takes back what v1 grants and v2 does not).
--
-- The boundary: application roles (txnq_client) hold no privilege on any
-- table or sequence of txnq; they call functions, which run as their owner
-- (SECURITY DEFINER, search_path pinned to pg_catalog, txnq, pg_temp) and
-- check the caller's permission on the topic (authorize*_v1). Applied to
-- every function of schema txnq by the classes below, by base name (the name
-- without _vN), so a later version of a function (append_v4, fetch_v4, ...)
-- lands in the class of its earlier versions with nothing to remember:
--
--   internal   called only by other txnq functions (and defaults/triggers):
--              SECURITY INVOKER, EXECUTE for no role but the owner; every
--              name starting require_ or authorize, and
--              c_internal below;
--   pure       no table read, no side effect: SECURITY INVOKER (planner
--              inlining and no SECURITY DEFINER cost), EXECUTE for the app
--              and worker roles;
--   trigger    trigger functions: SECURITY DEFINER (a deferred trigger fires
--              at the application's COMMIT, as the application's role), no
--              EXECUTE (PostgreSQL does not check it when a trigger fires);
--   coordinator  txnq_worker: the marker phase and the lease queries;
--   scheduler  txnq_scheduler: the lifecycle (timeouts, TTL, retention,
--              backlog quota, compaction, entry-log rollover, the doctor);
--   reader     txnq_reader: what the inspection views call;
--   migration  grant_roles_vN: the migrating role only;
--   client     everything else: txnq_client. A function is public unless
--              listed otherwise; the hooks inside decide per topic.
-- A function may be in several of coordinator/scheduler/reader/client.
--
-- Tables: txnq_client nothing (and no default privileges for the entry-log
-- partitions created later); txnq_worker and txnq_scheduler SELECT on the
-- tables without payloads (their queries and the Prometheus endpoint read
-- them), and txnq_scheduler the few writes its jobs make directly
-- (listed below); txnq_reader the views, as revision 0007 said.
--
-- Idempotent; run by the migrating role (SECURITY INVOKER). Returns the number
-- of objects whose owner changed (grant_roles_v1's count).
CREATE OR REPLACE FUNCTION txnq.grant_roles_v2()
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- The classes (base names). Keep docs/security.md in step.
    c_internal CONSTANT text[] := ARRAY[
        'find_duplicate', 'txn_require_open', 'apply_acks', 'roll_ledger', 'entry_log_needs_roll',
        'compaction_tables', 'compaction_columns', 'shared_advance', 'dispatch_shared', 'dead_letter',
        'claimed_messages', 'check_ack_once', 'subscription_backlog', 'earliest_offset',
        'caller', 'caller_role', 'caller_is_trusted', 'caller_is_admin', 'permission_granted',
        'permission_denied', 'topic_visible'];
    c_pure CONSTANT text[] := ARRAY['key_hash', 'key_owner', 'partition_for_key'];
    c_coordinator CONSTANT text[] := ARRAY[
        'complete_txn_partition', 'complete_txn_subscription', 'finish_txn', 'complete_txn',
        'coordinator_decided', 'coordinator_record_owner', 'schema_revision'];
    c_scheduler CONSTANT text[] := ARRAY[
        'abort_timed_out', 'expire_ttl', 'apply_retention', 'check_backlog_quota', 'entry_log_usage',
        'compaction_begin', 'compaction_copy', 'compaction_last_key', 'compaction_catch_up',
        'compaction_swap', 'compaction_abandon', 'roll_entry_log', 'unsubscribe', 'schema_revision',
        'gc_drop_entry_log'];
    c_reader CONSTANT text[] := ARRAY['entry_log_usage_inspect', 'topic_permissions', 'schema_revision'];
    c_not_client CONSTANT text[] := ARRAY[
        'complete_txn_partition', 'complete_txn_subscription', 'finish_txn', 'coordinator_decided',
        'coordinator_record_owner', 'abort_timed_out', 'expire_ttl', 'apply_retention',
        'check_backlog_quota', 'entry_log_usage', 'compaction_begin', 'compaction_copy',
        'compaction_last_key', 'compaction_catch_up', 'compaction_swap', 'compaction_abandon',
        'entry_log_usage_inspect', 'gc_drop_entry_log', 'grant_roles'];
    -- Tables without payloads: the workers' reads (coordinator.sql,
    -- lifecycle.sql, backlog_quota.sql, metrics.sql).
    c_status_tables CONSTANT text[] := ARRAY[
        'topics', 'partitions', 'subscriptions', 'cursors', 'individual_acks', 'consumers', 'ledgers',
        'coordinators', 'transactions', 'txn_log', 'txn_partitions', 'txn_subscriptions', 'config',
        'entry_logs', 'gc_runs', 'backlog_quota_exceeded'];
    v_moved integer;
    v_roles text[] := ARRAY[]::text[];
    v_role text;
    v_base text;
    v_class text;
    v_to text[];
    r record;
BEGIN
    v_moved := txnq.grant_roles_v1();
    FOREACH v_role IN ARRAY ARRAY['txnq_client', 'txnq_worker', 'txnq_scheduler', 'txnq_reader'] LOOP
        IF pg_catalog.to_regrole(v_role) IS NOT NULL THEN
            v_roles := v_roles || v_role;
        END IF;
    END LOOP;

    -- No table or sequence for the application and worker roles: take back
    -- grant_roles_v1's grants, then give the workers their reads.
    FOREACH v_role IN ARRAY v_roles LOOP
        CONTINUE WHEN v_role = 'txnq_reader';
        EXECUTE format('GRANT USAGE ON SCHEMA txnq TO %I', v_role);
        EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA txnq FROM %I', v_role);
        EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA txnq FROM %I', v_role);
        IF pg_catalog.to_regrole('txnq_admin') IS NOT NULL
           AND pg_catalog.pg_has_role(current_user, 'txnq_admin', 'MEMBER') THEN
            EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE txnq_admin IN SCHEMA txnq '
                           'REVOKE ALL ON TABLES FROM %I', v_role);
            EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE txnq_admin IN SCHEMA txnq '
                           'REVOKE ALL ON SEQUENCES FROM %I', v_role);
        END IF;
        IF v_role IN ('txnq_worker', 'txnq_scheduler') THEN
            FOR r IN SELECT c.oid::regclass AS rel FROM pg_catalog.pg_class c
                      WHERE c.relnamespace = 'txnq'::regnamespace AND c.relname = ANY (c_status_tables)
            LOOP
                EXECUTE format('GRANT SELECT ON %s TO %I', r.rel, v_role);
            END LOOP;
        END IF;
    END LOOP;
    -- The grants listing filters itself (topic_permissions_v1): every role may read it.
    IF 'txnq_client' = ANY (v_roles) AND to_regclass('txnq.topic_grants') IS NOT NULL THEN
        GRANT SELECT ON txnq.topic_grants TO txnq_client;
    END IF;
    -- The scheduler's direct writes (lifecycle.sql): GC's bookkeeping of
    -- entry logs and runs, the doctor's repairs of orphan ledgers (and its
    -- read of the entries' keys and sizes, never their payloads), and
    -- publish_settings.
    IF 'txnq_scheduler' = ANY (v_roles) THEN
        GRANT UPDATE (state, dropped_at) ON txnq.entry_logs TO txnq_scheduler;
        GRANT INSERT ON txnq.gc_runs TO txnq_scheduler;
        GRANT USAGE ON SEQUENCE txnq.gc_runs_run_id_seq TO txnq_scheduler;
        GRANT INSERT, UPDATE (state, deleted_at, metadata) ON txnq.ledgers TO txnq_scheduler;
        GRANT UPDATE ON txnq.config TO txnq_scheduler;
        GRANT SELECT (topic_id, partition, ledger_id, entry_log_id, entry_offset, payload_bytes)
           ON txnq.entries TO txnq_scheduler;
        -- VACUUM of the hot tables (lifecycle.vacuum_hot_tables): PostgreSQL
        -- 17's MAINTAIN privilege; before 17 only the owner may, and the job
        -- says it skips them. The tables of txnq.lifecycle.HOT_TABLES.
        IF current_setting('server_version_num')::integer >= 170000 THEN
            FOR r IN SELECT c.oid::regclass AS rel FROM pg_catalog.pg_class c
                      WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind IN ('r', 'p')
                        AND c.relname = ANY (ARRAY['partitions', 'cursors', 'individual_acks',
                                                   'producer_sequences', 'producers', 'consumers',
                                                   'consumer_waiters', 'ledgers', 'entry_logs',
                                                   'config', 'coordinators', 'transactional_ids',
                                                   'txn_buffer_ongoing', 'pending_acks',
                                                   'staged_sends', 'staged_acks', 'claims'])
            LOOP
                EXECUTE format('GRANT MAINTAIN ON %s TO txnq_scheduler', r.rel);
            END LOOP;
        END IF;
    END IF;

    -- Functions, by class.
    FOR r IN
        SELECT p.oid::regprocedure AS fn, p.proname, p.prosecdef, p.proconfig,
               p.prorettype = 'trigger'::regtype AS is_trigger
          FROM pg_catalog.pg_proc p
         WHERE p.pronamespace = 'txnq'::regnamespace AND p.prokind IN ('f', 'p')
    LOOP
        v_base := regexp_replace(r.proname, '_v[0-9]+$', '');
        v_class := CASE
            WHEN v_base = 'grant_roles' THEN 'migration'
            WHEN r.is_trigger THEN 'trigger'
            WHEN v_base ~ '^(require|authorize)(_|$)' OR v_base = ANY (c_internal) THEN 'internal'
            WHEN v_base = ANY (c_pure) THEN 'pure'
            ELSE 'public' END;
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', r.fn);
        IF v_class IN ('public', 'trigger')
           AND NOT (r.prosecdef AND r.proconfig IS NOT NULL
                    AND 'search_path=pg_catalog, txnq, pg_temp' = ANY (r.proconfig)) THEN
            EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER SET search_path = pg_catalog, txnq, pg_temp',
                           r.fn);
        END IF;
        IF v_class IN ('internal', 'pure') AND r.prosecdef THEN
            EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER RESET search_path', r.fn);
        END IF;
        v_to := ARRAY[]::text[];
        IF v_class = 'pure' THEN
            v_to := ARRAY['txnq_client', 'txnq_worker', 'txnq_scheduler'];
        ELSIF v_class = 'public' THEN
            IF NOT v_base = ANY (c_not_client) THEN
                v_to := v_to || 'txnq_client'::text;
            END IF;
            IF v_base = ANY (c_coordinator) THEN
                v_to := v_to || 'txnq_worker'::text;
            END IF;
            IF v_base = ANY (c_scheduler) THEN
                v_to := v_to || 'txnq_scheduler'::text;
            END IF;
            IF v_base = ANY (c_reader) THEN
                v_to := v_to || 'txnq_reader'::text;
            END IF;
        END IF;
        FOREACH v_role IN ARRAY v_roles LOOP
            IF v_role = ANY (v_to) THEN
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', r.fn, v_role);
            ELSE
                EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', r.fn, v_role);
            END IF;
        END LOOP;
    END LOOP;
    RETURN v_moved;
END $$;

REVOKE ALL ON FUNCTION txnq.grant_roles_v2() FROM PUBLIC;
