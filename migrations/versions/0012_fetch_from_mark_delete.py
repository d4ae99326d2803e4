"""Exclusive and failover consumers fetch from no lower than the cursor's
mark-delete offset (txnq.fetch_v3), so a read position older than an
acknowledgement another transaction committed does not deliver acknowledged
messages again. docs/sql-api.md.

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0012/functions/fetch_v3.sql",
]

# fetch_v2 stays (revision 0002): clients of revision 0011 keep calling it.
DOWNGRADE = """
DROP FUNCTION txnq.fetch_v3(integer, integer, bigint, bigint, integer, bigint);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
