"""roll_entry_log_v4: a roll holds SHARE on txnq.entries until it commits.

A committed roll is visible to other sessions' snapshots a moment before
PostgreSQL sends the invalidation of txnq.entries' partitions, and ATTACH
PARTITION's SHARE UPDATE EXCLUSIVE does not keep an append out of that
moment: an append could read the new active entry log id and route its row
with the partitions its session knew before, failing with "no partition of
relation entries found for row" (tests/integration/test_produce.py's
rolling test, once in CI on PostgreSQL 18). Holding SHARE makes an append
wait for the roll's end, after its invalidation; a roll that cannot have it
within 200 ms (an application transaction holds an append open) changes
nothing and returns the active id, for the next roll to try again.

roll_entry_log_v3 becomes a thin wrapper of v4, so its callers (the
scheduler, an append's roll hint, a proxy's routing, v2 and v1) take the
lock with no new version of theirs. grant_roles_v6 classifies v4 by its
name, as v3 (public: client and scheduler). Downgrade reinstalls revision
0023's v3 and drops v4.

Revision ID: 0031
Revises: 0030
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0031/functions/roll_entry_log_v4.sql",
    "0031/functions/roll_entry_log_v3.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v6()"


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), ["0023/functions/roll_entry_log_v3.sql"])
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute("DROP FUNCTION txnq.roll_entry_log_v4(boolean)")
    driver_connection.execute(GRANT_ROLES)
