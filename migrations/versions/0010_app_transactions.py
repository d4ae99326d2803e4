"""Application transactions (docs/exactly-once.md): sends and acks staged in
the caller's own PostgreSQL transaction and published inside its COMMIT by a
deferred trigger — the transactional outbox and the exactly-once processor,
for Python and for any language through the SQL functions.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0010/schema/0010_app_transactions.sql",
    "0010/functions/partition_for_key_v1.sql",
    "0010/functions/check_ack_once_v1.sql",
    "0010/functions/stage_send_v1.sql",
    "0010/functions/send_at_commit_v1.sql",
    "0010/functions/stage_ack_v1.sql",
    "0010/functions/publish_staged_v1.sql",
]

# Staged rows live for one transaction: nothing is lost by dropping the tables.
DOWNGRADE = """
DROP TABLE txnq.staged_sends, txnq.staged_acks;
DROP FUNCTION txnq.publish_staged_at_commit_v1(), txnq.publish_staged_v1(),
    txnq.stage_ack_v1(integer, integer, bigint, bigint[], integer[], integer[]),
    txnq.send_at_commit_v1(text, bytea, bytea, jsonb, integer),
    txnq.stage_send_v1(integer, integer, bytea[], bytea[], jsonb[], timestamptz[]),
    txnq.check_ack_once_v1(integer, integer, bigint, bigint[], integer[]),
    txnq.partition_for_key_v1(bytea, integer);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
