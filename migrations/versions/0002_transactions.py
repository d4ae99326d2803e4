"""Transactions: coordinators, the transaction log, the transaction buffer,
pending acks, transactional ids; the data-path functions of version 2.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0002/schema/0002_transactions.sql",
    "0002/functions/txn_require_open_v1.sql",
    "0002/functions/open_txn_v1.sql",
    "0002/functions/append_v2.sql",
    "0002/functions/fetch_v2.sql",
    "0002/functions/apply_acks_v1.sql",
    "0002/functions/ack_v2.sql",
    "0002/functions/v1_over_v2.sql",
    "0002/functions/end_txn_v1.sql",
    "0002/functions/complete_txn_partition_v1.sql",
    "0002/functions/complete_txn_subscription_v1.sql",
    "0002/functions/finish_txn_v1.sql",
    "0002/functions/complete_txn_v1.sql",
    "0002/functions/abort_timed_out_v1.sql",
    "0002/functions/init_transactional_id_v1.sql",
    "0002/functions/bind_txn_v1.sql",
    "0002/views/transactions.sql",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)


# Back to revision 0001: drop what 0002 added and reinstall the 0001 bodies of
# the functions it replaced.
DOWNGRADE = """
DROP VIEW IF EXISTS txnq.transaction_status;
DROP FUNCTION IF EXISTS txnq.txn_require_open_v1(integer, bigint),
    txnq.open_txn_v1(integer, double precision),
    txnq.append_v2(integer, integer, bigint, integer, bigint, bytea[], bytea[], jsonb[],
                   timestamptz[], integer, bigint),
    txnq.fetch_v2(integer, integer, bigint, bigint, integer, bigint),
    txnq.apply_acks_v1(integer, integer, bigint, bigint, bigint[], integer[], integer[]),
    txnq.ack_v2(integer, integer, bigint, bigint, bigint[], integer[], integer[], integer, integer,
                integer, bigint),
    txnq.end_txn_v1(integer, bigint, boolean, text, boolean),
    txnq.complete_txn_partition_v1(integer, bigint, integer, integer),
    txnq.complete_txn_subscription_v1(integer, bigint, integer, integer, bigint),
    txnq.finish_txn_v1(integer, bigint),
    txnq.complete_txn_v1(integer, bigint),
    txnq.abort_timed_out_v1(integer),
    txnq.init_transactional_id_v1(text),
    txnq.bind_txn_v1(integer, bigint, text, integer);
-- Revision 0001 knows neither markers nor aborted transactions: remove both so
-- its functions never deliver them. Committed transactional entries stay.
DELETE FROM txnq.entries e
 WHERE e.marker IS NOT NULL
    OR EXISTS (SELECT 1 FROM txnq.aborted_txns x
                WHERE x.topic_id = e.topic_id AND x.partition = e.partition
                  AND x.tc_id = e.txn_tc AND x.txn_seq = e.txn_seq);
DROP TABLE txnq.coordinators, txnq.transactional_ids, txnq.transactions, txnq.txn_partitions,
    txnq.txn_subscriptions, txnq.txn_log, txnq.txn_buffer_ongoing, txnq.aborted_txns,
    txnq.pending_acks;
ALTER TABLE txnq.partitions DROP COLUMN ongoing_txns;
ALTER TABLE txnq.config DROP COLUMN tc_count, DROP COLUMN txn_max_timeout_seconds;
"""


def downgrade() -> None:
    # The 0001 bodies of append_v1/fetch_v1/ack_v1 replace the wrappers.
    op.get_bind().connection.driver_connection.execute(DOWNGRADE)
    apply_sql_files(
        op.get_bind(),
        [
            "0001/functions/append_v1.sql",
            "0001/functions/fetch_v1.sql",
            "0001/functions/ack_v1.sql",
        ],
    )
