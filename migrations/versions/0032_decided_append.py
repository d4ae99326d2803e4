"""append_v6: a client transaction's last batches written into its commit.

A client transaction's commit(), when its producer still held the
transaction's last batches (none written yet on their partitions, the
common case of a transaction that produces less than a batch per
partition), ran one append transaction per partition -- each registering
the transaction on the partition (txn_partitions, txn_buffer_ongoing,
ongoing_txns) -- and then the decision, whose marker phase undid that
registration partition by partition. append_v6(..., p_decided => true)
writes such a batch after txnq.end_and_complete_txn_v1 in the same
PostgreSQL transaction, which has just committed the client transaction:
the entry with the transaction's id, its COMMIT marker and its
txn_partitions row as the marker phase leaves them, readable at once. The
client sends the decision and the batches together (one round trip, one
WAL flush; docs/transactions.md, "A commit that carries its batches").

append_v5 becomes a thin wrapper of append_v6 (decided false); grant_roles_v6
classifies append_v6 by its name, as v5. Downgrade reinstalls revision
0019's append_v5 and drops append_v6.

Revision ID: 0032
Revises: 0031
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0032/functions/append_v6.sql",
    "0032/functions/append_v5.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v6()"

DOWNGRADE = (
    "DROP FUNCTION txnq.append_v6(integer, integer, bigint, integer, bigint, bytea[], bytea[], "
    "jsonb[], timestamptz[], integer, bigint, boolean)"
)


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), ["0019/functions/append_v5.sql"])
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    driver_connection.execute(GRANT_ROLES)
