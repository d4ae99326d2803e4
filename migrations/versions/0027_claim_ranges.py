"""Claim ranges: a shared subscription without a row written and deleted per message.

issue 23, item 3: a shared consumer's claim wrote a txnq.claims row per
message and its ack deleted it again (bench.peers: ~210,000 dead tuples after
210,000 messages). As Pulsar's managed cursor keeps a mark-delete position
plus individually deleted ranges, a shared claim of N new messages on a
partition is now one txnq.claim_ranges row (its entries, holder, deadline and
the messages of it acknowledged so far), updated once per ack call and
deleted when fully acknowledged; only exceptional messages (redelivered,
nacked, in a transaction, delayed, dead-lettered, key_shared ones) keep a
claim row of their own: a range unfolds into claim rows when one of its
messages becomes one (txnq.unfold_claim_ranges_v1).

New versions, the old ones their thin wrappers: claim_v6, ack_shared_v5,
nack_shared_v3, release_claims_v3, dead_letter_v3, next_visible_claim_v2,
dispatch_shared_v2, shared_advance_v2. cursor_status counts the ranges'
messages in flight. grant_roles_v6 keeps unfold_claim_ranges internal and
runs at the end. Downgrade unfolds every range into claim rows (what revision
0024's functions expect), reinstalls the previous bodies and drops the rest.

Revision ID: 0027
Revises: 0026
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0027/schema/0027_claim_ranges.sql",
    "0027/functions/claim_ranges_forget_cursors_v1.sql",
    "0027/functions/unfold_claim_ranges_v1.sql",
    "0027/functions/shared_advance_v2.sql",
    "0027/functions/shared_advance_v1.sql",
    "0027/functions/dispatch_shared_v2.sql",
    "0027/functions/dispatch_shared_v1.sql",
    "0027/functions/dead_letter_v3.sql",
    "0027/functions/dead_letter_v2.sql",
    "0027/functions/claim_v6.sql",
    "0027/functions/claim_v5.sql",
    "0027/functions/ack_shared_v5.sql",
    "0027/functions/ack_shared_v4.sql",
    "0027/functions/nack_shared_v3.sql",
    "0027/functions/nack_shared_v2.sql",
    "0027/functions/release_claims_v3.sql",
    "0027/functions/release_claims_v2.sql",
    "0027/functions/next_visible_claim_v2.sql",
    "0027/functions/next_visible_claim_v1.sql",
    "0027/views/cursor_status.sql",
    "0027/functions/grant_roles_v6.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v6()"

#: Before the old bodies come back: every range becomes claim rows.
UNFOLD_ALL = """
SELECT txnq.unfold_claim_ranges_v1(r.topic_id, r.partition, r.subscription_id,
                                   array_agg(r.first_offset))
  FROM txnq.claim_ranges r
 GROUP BY r.topic_id, r.partition, r.subscription_id
"""

#: The bodies revision 0024 ran (each the newest frozen copy before 0027).
PREVIOUS_FILES = [
    "0021/functions/claim_v5.sql",
    "0008/functions/shared_advance_v1.sql",
    "0008/functions/dispatch_shared_v1.sql",
    "0015/functions/dead_letter_v2.sql",
    "0015/functions/ack_shared_v4.sql",
    "0015/functions/nack_shared_v2.sql",
    "0015/functions/release_claims_v2.sql",
    "0015/functions/next_visible_claim_v1.sql",
    "0024/views/cursor_status.sql",
]

DOWNGRADE = [
    "DROP FUNCTION txnq.claim_v6(integer, bigint, bigint, integer, double precision, integer, "
    "integer)",
    "DROP FUNCTION txnq.ack_shared_v5(integer, integer, bigint, bigint[], integer[], integer, "
    "bigint)",
    "DROP FUNCTION txnq.nack_shared_v3(integer, integer, bigint, bigint, bigint[], integer[], "
    "double precision[])",
    "DROP FUNCTION txnq.release_claims_v3(bigint, bigint)",
    "DROP FUNCTION txnq.dead_letter_v3(integer, integer, bigint, bigint, integer, integer, text)",
    "DROP FUNCTION txnq.next_visible_claim_v2(bigint)",
    "DROP FUNCTION txnq.dispatch_shared_v2(integer, integer, bigint, bigint, integer, timestamptz, "
    "text, boolean)",
    "DROP FUNCTION txnq.shared_advance_v2(integer, integer, bigint)",
    "DROP TRIGGER claim_ranges_forget_cursors ON txnq.cursors",
    "DROP FUNCTION txnq.claim_ranges_forget_cursors_v1()",
    "DROP FUNCTION txnq.unfold_claim_ranges_v1(integer, integer, bigint, bigint[])",
    "DROP TABLE txnq.claim_ranges",
    "DROP FUNCTION txnq.grant_roles_v6()",
    "SELECT txnq.grant_roles_v5()",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    driver_connection.execute(UNFOLD_ALL)
    apply_sql_files(op.get_bind(), PREVIOUS_FILES)
    for statement in DOWNGRADE:
        driver_connection.execute(statement)
