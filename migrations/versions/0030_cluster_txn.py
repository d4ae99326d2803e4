"""cluster_txn_*: transactions across a cluster's shards (issue 19, item 3).

A cluster proxy (docs/cluster.md) numbers a transaction on its home shard
(open_txn_v3 there, the shard tc_id & (N - 1)) and keeps a mirror of it on
every other shard, so appends, acks and read_committed filtering work on each
shard as on one server. The shard functions of the protocol across shards:

- cluster_txn_mirror_v1: the mirror, with this shard's incarnation;
- cluster_txn_prepare_v1: a participant's vote before the commit's decision
  (still open, in time, no crash since the open) and the flush of its writes;
  a prepared mirror's timeout is lifted so this shard cannot abort it alone;
- cluster_end_txn_v1: the decision on the home shard, end_txn_v3 or an abort
  with a participant's veto;
- cluster_txn_apply_v1: the home shard's decision applied on a participant
  with its whole marker phase (complete_txn_v2), idempotent;
- cluster_txn_writable_v1: the guard before a write in a transaction on a
  participant: a prepared mirror takes no more writes.

No table changes; nothing of a single server's transaction path changes.
grant_roles_v6 runs at the end: they are public functions of the client
class (SECURITY DEFINER, EXECUTE for txnq_client) and authorise the caller on
the transaction as end_txn_v3 does. Downgrade drops them.

Revision ID: 0030
Revises: 0029
Create Date: 2026-11-27
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0030/functions/cluster_txn_mirror_v1.sql",
    "0030/functions/cluster_txn_prepare_v1.sql",
    "0030/functions/cluster_txn_apply_v1.sql",
    "0030/functions/cluster_end_txn_v1.sql",
    "0030/functions/cluster_txn_writable_v1.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v6()"

DOWNGRADE = (
    "DROP FUNCTION txnq.cluster_txn_mirror_v1(integer, bigint, double precision, "
    "timestamp with time zone)",
    "DROP FUNCTION txnq.cluster_txn_prepare_v1(integer, bigint)",
    "DROP FUNCTION txnq.cluster_txn_apply_v1(integer, bigint, boolean, text)",
    "DROP FUNCTION txnq.cluster_end_txn_v1(integer, bigint, boolean, text, boolean, text)",
    "DROP FUNCTION txnq.cluster_txn_writable_v1(integer, bigint)",
)


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    for statement in DOWNGRADE:
        driver_connection.execute(statement)
