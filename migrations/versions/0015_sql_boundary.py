"""The SQL boundary holds (issue 17): every public txnq function validates
its arguments itself and checks the caller's permission on the topic; the
argument checks shared by many functions live in txnq.require_*_v1, the
permission checks in txnq.authorize*_v1.

Consume side: ack_v3, stage_ack_v2 and ack_shared_v4 check every message id
against its entry (before, a batch index past the batch or a batch size
smaller than the entry's acknowledged the whole entry: messages never
delivered were lost); fetch_v4 (fetch_v2 and fetch_v3 call it), claim_v3,
nack_shared_v2, release_claims_v2, subscribe_v2, unsubscribe_v2,
register_consumer_v2, heartbeat_consumer_v2, seek_v2, earliest_offset_v2 and
subscription_backlog_v2 check their arguments. The versions they replace
(fetch_v2/v3, ack_v2, stage_ack_v1, ack_shared_v1..v3, claim_v1/v2, ...) are
wrappers of them (superseded_0015_consume.sql), so older clients keep
working and get the checks; the downgrade puts their bodies back.

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
    # consume: subscriptions, cursors, acks, shared claims. ack_v3, ack_shared_v4
    # and stage_ack_v2 check every message id against its entry; the versions
    # they replace become wrappers (superseded_0015_consume.sql).
    "functions/require_subscription_v1.sql",
    "functions/require_acks_v1.sql",
    "functions/require_claimed_messages_v1.sql",
    "functions/fetch_v4.sql",
    "functions/ack_v3.sql",
    "functions/stage_ack_v2.sql",
    "functions/ack_shared_v4.sql",
    "functions/claim_v3.sql",
    "functions/nack_shared_v2.sql",
    "functions/release_claims_v2.sql",
    "functions/earliest_offset_v2.sql",
    "functions/subscribe_v2.sql",
    "functions/unsubscribe_v2.sql",
    "functions/register_consumer_v2.sql",
    "functions/heartbeat_consumer_v2.sql",
    "functions/seek_v2.sql",
    "functions/subscription_backlog_v2.sql",
    "functions/superseded_0015_consume.sql",
]

# The bodies the wrappers replaced, put back by the downgrade before the new
# functions are dropped.
DOWNGRADE_SQL_FILES = [
    # consume
    "functions/fetch_v2.sql",
    "functions/fetch_v3.sql",
    "functions/ack_v2.sql",
    "functions/stage_ack_v1.sql",
    "functions/ack_shared_v1.sql",
    "functions/ack_shared_v2.sql",
    "functions/ack_shared_v3.sql",
    "functions/claim_v1.sql",
    "functions/claim_v2.sql",
    "functions/nack_shared_v1.sql",
    "functions/release_claims_v1.sql",
    "functions/earliest_offset_v1.sql",
    "functions/subscribe_v1.sql",
    "functions/unsubscribe_v1.sql",
    "functions/register_consumer_v1.sql",
    "functions/heartbeat_consumer_v1.sql",
    "functions/seek_v1.sql",
    "functions/subscription_backlog_v1.sql",
]

DOWNGRADE = """
DROP FUNCTION txnq.require_partition_v1(integer, integer);
DROP FUNCTION txnq.require_number_v1(text, double precision, double precision, double precision, boolean);
DROP FUNCTION txnq.require_timestamps_v1(text, timestamptz[]);
DROP FUNCTION txnq.require_properties_v1(jsonb[]);
DROP FUNCTION txnq.authorize_v1(integer, text);
DROP FUNCTION txnq.authorize_topic_name_v1(text, text);
DROP FUNCTION txnq.authorize_txn_v1(integer, bigint);
-- consume
DROP FUNCTION txnq.require_subscription_v1(integer, integer, bigint);
DROP FUNCTION txnq.require_acks_v1(text, integer, integer, bigint, bigint[], integer[], integer[]);
DROP FUNCTION txnq.require_claimed_messages_v1(integer, integer, bigint, bigint[], integer[]);
DROP FUNCTION txnq.fetch_v4(integer, integer, bigint, bigint, integer, bigint, boolean);
DROP FUNCTION txnq.ack_v3(integer, integer, bigint, bigint, bigint[], integer[], integer[],
                          integer, integer, integer, bigint);
DROP FUNCTION txnq.stage_ack_v2(integer, integer, bigint, bigint[], integer[], integer[]);
DROP FUNCTION txnq.ack_shared_v4(integer, integer, bigint, bigint[], integer[], integer, bigint);
DROP FUNCTION txnq.claim_v3(integer, bigint, bigint, integer, double precision, integer, integer);
DROP FUNCTION txnq.nack_shared_v2(integer, integer, bigint, bigint, bigint[], integer[],
                                  double precision[]);
DROP FUNCTION txnq.release_claims_v2(bigint, bigint);
DROP FUNCTION txnq.earliest_offset_v2(integer, integer);
DROP FUNCTION txnq.subscribe_v2(integer, text, text, text, text);
DROP FUNCTION txnq.unsubscribe_v2(bigint, bigint, boolean);
DROP FUNCTION txnq.register_consumer_v2(bigint, text, integer, double precision);
DROP FUNCTION txnq.heartbeat_consumer_v2(bigint, double precision);
DROP FUNCTION txnq.seek_v2(integer, integer, bigint, bigint, timestamptz);
DROP FUNCTION txnq.subscription_backlog_v2(integer);
"""


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), DOWNGRADE_SQL_FILES)
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
