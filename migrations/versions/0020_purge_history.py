"""purge_history_v1, txn_log by time: what txnq kept forever goes after a retention.

issue 20 asked that a topic run for months with its database staying the
same size. Finished transactions (with their log, partitions and
subscriptions), aborted ranges nothing is left to hide, DELETED ledgers
whose entries are gone, DROPPED entry logs, GC runs, consumers whose lease
expired long ago, producers (a new random name per producer instance) and
transactional ids were kept forever. txnq.purge_history_v1 deletes them once older than the
retention the scheduler's `purge_history` job passes
(FINISHED_TXN_RETENTION_SECONDS, HISTORY_RETENTION_SECONDS,
PRODUCER_EXPIRY_SECONDS), a bounded number per call. docs/lifecycle.md has
the rule of every table.

txnq.txn_log becomes partitioned by time (RANGE on at, with a default
partition; the rows move): txnq.txn_log_maintain_v1, run by the same job
before the purge, makes the partitions ahead (TXN_LOG_PARTITION_SECONDS, a
day) and drops a partition whole once it ended more than
FINISHED_TXN_RETENTION_SECONDS ago and every transaction with a row in it
was purged, so the log is never deleted row by row. Runs are recorded in
txnq.gc_runs as job 'purge' (the check constraint gains it).

A forgotten transactional id starts again above every epoch it had:
txnq.config.transactional_epoch_floor, raised by the purge, is where
init_transactional_id_v3 starts a new id (v2 becomes its wrapper), so a
session of the forgotten id that wakes up later is fenced.

grant_roles_v4 puts both functions in the scheduler class (grant_roles_v2's
lists predate them) and runs at the end. Downgrade drops them, the 'purge'
runs and the constraint's new value, and makes txn_log one table again (its
rows kept).

Revision ID: 0020
Revises: 0019
Create Date: 2026-11-25
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0020/schema/0020_purge_history.sql",
    "0020/schema/0020_txn_log_partitions.sql",
    "0020/functions/txn_log_maintain_v1.sql",
    "0020/functions/init_transactional_id_v3.sql",
    "0020/functions/init_transactional_id_v2.sql",
    "0020/functions/purge_history_v1.sql",
    "0020/functions/grant_roles_v4.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v4()"

DOWNGRADE = [
    # txn_log as one table again, its rows kept.
    "ALTER TABLE txnq.txn_log RENAME TO txn_log_partitioned",
    "ALTER INDEX txnq.txn_log_by_txn RENAME TO txn_log_partitioned_by_txn",
    "CREATE TABLE txnq.txn_log (tc_id integer NOT NULL, txn_seq bigint NOT NULL, "
    "at timestamptz NOT NULL DEFAULT clock_timestamp(), state text NOT NULL, reason text, "
    "detail text)",
    "INSERT INTO txnq.txn_log (tc_id, txn_seq, at, state, reason, detail) "
    "SELECT tc_id, txn_seq, at, state, reason, detail FROM txnq.txn_log_partitioned",
    "DROP TABLE txnq.txn_log_partitioned",
    "CREATE INDEX txn_log_by_txn ON txnq.txn_log (tc_id, txn_seq)",
    "DELETE FROM txnq.gc_runs WHERE job = 'purge'",
    "ALTER TABLE txnq.gc_runs DROP CONSTRAINT gc_runs_job_check",
    "ALTER TABLE txnq.gc_runs ADD CONSTRAINT gc_runs_job_check "
    "CHECK (job IN ('ttl', 'retention', 'gc', 'doctor', 'backlog_quota'))",
    "DROP FUNCTION txnq.purge_history_v1(double precision, double precision, double precision, "
    "integer)",
    "DROP FUNCTION txnq.txn_log_maintain_v1(double precision, integer, double precision)",
    "DROP FUNCTION txnq.init_transactional_id_v3(text)",
    "ALTER TABLE txnq.config DROP COLUMN transactional_epoch_floor",
    "DROP FUNCTION txnq.grant_roles_v4()",
    "SELECT txnq.grant_roles_v3()",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    apply_sql_files(op.get_bind(), ["0015/functions/init_transactional_id_v2.sql"])
    driver_connection = op.get_bind().connection.driver_connection
    for statement in DOWNGRADE:
        driver_connection.execute(statement)
