-- txnq.grant_roles_v6: the grants of revision 0027, run by `txnq migrate`
-- after every upgrade (the newest grant_roles_vN): grant_roles_v5's, and
-- unfold_claim_ranges (claim ranges into claim rows, called by the shared
-- data-path functions only) in the internal class: SECURITY INVOKER, no
-- EXECUTE for any role (docs/security.md); and on PostgreSQL 17 and later
-- MAINTAIN on txnq.claim_ranges for txnq_scheduler, as on the other hot
-- tables (txnq.lifecycle.HOT_TABLES: the scheduler's vacuum).
--
-- Idempotent; run by the migrating role (SECURITY INVOKER). Returns
-- grant_roles_v5's count.
CREATE OR REPLACE FUNCTION txnq.grant_roles_v6()
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    c_internal_too CONSTANT text[] := ARRAY['unfold_claim_ranges'];
    v_moved integer;
    v_role text;
    r record;
BEGIN
    v_moved := txnq.grant_roles_v5();
    FOR r IN
        SELECT p.oid::regprocedure AS fn, p.prosecdef
          FROM pg_catalog.pg_proc p
         WHERE p.pronamespace = 'txnq'::regnamespace
           AND regexp_replace(p.proname, '_v[0-9]+$', '') = ANY (c_internal_too)
    LOOP
        IF r.prosecdef THEN
            EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER RESET search_path', r.fn);
        END IF;
        FOREACH v_role IN ARRAY ARRAY['txnq_client', 'txnq_worker', 'txnq_reader', 'txnq_scheduler'] LOOP
            CONTINUE WHEN pg_catalog.to_regrole(v_role) IS NULL;
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', r.fn, v_role);
        END LOOP;
    END LOOP;
    IF current_setting('server_version_num')::integer >= 170000
       AND pg_catalog.to_regrole('txnq_scheduler') IS NOT NULL THEN
        EXECUTE 'GRANT MAINTAIN ON txnq.claim_ranges TO txnq_scheduler';
    END IF;
    RETURN v_moved;
END $$;
REVOKE ALL ON FUNCTION txnq.grant_roles_v6() FROM PUBLIC;
