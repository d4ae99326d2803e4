-- Revision 0007: the PostgreSQL roles of a txnq deployment. Applied by
-- migrations/versions/0007_roles.py; docs/operations.md ("Roles") explains
-- how to use them.
--
--   txnq_admin   owns schema txnq and everything in it: runs `txnq migrate`,
--                and the scheduler's GC (DETACH/DROP of entry-log partitions
--                and VACUUM are the owner's rights in PostgreSQL);
--   txnq_client  produce, consume, transactions and topic administration:
--                reads and writes the rows of txnq's tables, no DDL (no CREATE
--                on the schema, owns nothing); txnq.config is read-only to it;
--   txnq_worker  the coordinator workers (and the scheduler's non-DDL jobs):
--                what txnq_client may do, and also write txnq.config (the
--                scheduler publishes the server-side settings);
--   txnq_reader  the inspection views only (created by revision 0005).
--
-- All four are NOLOGIN group roles: a deployment creates its own LOGIN roles
-- and grants them one of these (`GRANT txnq_client TO orders_service`), the
-- usual PostgreSQL pattern. Roles belong to the cluster, not to one database:
-- each is created only if absent, by whichever database migrates first, and a
-- migration running at the same moment in another database tolerates losing
-- that race. A migrating role without CREATEROLE gets a NOTICE instead of an
-- error; an administrator then creates the roles (docs/operations.md) and the
-- next `txnq migrate` grants them.
--
-- The grants themselves live in txnq.grant_roles_v1(), which `txnq migrate`
-- calls after every upgrade (txnq.migrate.upgrade): tables, views, sequences
-- and functions that later revisions add are granted by the same rules, with
-- nothing for a later revision to remember. ALTER DEFAULT PRIVILEGES covers
-- what txnq_admin creates between migrations (the entry-log partitions that
-- roll_entry_log_v1 and compaction create).
DO $$
DECLARE
    v_role text;
BEGIN
    FOREACH v_role IN ARRAY ARRAY['txnq_admin', 'txnq_client', 'txnq_worker', 'txnq_reader'] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role) THEN
            BEGIN
                EXECUTE format('CREATE ROLE %I NOLOGIN', v_role);
            EXCEPTION
                WHEN duplicate_object OR unique_violation THEN
                    NULL;  -- another database's migration created it just now
                WHEN insufficient_privilege THEN
                    RAISE NOTICE 'txnq: role % not created: % (needs CREATEROLE)', v_role, SQLERRM
                        USING HINT = 'ask an administrator to run CREATE ROLE ' || v_role
                                     || ' NOLOGIN, then run txnq migrate again (docs/operations.md)';
            END;
        END IF;
    END LOOP;
END $$;

-- txnq.grant_roles_v1: give txnq_admin the schema and every object in it, and
-- grant the other roles what they may do. Idempotent; run by the migrating
-- role (SECURITY INVOKER): ownership moves only when that role may act as
-- txnq_admin (a superuser, or a member of txnq_admin), else it stays where it
-- is and a NOTICE says so. Roles that do not exist are skipped.
--
-- Returns the number of objects whose owner changed.
CREATE OR REPLACE FUNCTION txnq.grant_roles_v1()
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_has_admin boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_admin');
    v_has_client boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_client');
    v_has_worker boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_worker');
    v_has_reader boolean := EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_reader');
    v_users text;
    v_moved integer := 0;
    r record;
