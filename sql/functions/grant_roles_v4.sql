-- txnq.grant_roles_v4: the grants of revision 0020, run by `txnq migrate`
-- after every upgrade (the newest grant_roles_vN): grant_roles_v3's
-- (docs/security.md), and the scheduler class for the functions that
-- arrived after grant_roles_v2's class lists were written: purge_history
-- and txn_log_maintain (the history purge and txn_log's time partitions),
-- compaction_merge (revision 0022; docs/lifecycle.md). grant_roles_v2 gives a function it
-- does not know the client class (SECURITY DEFINER, EXECUTE for txnq_client);
-- this takes EXECUTE back from every role but txnq_scheduler.
--
-- Idempotent; run by the migrating role (SECURITY INVOKER). Returns
-- grant_roles_v3's count.
CREATE OR REPLACE FUNCTION txnq.grant_roles_v4()
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    -- Base names (without _vN) of the scheduler-only functions added since
    -- grant_roles_v2. Keep docs/security.md in step.
    c_scheduler_only CONSTANT text[] := ARRAY['purge_history', 'txn_log_maintain', 'compaction_merge'];
    v_moved integer;
    v_role text;
    r record;
BEGIN
    v_moved := txnq.grant_roles_v3();
    FOR r IN
        SELECT p.oid::regprocedure AS fn
          FROM pg_catalog.pg_proc p
         WHERE p.pronamespace = 'txnq'::regnamespace
           AND regexp_replace(p.proname, '_v[0-9]+$', '') = ANY (c_scheduler_only)
    LOOP
        FOREACH v_role IN ARRAY ARRAY['txnq_client', 'txnq_worker', 'txnq_reader', 'txnq_scheduler'] LOOP
            CONTINUE WHEN pg_catalog.to_regrole(v_role) IS NULL;
            IF v_role = 'txnq_scheduler' THEN
                EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', r.fn, v_role);
            ELSE
                EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', r.fn, v_role);
            END IF;
        END LOOP;
    END LOOP;
    RETURN v_moved;
END $$;

REVOKE ALL ON FUNCTION txnq.grant_roles_v4() FROM PUBLIC;
