"""end_and_complete_txn_v1: a client's commit() and abort() in one function.

issue 23 asked commit() within 2x of a raw INSERT+COMMIT. The client ended a
transaction with one statement of two functions, end_txn_v3 and
complete_txn_v2; the second called complete_txn_partition_v2 for each
partition, complete_txn_subscription_v2 for each subscription and
finish_txn_v2. Between them they locked and read the transaction row three
times, checked the caller twice, wrote the row twice and re-read the
decision per partition: 245 us of server time for a one-partition commit
(track_functions; docs/benchmarks.md). end_and_complete_txn_v1 does the same
work once, with the same effects; the split functions stay for
commit(wait=False), the coordinator workers and the admin.

grant_roles_v6 runs at the end: the new function is public, of the client
class (SECURITY DEFINER, EXECUTE for txnq_client), as end_txn_v3 is.
Downgrade drops it.

Revision ID: 0029
Revises: 0028
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

SQL_FILES = ["0029/functions/end_and_complete_txn_v1.sql"]

GRANT_ROLES = "SELECT txnq.grant_roles_v6()"

DOWNGRADE = "DROP FUNCTION txnq.end_and_complete_txn_v1(integer, bigint, boolean, text)"


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(DOWNGRADE)
    driver_connection.execute(GRANT_ROLES)
