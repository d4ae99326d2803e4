"""The message lifecycle: TTL expiry, retention of ledgers, entry-log GC and
its history.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0003/schema/0003_lifecycle.sql",
    "0003/functions/expire_ttl_v1.sql",
    "0003/functions/apply_retention_v1.sql",
    "0003/functions/entry_log_usage_v1.sql",
]

# Back to revision 0002. Ledgers deleted by retention stay DELETED and dropped
# entry logs stay dropped: 0002 reads both as it always did.
DOWNGRADE = """
DROP FUNCTION IF EXISTS txnq.expire_ttl_v1(integer),
    txnq.apply_retention_v1(integer),
    txnq.entry_log_usage_v1(integer);
DROP TABLE txnq.gc_runs;
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
