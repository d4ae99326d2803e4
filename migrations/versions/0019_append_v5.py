"""append_v5: an application role's grant read with the topic, in one statement.

issue 17 asked that the permission checks cost a single send at most 5%. As
an application role, a send still cost about 10% more than before the checks
(bench/compare_revisions.py --role): append_v4 asked txnq.authorize_v2 in a
statement of its own, whose start-up in each new transaction (snapshot,
locks, executor) is what a role paid, 10-15 us per send
(bench/permission_overhead.py). append_v5 reads the role's own grant in the
statement that already reads the topic and the settings, and calls
authorize_v2 only for what that does not settle (grants to the role's
groups, and the refusal): about 3 us. Everything else is append_v4's, and
append_v4 becomes a thin wrapper of it.

The header of append_v5.sql says why the lookup is an uncorrelated EXISTS
done for every caller: the other two shapes tried made PL/pgSQL's plan cache
plan the statement anew on every call.

grant_roles_v3 runs at the end (CREATE OR REPLACE resets SECURITY DEFINER
and the pinned search_path). Downgrade reinstalls revision 0015's append_v4
and drops append_v5.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0019/functions/append_v5.sql",
    "0019/functions/append_v4.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v3()"

DOWNGRADE = (
    "DROP FUNCTION txnq.append_v5(integer, integer, bigint, integer, bigint, bytea[], bytea[], "
    "jsonb[], timestamptz[], integer, bigint)"
)


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), ["0015/functions/append_v4.sql"])
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    driver_connection.execute(GRANT_ROLES)
