"""One WAL flush per client transaction: open_txn_v3 and end_txn_v3.

issue 23 (item 4) asked transactional produce to reach 0.8x of the
non-transactional batched send. A transaction of 1,000 messages over four
partitions waited for six WAL flushes (its open, four appends, its
decision) where a batched send waits for one per 1,000 messages. A client
transaction's open, appends and acks now commit with synchronous_commit
off, and only the decision waits for the flush: WAL is flushed in order, so
the decision's flush makes every earlier write of the transaction durable
with it. A crash of PostgreSQL before the decision may lose the last
unflushed writes, so the transaction records the server's incarnation (an
UNLOGGED row, which crash recovery empties) at its open, and end_txn_v3
decides ABORTING (reason crash) for a commit in another incarnation.
Transaction ids stay unique across a crash: numbers are reserved by durable
blocks (migrations/sql/0026/schema/0026_unflushed_transactions.sql and
docs/transactions.md say more).

open_txn_v2 and end_txn_v2 become wrappers of the v3 functions; open_txn_v2
opens durably, as before (the Spark sink and SQL callers use it).

grant_roles_v5 runs at the end (CREATE OR REPLACE resets SECURITY DEFINER
and the pinned search_path). Downgrade reinstalls revision 0015's v2 bodies
and drops what this revision added.

Revision ID: 0026
Revises: 0025
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0026/schema/0026_unflushed_transactions.sql",
    "0026/functions/open_txn_v3.sql",
    "0026/functions/open_txn_v2.sql",
    "0026/functions/end_txn_v3.sql",
    "0026/functions/end_txn_v2.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v5()"

DOWNGRADE = [
    "DROP FUNCTION txnq.open_txn_v3(integer, double precision, boolean)",
    "DROP FUNCTION txnq.end_txn_v3(integer, bigint, boolean, text, boolean)",
    "UPDATE txnq.transactions SET reason = 'client' WHERE reason = 'crash'",
    "ALTER TABLE txnq.transactions DROP CONSTRAINT transactions_reason_check",
    "ALTER TABLE txnq.transactions ADD CONSTRAINT transactions_reason_check"
    " CHECK (reason IN ('client', 'timeout', 'fenced', 'admin'))",
    "ALTER TABLE txnq.transactions DROP COLUMN incarnation",
    "ALTER TABLE txnq.coordinators DROP COLUMN reserved_txn_seq, DROP COLUMN incarnation",
    "DROP TABLE txnq.server_incarnation",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    # The v2 bodies first: they stop calling the v3 functions dropped below.
    apply_sql_files(
        op.get_bind(), ["0015/functions/open_txn_v2.sql", "0015/functions/end_txn_v2.sql"]
    )
    driver_connection = op.get_bind().connection.driver_connection
    for statement in DOWNGRADE:
        driver_connection.execute(statement)
    driver_connection.execute(GRANT_ROLES)
