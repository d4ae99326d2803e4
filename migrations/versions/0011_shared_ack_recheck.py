"""Shared subscriptions: a transactional acknowledgement checks for a
conflicting transaction under the claim row locks (txnq.ack_shared_v2), so two
transactions acknowledging one message at the same moment conflict instead of
both returning as if they held it. docs/subscriptions.md, "Transactions".

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0011/functions/ack_shared_v2.sql",
]

# ack_shared_v1 stays (revision 0008): clients of revision 0010 keep calling it.
DOWNGRADE = """
DROP FUNCTION txnq.ack_shared_v2(integer, integer, bigint, bigint[], integer[], integer, bigint);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
