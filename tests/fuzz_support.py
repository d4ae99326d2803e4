"""What the fuzz and misuse tests share: a fingerprint of everything txnq
stores, to show that a rejected call changed nothing, and the checks that no
call left a session idle in a transaction holding a partition's head row."""

from __future__ import annotations

from typing import Any

import psycopg

FINGERPRINT = """
SELECT (SELECT count(*) FROM txnq.topics),
       (SELECT coalesce(sum(next_offset), 0) FROM txnq.partitions),
       (SELECT coalesce(sum(max_read_offset), 0) FROM txnq.partitions),
       (SELECT count(*) FROM txnq.entries),
       (SELECT count(*) FROM txnq.subscriptions),
       (SELECT coalesce(sum(mark_delete_offset), 0) FROM txnq.cursors),
       (SELECT count(*) FROM txnq.individual_acks),
       (SELECT count(*) FROM txnq.producers),
       (SELECT count(*) FROM txnq.transactions),
       (SELECT count(*) FROM txnq.transactions WHERE state <> 'OPEN'),
       (SELECT count(*) FROM txnq.pending_acks),
       (SELECT count(*) FROM txnq.txn_log),
       (SELECT count(*) FROM txnq.consumers),
       (SELECT count(*) FROM txnq.staged_sends),
       (SELECT count(*) FROM txnq.staged_acks)
"""


def fingerprint(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    row = conn.execute(FINGERPRINT).fetchone()
    assert row is not None
    return tuple(row)


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
