"""Shared and key_shared subscriptions (Pulsar's subscription model on txnq's
log): per-subscription claims between the mark-delete and the dispatch offset,
claim_v1 / ack_shared_v1 / nack_shared_v1 / release_claims_v1, dead letters,
delayed delivery (append_delayed_v1), and the end of transactions on claims.
docs/subscriptions.md describes the model.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-23
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0008/schema/0008_shared_subscriptions.sql",
    "0008/functions/key_hash_v1.sql",
    "0008/functions/shared_advance_v1.sql",
    "0008/functions/dispatch_shared_v1.sql",
    "0008/functions/dead_letter_v1.sql",
    "0008/functions/claim_v1.sql",
    "0008/functions/ack_shared_v1.sql",
    "0008/functions/nack_shared_v1.sql",
    "0008/functions/release_claims_v1.sql",
    "0008/functions/append_delayed_v1.sql",
    "0008/functions/claims_after_pending_acks_v1.sql",
]

# Back to revision 0006: shared and key_shared subscriptions keep their
# cursors (the mark-delete offset is exact), their outstanding claims go:
# those messages are delivered again by fetch_v2 from the mark-delete offset.
# Delivery times of delayed messages are forgotten (delivered at once).
DOWNGRADE = """
DROP TRIGGER IF EXISTS claims_after_pending_acks ON txnq.pending_acks;
DROP TRIGGER IF EXISTS claims_forget_cursors ON txnq.cursors;
DROP TRIGGER IF EXISTS delayed_entries_forget_topic ON txnq.topics;
DROP FUNCTION IF EXISTS
    txnq.claims_after_pending_acks_v1(),
    txnq.claims_forget_cursors_v1(),
    txnq.delayed_entries_forget_topic_v1(),
    txnq.append_delayed_v1(integer, integer, bigint, integer, bigint, bytea[], bytea[], jsonb[],
                           timestamptz[], integer, bigint, timestamptz),
    txnq.release_claims_v1(bigint, bigint),
    txnq.nack_shared_v1(integer, integer, bigint, bigint, bigint[], integer[], double precision[]),
    txnq.ack_shared_v1(integer, integer, bigint, bigint[], integer[], integer, bigint),
    txnq.claim_v1(integer, bigint, bigint, integer, double precision, integer, integer),
    txnq.dead_letter_v1(integer, integer, bigint, bigint, integer, integer, text),
    txnq.dispatch_shared_v1(integer, integer, bigint, bigint, integer, timestamptz, text, boolean),
    txnq.shared_advance_v1(integer, integer, bigint),
    txnq.key_owner_v1(integer, integer[], bigint[]),
    txnq.key_hash_v1(bytea);
DROP TABLE txnq.claims, txnq.delayed_entries;
ALTER TABLE txnq.cursors DROP COLUMN dispatch_offset, DROP COLUMN dispatch_generation;
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
