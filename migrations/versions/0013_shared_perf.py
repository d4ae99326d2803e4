"""Shared subscriptions, faster claims and acknowledgements. txnq.ack_shared_v3
finds the acknowledged claims by primary key, one lookup per message, instead
of the semi join whose cached plan compared every claim of the partition with
every message named (quadratic in the batch); txnq.claim_v2 joins the claims
it picked on their whole primary key only, for the same reason; and
claims_by_visibility becomes partial (txn_tc IS NULL, as every query reading
it asks), so the planner cannot take it for those key lookups when the
statistics say the claims table is empty. Same behaviour, locks and errors as
ack_shared_v2 and claim_v1. docs/subscriptions.md, "SQL API".

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0013/schema/0013_shared_perf.sql",
    "0013/functions/ack_shared_v3.sql",
    "0013/functions/claimed_messages_v1.sql",
    "0013/functions/claim_v2.sql",
]

# ack_shared_v2 (revision 0011) and claim_v1 (revision 0008) stay: clients of
# revision 0012 keep calling them.
DOWNGRADE = """
DROP INDEX txnq.claims_by_visibility;
CREATE INDEX claims_by_visibility ON txnq.claims (subscription_id, visible_at);
DROP FUNCTION txnq.ack_shared_v3(integer, integer, bigint, bigint[], integer[], integer, bigint);
DROP FUNCTION txnq.claim_v2(integer, bigint, bigint, integer, double precision, integer, integer);
DROP FUNCTION txnq.claimed_messages_v1(
    integer, integer[], bigint[], integer[], integer[], integer[]);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
