"""lz4 for an entry's arrays (uncompressed without it); roll_entry_log_v3, compaction_begin_v3.

issue 23 asked batched send to reach 0.8x of a raw batched INSERT. A
producer batch is one entry row whose arrays PostgreSQL TOASTs, and its
default compression, pglz, spent about 2 ms on a batch of 1,000 random
100-byte payloads (more than the rest of the append) and gave nothing back.
The arrays of txnq.entries (and every entry log) now use lz4 where the
server has it, and are stored uncompressed where it has not (STORAGE
EXTERNAL: the embedded PostgreSQL wheel has no lz4), as Kafka and Pulsar
store a batch unless its producer compresses it
(migrations/sql/0023/schema/0023_entry_compression.sql says more).

New entry logs must copy that: roll_entry_log_v3 and compaction_begin_v3
create them LIKE txnq.entries INCLUDING COMPRESSION; roll_entry_log_v2 and
compaction_begin_v2 become their wrappers. Rows written before keep their
compression until GC compacts them.

grant_roles_v4 runs at the end (CREATE OR REPLACE resets SECURITY DEFINER
and the pinned search_path). Downgrade reinstalls revision 0015's
roll_entry_log_v2 and compaction_v2.sql, drops the v3 functions and puts the
columns back to PostgreSQL's defaults.

Revision ID: 0023
Revises: 0022
Create Date: 2026-11-26
"""

from __future__ import annotations

from alembic import op

from txnq.database.migrate import apply_sql_files

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

SQL_FILES = [
    "0023/schema/0023_entry_compression.sql",
    "0023/functions/roll_entry_log_v3.sql",
    "0023/functions/roll_entry_log_v2.sql",
    "0023/functions/compaction_begin_v3.sql",
    "0023/functions/compaction_v2.sql",
]

GRANT_ROLES = "SELECT txnq.grant_roles_v4()"

#: Every entry log back to PostgreSQL's defaults (the upgrade's loop, reversed).
DEFAULT_STORAGE = """
DO $$
DECLARE
    v_table text;
BEGIN
    FOR v_table IN
        SELECT c.relname FROM pg_catalog.pg_class c
         WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind IN ('r', 'p')
           AND (c.relname = 'entries' OR c.relname ~ '^entries_[0-9]+$')
    LOOP
        EXECUTE format('ALTER TABLE ONLY txnq.%I '
                       'ALTER COLUMN payloads SET STORAGE EXTENDED, '
                       'ALTER COLUMN payloads SET COMPRESSION DEFAULT, '
                       'ALTER COLUMN keys SET STORAGE EXTENDED, '
                       'ALTER COLUMN keys SET COMPRESSION DEFAULT, '
                       'ALTER COLUMN properties SET STORAGE EXTENDED, '
                       'ALTER COLUMN properties SET COMPRESSION DEFAULT, '
                       'ALTER COLUMN event_times SET STORAGE EXTENDED, '
                       'ALTER COLUMN event_times SET COMPRESSION DEFAULT', v_table);
    END LOOP;
END
$$
"""

DOWNGRADE = [
    DEFAULT_STORAGE,
    "DROP FUNCTION txnq.roll_entry_log_v3(boolean)",
    "DROP FUNCTION txnq.compaction_begin_v3(integer)",
]


def upgrade() -> None:
    apply_sql_files(op.get_bind(), SQL_FILES)
    op.get_bind().connection.driver_connection.execute(GRANT_ROLES)


def downgrade() -> None:
    # The v2 bodies first: they stop calling the v3 functions dropped below.
    apply_sql_files(
        op.get_bind(), ["0015/functions/roll_entry_log_v2.sql", "0015/functions/compaction_v2.sql"]
    )
    driver_connection = op.get_bind().connection.driver_connection
    for statement in DOWNGRADE:
        driver_connection.execute(statement)
    driver_connection.execute(GRANT_ROLES)
