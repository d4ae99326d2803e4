-- txnq.grant_roles_v5: the grants of revision 0024, run by `txnq migrate`
-- after every upgrade (the newest grant_roles_vN): grant_roles_v4's
-- (docs/security.md), and the web console's functions (docs/console.md):
-- console_sample (the scheduler's sampling job) in the scheduler class,
-- console_role also for txnq_reader (a read-only console asks it who it
-- is). console_record_action stays in the client class: it refuses every
-- caller that may not administer.
--
-- Idempotent; run by the migrating role (SECURITY INVOKER). Returns
-- grant_roles_v4's count.
CREATE OR REPLACE FUNCTION txnq.grant_roles_v5()
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    c_scheduler_only CONSTANT text[] := ARRAY['console_sample'];
    c_reader_too CONSTANT text[] := ARRAY['console_role'];
    v_moved integer;
    v_role text;
    r record;
BEGIN
    v_moved := txnq.grant_roles_v4();
    FOR r IN
        SELECT p.oid::regprocedure AS fn, regexp_replace(p.proname, '_v[0-9]+$', '') AS base
          FROM pg_catalog.pg_proc p
         WHERE p.pronamespace = 'txnq'::regnamespace
           AND regexp_replace(p.proname, '_v[0-9]+$', '') = ANY (c_scheduler_only || c_reader_too)
    LOOP
        FOREACH v_role IN ARRAY ARRAY['txnq_client', 'txnq_worker', 'txnq_reader', 'txnq_scheduler'] LOOP
            CONTINUE WHEN pg_catalog.to_regrole(v_role) IS NULL;
            IF r.base = ANY (c_scheduler_only) THEN
                IF v_role = 'txnq_scheduler' THEN
                    EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', r.fn, v_role);
                ELSE
                    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', r.fn, v_role);
                END IF;
            ELSIF v_role = 'txnq_reader' THEN
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', r.fn, v_role);
            END IF;
        END LOOP;
    END LOOP;
    RETURN v_moved;
END $$;
REVOKE ALL ON FUNCTION txnq.grant_roles_v5() FROM PUBLIC;
