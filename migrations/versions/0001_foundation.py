"""Foundation: topics, partitions, ledgers, entry logs, entries, subscriptions,
cursors, acks, consumers, producers; the data-path functions of version 1.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# The files this revision applies, in order. A revision names its files
# explicitly: a later change to a function is a new file (append_v2.sql) applied
# by a later revision, so replaying this revision always builds the same schema.
SQL_FILES = [
    "0001/schema/0001_foundation.sql",
    "0001/functions/earliest_offset_v1.sql",
    "0001/functions/entry_log_needs_roll_v1.sql",
    "0001/functions/roll_entry_log_v1.sql",
    "0001/functions/roll_ledger_v1.sql",
    "0001/functions/add_partitions_v1.sql",
    "0001/functions/create_topic_v1.sql",
    "0001/functions/delete_topic_v1.sql",
    "0001/functions/find_duplicate_v1.sql",
    "0001/functions/append_v1.sql",
    "0001/functions/fetch_v1.sql",
    "0001/functions/ack_v1.sql",
    "0001/functions/seek_v1.sql",
    "0001/functions/subscribe_v1.sql",
    "0001/functions/unsubscribe_v1.sql",
    "0001/functions/register_consumer_v1.sql",
    "0001/functions/heartbeat_consumer_v1.sql",
    "0001/functions/register_producer_v1.sql",
    "0001/views/messages.sql",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


DOWNGRADE = """
DROP VIEW IF EXISTS txnq.messages;
DO $$
DECLARE f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
              WHERE n.nspname = 'txnq' LOOP
        EXECUTE format('DROP FUNCTION %s', f);
    END LOOP;
END $$;
DROP TABLE txnq.entries, txnq.entry_logs, txnq.config, txnq.topics, txnq.partitions, txnq.ledgers,
    txnq.subscriptions, txnq.cursors, txnq.individual_acks, txnq.consumers,
    txnq.consumer_waiters, txnq.producers, txnq.producer_sequences CASCADE;
"""


def downgrade() -> None:
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
