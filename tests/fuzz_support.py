"""What the fuzz and misuse tests share: a fingerprint of everything txnq
stores, to show that a rejected call changed nothing, and the checks that no
call left a session idle in a transaction holding a partition's head row.

The fingerprint covers every table of schema txnq, found in the catalog at
each call (so a table that a later revision adds is covered without anyone
remembering it), the entry-log partitions included (a detached compaction
target too), and which tables exist and are attached: a hash of each table's
rows, with what live clients rewrite in the background left out (a
consumer's heartbeat renews its lease, a waiting consumer registers for a
wake-up) while a test runs.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg import sql

#: Columns that change without any call of the test's: the lease a live
#: consumer's heartbeat thread renews.
VOLATILE_COLUMNS = {("consumers", "lease_expires_at")}
#: Tables that do: the wake-up registrations of consumers waiting for messages.
VOLATILE_TABLES = {"consumer_waiters"}

TABLES = """
SELECT c.relname, c.relispartition, array_agg(a.attname::text ORDER BY a.attnum)
  FROM pg_class c
  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
 WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind = 'r'
 GROUP BY c.oid, c.relname, c.relispartition
 ORDER BY c.relname
"""


def fingerprint_columns(conn: psycopg.Connection[Any]) -> list[sql.Composable]:
    """The fingerprint as select-list expressions, one per table of schema
    txnq (as the catalog lists them now) and one naming every table there and
    whether it is a partition, so a table created or dropped later shows too.
    Callers that fingerprint often build this once and run it many times."""
    columns: list[sql.Composable] = [
        sql.SQL(
            "(SELECT string_agg(c.relname || ':' || c.relispartition, ',' ORDER BY c.relname)"
            " FROM pg_class c WHERE c.relnamespace = 'txnq'::regnamespace AND c.relkind = 'r')"
        )
    ]
    for name, is_partition, names in conn.execute(TABLES).fetchall():
        if name in VOLATILE_TABLES:
            continue
        kept = [c for c in names if (name, c) not in VOLATILE_COLUMNS]
        row = sql.SQL("ROW({})::text").format(
            sql.SQL(", ").join(sql.Identifier("t", c) for c in kept)
        )
        columns.append(
            sql.SQL(
                "(SELECT ARRAY[{name}, {part}::text, count(*)::text,"
                " md5(coalesce(string_agg({row}, E'\\n' ORDER BY {row}), ''))] FROM {table} t)"
            ).format(
                name=sql.Literal(name),
                part=sql.Literal(is_partition),
                row=row,
                table=sql.Identifier("txnq", name),
            )
        )
    return columns


def fingerprint(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    """The table list, then (table, is a partition, row count, hash of the
    rows) for every table of schema txnq, in name order."""
    columns = fingerprint_columns(conn)
    row = conn.execute(sql.SQL("SELECT {}").format(sql.SQL(", ").join(columns))).fetchone()
    assert row is not None
    return tuple(tuple(part) if isinstance(part, list) else part for part in row)


def idle_in_transaction(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    """Sessions of ``conn``'s database left idle inside a transaction (pid,
    application name, last statement)."""
    return conn.execute(
        "SELECT pid, application_name, left(query, 80) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        " AND state LIKE 'idle in transaction%'"
    ).fetchall()


def append_within(dsn: str, topic: str, partition: int, seconds: float = 3.0) -> int:
    """Append one message to ``topic``'s ``partition`` as another producer
    would, failing (LockNotAvailable) if the head row stays locked longer than
    ``seconds``; returns its offset."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"SET lock_timeout = '{int(seconds * 1000)}ms'")
        row = conn.execute(
            "SELECT a.entry_offset FROM txnq.topics t,"
            " txnq.append_v3(t.topic_id, %s, NULL, NULL, NULL, '{probe}') a"
            " WHERE t.name = %s",
            (partition, topic),
        ).fetchone()
        assert row is not None, f"no topic {topic!r}"
        return int(row[0])
