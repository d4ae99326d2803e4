"""Vacuum of the hot tables: the small, constantly updated tables (head rows,
cursors, producer sequences, consumer waiters, ...) when their dead tuples
pile up -- what autovacuum does, for servers where it is off or behind (PgQ's
ticker does the same for its tables)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psycopg
from psycopg import sql

from txnq import errors
from txnq.database.connections import connect
from txnq.lifecycle.limits import LOCK_TIMEOUT

if TYPE_CHECKING:
    from txnq.client import Client

log = logging.getLogger("txnq.lifecycle")

#: Small tables whose rows are updated or replaced all the time. Entries are
#: not here: they are never updated or deleted, only dropped with their log.
HOT_TABLES: tuple[str, ...] = (
    "partitions",
    "cursors",
    "individual_acks",
    "producer_sequences",
    "producers",
    "consumers",
    "consumer_waiters",
    "ledgers",
    "entry_logs",
    "config",
    "coordinators",
    "transactional_ids",
    "txn_buffer_ongoing",
    "pending_acks",
    # Application transactions insert and delete these in one transaction.
    "staged_sends",
    "staged_acks",
    "claims",  # shared subscriptions: a row per message in flight (revision 0008)
)
VACUUM = sql.SQL("VACUUM (ANALYZE) {}")


@dataclass(frozen=True)
class Vacuumed:
    table: str
    dead_tuples: int
    live_tuples: int


def vacuum_hot_tables(client: Client, *, min_dead: int = 1000) -> list[Vacuumed]:
    """VACUUM the hot tables that have at least ``min_dead`` dead tuples (and
    more than a fifth of their live ones), as the statistics say. VACUUM takes
    a SHARE UPDATE EXCLUSIVE lock: appends, reads and acks go on."""
    if isinstance(min_dead, bool) or not isinstance(min_dead, int) or min_dead < 0:
        raise errors.InvalidArgumentError("min_dead must be a non-negative integer")
    done: list[Vacuumed] = []
    rows = client.query("hot_tables_to_vacuum", {"tables": list(HOT_TABLES), "min_dead": min_dead})
    if not rows:
        return done
    conn = connect(client.dsn, application_name="txnq-vacuum")
    try:
        conn.execute(LOCK_TIMEOUT)
        for row in rows:
            if not row["may_vacuum"]:
                # PostgreSQL would only warn and skip it: say so in the log.
                log.warning(
                    "txnq: cannot VACUUM txnq.%s (%s dead tuples): this role neither owns it nor "
                    "has MAINTAIN on it (PostgreSQL 17+); autovacuum, or a member of txnq_admin, "
                    "does it (docs/security.md)",
                    row["relname"],
                    row["n_dead_tup"],
                )
                continue
            try:
                conn.execute(VACUUM.format(sql.Identifier("txnq", row["relname"])))
            except psycopg.errors.LockNotAvailable:
                continue  # a concurrent VACUUM or DDL: autovacuum or the next run
            done.append(Vacuumed(row["relname"], row["n_dead_tup"], row["n_live_tup"]))
    finally:
        conn.close()
    return done
