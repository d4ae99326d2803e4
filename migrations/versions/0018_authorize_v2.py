"""authorize_v2: an application role's own grants in one statement.

Every public function that names a topic asks txnq.authorize_v1 whether the
calling role may act on it. For an application role with a grant of its own
on the topic or on a prefix of it (how docs/security.md sets one up),
authorize_v1 ran four statements (the grants on the exact name with a group
check, the topic's name, then permission_granted_v1's prefix lookup): about
13 us per call, on every send, fetch and ack. authorize_v2 finds those grants
with the topic's name in one statement (about 4 us); grants to groups are
looked up only when the role has none of its own. authorize_v1 becomes a
thin wrapper of it, so its 61 callers run the new body unchanged.

grant_roles_v3 runs at the end (CREATE OR REPLACE resets SECURITY DEFINER
and the pinned search_path). Downgrade reinstalls revision 0015's
authorize_v1 and drops authorize_v2.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0018/functions/authorize_v2.sql",
    "0018/functions/authorize_v1.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v3()"

DOWNGRADE = "DROP FUNCTION txnq.authorize_v2(integer, text)"


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), ["0015/functions/authorize_v1.sql"])
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    driver_connection.execute(GRANT_ROLES)
