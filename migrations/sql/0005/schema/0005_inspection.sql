-- Revision 0005: the read-only role of the inspection views. Applied by
-- migrations/versions/0005_inspection_views.py after the views.
--
-- txnq_reader (NOLOGIN) may read the inspection views and nothing else: USAGE
-- on schema txnq, SELECT on each view, EXECUTE on the one function a view
-- calls for it. Views read their tables with their owner's privileges, so the
-- role needs no grant on any table, and gets none: txnq.entries, txnq.cursors
-- and the rest stay unreadable to it. txnq.messages (payloads) is not granted:
-- the role shows how the queue is doing, not what it carries.
--
-- Roles belong to the cluster, not to one database: the role is created only
-- if absent, by whichever database migrates first, and a migration running at
-- the same moment in another database tolerates losing that race. A migrating
-- role without CREATEROLE gets a NOTICE instead of an error: the views work,
-- and an administrator creates the role and grants (docs/views.md has the
-- statements) when a read-only role is wanted.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_reader') THEN
        BEGIN
            CREATE ROLE txnq_reader NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN
                NULL;  -- another database's migration created it just now
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'txnq: role txnq_reader not created: % (needs CREATEROLE)', SQLERRM
                    USING HINT = 'ask an administrator to run CREATE ROLE txnq_reader NOLOGIN and the '
                                 'GRANT statements of docs/views.md; the views work without it';
        END;
    END IF;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_reader') THEN
        GRANT USAGE ON SCHEMA txnq TO txnq_reader;
        GRANT SELECT ON txnq.topic_status, txnq.partition_status, txnq.subscription_status,
                        txnq.transaction_status, txnq.ledger_status, txnq.entry_log_status,
                        txnq.gc_history
           TO txnq_reader;
    END IF;
    -- Counts of entry logs only, but they are read with the owner's rights:
    -- nobody else calls it.
    REVOKE ALL ON FUNCTION txnq.entry_log_usage_inspect_v1(integer) FROM PUBLIC;
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_reader') THEN
        GRANT EXECUTE ON FUNCTION txnq.entry_log_usage_inspect_v1(integer) TO txnq_reader;
    END IF;
END $$;
