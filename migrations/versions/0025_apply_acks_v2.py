"""apply_acks_v2: the fold above a cursor reads its entries 64 at a time.

issue 23 asked exclusive consume + ack to reach PgQ's rate. Every
acknowledgement outside a transaction (and every commit of pending acks,
TTL's and the backlog quota's moves) ends in apply_acks_v1's walk up from
the new mark-delete offset over the entries already passed as a whole. That
walk is a PL/pgSQL FOR loop, whose query PostgreSQL plans for its whole
result: it read and sorted every entry of the partition above the cursor to
look at the first one or two, so an acknowledgement cost the partition's
backlog (2.5 ms of server time with 7,000 one-message entries behind the
cursor, measured with auto_explain; docs/benchmarks.md). apply_acks_v2 reads
64 entries at a time in primary-key order and reads on only while all of
them were passed; apply_acks_v1 becomes its thin wrapper, so its callers
(ack_v3, complete_txn_subscription_v2, expire_ttl_v2, check_backlog_quota_v2,
publish_staged_v2) need no new version.

grant_roles_v5 runs at the end (a new function is executable by PUBLIC until
it classifies it: apply_acks is internal). Downgrade reinstalls revision
0002's apply_acks_v1 and drops apply_acks_v2.

Revision ID: 0025
Revises: 0024
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0025/functions/apply_acks_v2.sql",
    "0025/functions/apply_acks_v1.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v5()"

DOWNGRADE = (
    "DROP FUNCTION txnq.apply_acks_v2(integer, integer, bigint, bigint, bigint[], integer[], "
    "integer[])"
)


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), ["0002/functions/apply_acks_v1.sql"])
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    driver_connection.execute(GRANT_ROLES)
