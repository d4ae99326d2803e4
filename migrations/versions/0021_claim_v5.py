"""claim_v5: a key_shared key stops at its first message a claim could not lock.

issue 20 asked that every flaky test be fixed at its cause. The key_shared
order inversion of docs/subscriptions.md was claim_v4 picking a key's
waiting messages with FOR UPDATE SKIP LOCKED: an earlier message whose claim
row another transaction held (a heartbeat's sweep keeps the lock of a row
it rechecked and left alone until its transaction ends) was passed over,
and a later message of the same key went out first. claim_v5 chooses the
messages, then locks them, and stops each key at its first message it could
not lock; claim_v4 becomes its thin wrapper.

grant_roles_v4 runs at the end (CREATE OR REPLACE resets SECURITY DEFINER
and the pinned search_path). Downgrade reinstalls revision 0017's claim_v4
and drops claim_v5.

Revision ID: 0021
Revises: 0020
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0021/functions/claim_v5.sql",
    "0021/functions/claim_v4.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v4()"

DOWNGRADE = (
    "DROP FUNCTION txnq.claim_v5(integer, bigint, bigint, integer, double precision, integer, "
    "integer)"
)


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), ["0017/functions/claim_v4.sql"])
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    driver_connection.execute(GRANT_ROLES)