BEGIN
    v_users := concat_ws(', ', CASE WHEN v_has_client THEN 'txnq_client' END,
                               CASE WHEN v_has_worker THEN 'txnq_worker' END);

    -- Ownership. Partitions and tables first: ALTER TABLE also moves the
    -- sequences their columns own and their indexes; a sequence that belongs
    -- to a table cannot be moved on its own.
    IF v_has_admin AND pg_catalog.pg_has_role(current_user, 'txnq_admin', 'MEMBER') THEN
        IF (SELECT nspowner::regrole::text FROM pg_catalog.pg_namespace WHERE nspname = 'txnq')
           <> 'txnq_admin' THEN
            ALTER SCHEMA txnq OWNER TO txnq_admin;
            v_moved := v_moved + 1;
        END IF;
        FOR r IN
            SELECT c.oid::regclass AS rel, c.relkind
              FROM pg_catalog.pg_class c
             WHERE c.relnamespace = 'txnq'::regnamespace
               AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
               AND c.relowner <> 'txnq_admin'::regrole
               AND NOT (c.relkind = 'S' AND EXISTS (
                        SELECT 1 FROM pg_catalog.pg_depend d
                         WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid
                           AND d.refclassid = 'pg_class'::regclass AND d.deptype IN ('a', 'i')))
             ORDER BY c.relkind <> 'p', c.relkind <> 'r', c.oid
        LOOP
            CASE r.relkind
                WHEN 'v' THEN EXECUTE format('ALTER VIEW %s OWNER TO txnq_admin', r.rel);
                WHEN 'm' THEN EXECUTE format('ALTER MATERIALIZED VIEW %s OWNER TO txnq_admin', r.rel);
                WHEN 'S' THEN EXECUTE format('ALTER SEQUENCE %s OWNER TO txnq_admin', r.rel);
                WHEN 'f' THEN EXECUTE format('ALTER FOREIGN TABLE %s OWNER TO txnq_admin', r.rel);
                ELSE EXECUTE format('ALTER TABLE %s OWNER TO txnq_admin', r.rel);
            END CASE;
            v_moved := v_moved + 1;
        END LOOP;
        FOR r IN
            SELECT p.oid::regprocedure AS fn
              FROM pg_catalog.pg_proc p
             WHERE p.pronamespace = 'txnq'::regnamespace AND p.proowner <> 'txnq_admin'::regrole
        LOOP
            EXECUTE format('ALTER ROUTINE %s OWNER TO txnq_admin', r.fn);
            v_moved := v_moved + 1;
        END LOOP;
        -- Enums, domains and stand-alone composite types (a table's row type
        -- moves with its table).
        FOR r IN
            SELECT t.oid::regtype AS typ, t.typtype
              FROM pg_catalog.pg_type t
             WHERE t.typnamespace = 'txnq'::regnamespace AND t.typowner <> 'txnq_admin'::regrole
               AND (t.typtype IN ('e', 'd', 'r', 'm')
                    OR (t.typtype = 'c' AND (SELECT relkind FROM pg_catalog.pg_class
                                              WHERE oid = t.typrelid) = 'c'))
        LOOP
            IF r.typtype = 'd' THEN
                EXECUTE format('ALTER DOMAIN %s OWNER TO txnq_admin', r.typ);
            ELSE
                EXECUTE format('ALTER TYPE %s OWNER TO txnq_admin', r.typ);
            END IF;
            v_moved := v_moved + 1;
        END LOOP;
        -- What txnq_admin creates later (entry-log partitions from
        -- roll_entry_log_v1 and compaction) is granted as the migration grants.
        IF v_users <> '' THEN
            EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE txnq_admin IN SCHEMA txnq '
                           'GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO %s', v_users);
            EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE txnq_admin IN SCHEMA txnq '
                           'GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO %s', v_users);
        END IF;
    ELSIF v_has_admin THEN
        RAISE NOTICE 'txnq: schema txnq stays owned by its current owners: % may not act as txnq_admin',
            current_user
            USING HINT = 'migrate as a superuser or a member of txnq_admin to move it (docs/operations.md)';
    END IF;

    -- The data path: rows, not structure. USAGE on the schema without CREATE.
    IF v_users <> '' THEN
        EXECUTE format('GRANT USAGE ON SCHEMA txnq TO %s', v_users);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA txnq TO %s',
                       v_users);
        EXECUTE format('GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA txnq TO %s', v_users);
        EXECUTE format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA txnq TO %s', v_users);
        -- The schema version is the migration's: read it (clients check it), never write it.
        IF to_regclass('txnq.alembic_version') IS NOT NULL THEN
            EXECUTE format('REVOKE INSERT, UPDATE, DELETE ON txnq.alembic_version FROM %s', v_users);
        END IF;
        -- The grant function is the migration's too.
        EXECUTE format('REVOKE EXECUTE ON FUNCTION txnq.grant_roles_v1() FROM %s', v_users);
    END IF;
    -- Server-side settings: published by `txnq migrate` and the scheduler,
    -- read by everyone else (roll_entry_log_v1 updates it as its owner).
    IF v_has_client THEN
        REVOKE INSERT, UPDATE, DELETE ON txnq.config FROM txnq_client;
    END IF;

    -- The inspection views, and any view a later revision adds: revision
    -- 0005 granted the first ones; views only, never a table. Not
    -- txnq.messages nor txnq.committed_messages (revision 0009, Spark's
    -- committed range): they show payloads, and the reader sees how the queue
    -- is doing, not what it carries (a later view that shows payloads goes in
    -- this list too).
    IF v_has_reader THEN
        GRANT USAGE ON SCHEMA txnq TO txnq_reader;
        FOR r IN
            SELECT c.oid::regclass AS rel FROM pg_catalog.pg_class c
             WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind IN ('v', 'm')
               AND c.relname NOT IN ('messages', 'committed_messages')
        LOOP
            EXECUTE format('GRANT SELECT ON %s TO txnq_reader', r.rel);
        END LOOP;
    END IF;

    -- Functions that run as their owner (SECURITY DEFINER) are for the roles
    -- above, not for every role of the cluster; of those, a client may call
    -- only the data path's (an append rolls the entry log), the inspection
    -- helper is the reader's (revision 0005), the rest are the workers'.
    FOR r IN
        SELECT p.oid::regprocedure AS fn, p.proname FROM pg_catalog.pg_proc p
         WHERE p.pronamespace = 'txnq'::regnamespace AND p.prosecdef
    LOOP
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', r.fn);
        IF v_has_client AND r.proname NOT IN ('roll_entry_log_v1') THEN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM txnq_client', r.fn);
        END IF;
    END LOOP;
    RETURN v_moved;
END $$;

REVOKE ALL ON FUNCTION txnq.grant_roles_v1() FROM PUBLIC;

-- The one data-path function that changes structure: an append that finds the
-- active entry log full calls roll_entry_log_v1, which creates and attaches a
-- partition of txnq.entries. That needs the owner of txnq.entries, so the
-- function runs as its owner (txnq_admin) for a txnq_client. Its signature and
-- behaviour do not change. search_path is pinned, as for every SECURITY
-- DEFINER function.
ALTER FUNCTION txnq.roll_entry_log_v1(boolean) SECURITY DEFINER SET search_path = pg_catalog, txnq, pg_temp;
-- Compaction's target table is created the same way, so every entry-log
-- partition is owned by txnq_admin whichever login role's scheduler made it:
-- the SECURITY DEFINER inspection function (owned by txnq_admin) can read it,
-- and default privileges apply. Only the scheduler calls it (grant_roles_v1
-- keeps it from txnq_client).
ALTER FUNCTION txnq.compaction_begin_v1(integer) SECURITY DEFINER SET search_path = pg_catalog, txnq, pg_temp;

SELECT txnq.grant_roles_v1();
