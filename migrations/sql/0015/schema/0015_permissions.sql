-- Revision 0015: permissions per topic (docs/security.md). Applied by
-- migrations/versions/0015_sql_boundary.py after the functions it uses
-- (caller_role_v1 for the DEFAULT below).
--
--   txnq_scheduler  a new NOLOGIN group role: the scheduler's lifecycle jobs
--                   (grant_roles_v2 says exactly what it may run);
--   txnq.topic_permissions  a role may produce, consume or administer a topic
--                   or every topic whose name starts with a prefix;
--   txnq.transactions.opened_by  the role that opened each transaction (only
--                   it, or an admin, may write into or end it).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_scheduler') THEN
        BEGIN
            CREATE ROLE txnq_scheduler NOLOGIN;
        EXCEPTION
            WHEN duplicate_object OR unique_violation THEN
                NULL;  -- another database's migration created it just now
            WHEN insufficient_privilege THEN
                RAISE NOTICE 'txnq: role txnq_scheduler not created: % (needs CREATEROLE)', SQLERRM
                    USING HINT = 'ask an administrator to run CREATE ROLE txnq_scheduler NOLOGIN, '
                                 'then run txnq migrate again (docs/security.md)';
        END;
    END IF;
END $$;

-- One row per (topic name or prefix, role, action). Roles are kept by name,
-- as Pulsar keeps them: a grant outlives a dropped role (the listing says the
-- role is gone) and applies again to a role created with the same name; a
-- grant on an exact name needs no topic yet (it allows creating it).
CREATE TABLE txnq.topic_permissions (
    resource   text COLLATE "C" NOT NULL,  -- byte order: a prefix sorts before its names
    is_prefix  boolean NOT NULL,
    grantee    text NOT NULL,
    action     text NOT NULL CHECK (action IN ('produce', 'consume', 'admin')),
    granted_by text NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (resource, is_prefix, grantee, action)
);
-- A role's grants (listings), and its own prefix grants (permission_granted_v1).
CREATE INDEX topic_permissions_by_grantee ON txnq.topic_permissions (grantee, resource);
-- The prefix grants, for permission_granted_v1's range scan.
CREATE INDEX topic_permissions_prefixes ON txnq.topic_permissions (resource) WHERE is_prefix;

-- The role that opened the transaction (an OID, 4 bytes: the row stays
-- narrow). Added without a default first, so the transactions open during the
-- upgrade keep NULL ("opened before permissions": any role may still end
-- them) instead of the migrating role's OID.
ALTER TABLE txnq.transactions ADD COLUMN opened_by oid;
ALTER TABLE txnq.transactions ALTER COLUMN opened_by SET DEFAULT txnq.caller_role_v1();
