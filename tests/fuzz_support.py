"""What the fuzz tests share: a fingerprint of everything txnq stores, to show
that a rejected call changed nothing."""

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
       (SELECT count(*) FROM txnq.txn_log)
"""


def fingerprint(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    row = conn.execute(FINGERPRINT).fetchone()
    assert row is not None
    return tuple(row)
