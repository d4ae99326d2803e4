-- txnq.grant_roles_v3: the grants of revision 0016, run by `txnq migrate`
-- after every upgrade (the newest grant_roles_vN): grant_roles_v2's
-- (docs/security.md), and txnq.job_failures for the two worker roles, whose
-- runs record there what they failed on (txnq/job_failures.py): the
-- scheduler replaces its jobs' rows after each run, a coordinator worker adds
-- and clears a transaction's. The table holds no payloads (topic names,
-- partitions, error texts); txnq_reader reads it through the view
-- txnq.job_failure_status, txnq_client not at all.
--
-- Idempotent; run by the migrating role (SECURITY INVOKER). Returns
-- grant_roles_v2's count.
CREATE OR REPLACE FUNCTION txnq.grant_roles_v3()
RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    v_moved integer;
    v_role text;
BEGIN
    v_moved := txnq.grant_roles_v2();
    FOREACH v_role IN ARRAY ARRAY['txnq_worker', 'txnq_scheduler'] LOOP
        IF pg_catalog.to_regrole(v_role) IS NOT NULL THEN
            EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON txnq.job_failures TO %I', v_role);
        END IF;
    END LOOP;
    RETURN v_moved;
END $$;

REVOKE ALL ON FUNCTION txnq.grant_roles_v3() FROM PUBLIC;
