-- txnq.schema_revision_v1: the Alembic revision the schema is at, for the
-- client's schema check (txnq.migrate.check_schema) by roles that may not
-- read txnq.alembic_version. Revision 0015.
--
-- Parameters: none. Returns the revision (NULL: none recorded).
-- Locks: none. Errors: none.
CREATE OR REPLACE FUNCTION txnq.schema_revision_v1()
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT v.version_num::text FROM txnq.alembic_version v LIMIT 1;
$$;
