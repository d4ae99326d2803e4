"""PostgreSQL roles: txnq_admin owns the schema (migrations, GC), txnq_client
reads and writes rows (produce, consume, transactions; no DDL), txnq_worker
runs the workers; txnq_reader (revision 0005) reads the views.

RULE FOR LATER REVISIONS: nothing to do by hand. ``txnq migrate``
(txnq.database.migrate.upgrade) calls ``txnq.grant_roles_v1()`` after every upgrade,
which hands any new table, view, sequence or function in schema txnq to
txnq_admin and grants it to txnq_client and txnq_worker (views also to
txnq_reader) by the rules in migrations/sql/0007/schema/0007_roles.sql. A revision needs its
own grants only for an exception to those rules: a table the client must
not write (revoke it in grant_roles_vN+1), or a function that must run as
the owner (``SECURITY DEFINER SET search_path = pg_catalog, txnq, pg_temp``;
grant_roles revokes EXECUTE on those from PUBLIC). When a revision changes
the rules, it adds ``grant_roles_v2`` and migrate calls the newest one.
docs/operations.md ("Roles") says the same for operators.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

SQL_FILES = ["0007/schema/0007_roles.sql"]

# Back to revision 0006: the schema's objects go back to the migrating role
# (REASSIGN OWNED works in this database only), txnq_client and txnq_worker
# lose their grants here, roll_entry_log_v1 runs as its caller again. The
# roles themselves stay: they belong to the cluster, other databases may use
# them, and DROP ROLE fails while any database still grants them something
# (an administrator drops them when no database uses txnq: docs/operations.md).
# txnq_reader keeps what revision 0005 granted.
DOWNGRADE = """
ALTER FUNCTION txnq.roll_entry_log_v1(boolean) SECURITY INVOKER RESET search_path;
GRANT EXECUTE ON FUNCTION txnq.roll_entry_log_v1(boolean) TO PUBLIC;
ALTER FUNCTION txnq.compaction_begin_v1(integer) SECURITY INVOKER RESET search_path;
GRANT EXECUTE ON FUNCTION txnq.compaction_begin_v1(integer) TO PUBLIC;
DROP FUNCTION IF EXISTS txnq.grant_roles_v1();
DO $$
DECLARE
    v_role text;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = 'txnq_admin')
       AND pg_catalog.pg_has_role(current_user, 'txnq_admin', 'MEMBER') THEN
        FOREACH v_role IN ARRAY ARRAY['txnq_client', 'txnq_worker'] LOOP
            IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role) THEN
                EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE txnq_admin IN SCHEMA txnq '
                               'REVOKE ALL ON TABLES FROM %I', v_role);
                EXECUTE format('ALTER DEFAULT PRIVILEGES FOR ROLE txnq_admin IN SCHEMA txnq '
                               'REVOKE ALL ON SEQUENCES FROM %I', v_role);
            END IF;
        END LOOP;
        IF current_user <> 'txnq_admin' THEN
            EXECUTE format('REASSIGN OWNED BY txnq_admin TO %I', current_user);
        END IF;
    END IF;
    FOREACH v_role IN ARRAY ARRAY['txnq_client', 'txnq_worker'] LOOP
        IF EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = v_role) THEN
            EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA txnq FROM %I', v_role);
            EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA txnq FROM %I', v_role);
            EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA txnq FROM %I', v_role);
            EXECUTE format('REVOKE ALL ON SCHEMA txnq FROM %I', v_role);
        END IF;
    END LOOP;
END $$;
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
