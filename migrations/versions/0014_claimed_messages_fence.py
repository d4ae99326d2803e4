"""txnq.claimed_messages_v1 matches an entry's messages with the claims in a
hash or merge join on PostgreSQL 18 too: its unnested messages sit behind an
OFFSET 0 fence with the batch index as a plain column. Without it PostgreSQL
18 joined the claims to the entries first and then compared every claim with
every message of the entry (tests/sql_api/test_shared_plans.py). Same signature,
result and behaviour.

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0014/functions/claimed_messages_v1.sql",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    # The fenced body returns the same rows as revision 0013's: it stays.
    pass
