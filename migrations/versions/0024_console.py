"""The web console's history and audit trail (issue 21, docs/console.md).

The console's charts need rates and backlogs over time, which the database
does not keep: txnq.topic_samples and txnq.storage_samples hold what the
scheduler's console_sample job (txnq.console_sample_v1) samples from the
counters it keeps anyway, deleted after CONSOLE_HISTORY_SECONDS by the same
call. txnq.console_actions records every action an operator confirmed in the
console (txnq.console_record_action_v1, administrators only), bounded the
same way. The views topic_history, storage_history and console_action_log
read them, cursor_status shows each subscription per partition (txnq_reader
reads them all, as every inspection view); console_role_v1 tells the console
who it runs as and whether it may administer.

grant_roles_v5 puts console_sample in the scheduler class, lets txnq_reader
call console_role, and runs at the end. Downgrade drops all of it.

Revision ID: 0024
Revises: 0023
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0024/schema/0024_console.sql",
    "0024/functions/console_sample_v1.sql",
    "0024/functions/console_role_v1.sql",
    "0024/functions/console_record_action_v1.sql",
    "0024/views/topic_history.sql",
    "0024/views/storage_history.sql",
    "0024/views/console_action_log.sql",
    "0024/views/cursor_status.sql",
    "0024/functions/grant_roles_v5.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v5()"

DOWNGRADE = [
    "DROP VIEW txnq.cursor_status",
    "DROP VIEW txnq.console_action_log",
    "DROP VIEW txnq.storage_history",
    "DROP VIEW txnq.topic_history",
    "DROP FUNCTION txnq.console_record_action_v1(text, text, jsonb, text)",
    "DROP FUNCTION txnq.console_role_v1()",
    "DROP FUNCTION txnq.console_sample_v1(double precision)",
    "DROP TABLE txnq.console_actions",
    "DROP TABLE txnq.storage_samples",
    "DROP TABLE txnq.topic_samples",
    "DROP FUNCTION txnq.grant_roles_v5()",
    "SELECT txnq.grant_roles_v4()",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    driver_connection = op.get_bind().connection.driver_connection
    for statement in DOWNGRADE:
        driver_connection.execute(statement)
