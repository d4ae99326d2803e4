"""The SQL boundary holds (issue 17): every public txnq function validates
its arguments itself and checks the caller's permission on the topic; the
argument checks shared by many functions live in txnq.require_*_v1, the
permission checks in txnq.authorize*_v1.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

from txnq.migrate import apply_sql_files

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

SQL_FILES = [
    "functions/require_partition_v1.sql",
    "functions/require_number_v1.sql",
    "functions/require_timestamps_v1.sql",
    "functions/require_properties_v1.sql",
    "functions/authorize_v1.sql",
    "functions/authorize_topic_name_v1.sql",
    "functions/authorize_txn_v1.sql",
]

DOWNGRADE = """
DROP FUNCTION txnq.require_partition_v1(integer, integer);
DROP FUNCTION txnq.require_number_v1(text, double precision, double precision, double precision, boolean);
DROP FUNCTION txnq.require_timestamps_v1(text, timestamptz[]);
DROP FUNCTION txnq.require_properties_v1(jsonb[]);
DROP FUNCTION txnq.authorize_v1(integer, text);
DROP FUNCTION txnq.authorize_topic_name_v1(text, text);
DROP FUNCTION txnq.authorize_txn_v1(integer, bigint);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
