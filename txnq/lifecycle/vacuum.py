"""Vacuum of the hot tables: the small, constantly updated tables (head rows,
cursors, producer sequences, consumer waiters, ...) when their dead tuples
pile up -- what autovacuum does, for servers where it is off or behind (PgQ's
ticker does the same for its tables) -- and their rewrite when a held snapshot
let them grow far past what their live rows need.

Why a rewrite: while a snapshot is held (a long report, a backup), no row
version of these tables can be pruned, so every update of a head row or a
sequence row takes a new slot, then a new page. Once the snapshot ends,
VACUUM frees the old versions but gives back only the empty pages at the end
of the file, and the newest versions, the live ones, sit at that end: with
50,000 messages sent under a held snapshot, txnq.partitions stayed at ten
times its size after VACUUM. Only a rewrite moves the live rows back together
(docs/lifecycle.md, "Vacuum of the hot tables")."""

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
    # Shared subscriptions: a row per message in flight (revision 0008), since
    # revision 0027 only per exception and key_shared message ...
    "claims",
    # ... and a row per claim of new messages, updated per ack call (0027).
    "claim_ranges",
)
VACUUM = sql.SQL("VACUUM (ANALYZE) {}")
VACUUM_FULL = sql.SQL("VACUUM (FULL, ANALYZE) {}")
#: The live rows' bytes and count of one hot table (only on small ones).
LIVE_BYTES = sql.SQL("SELECT coalesce(sum(pg_column_size(t.*)), 0), count(*) FROM {} t")

#: A hot table is rewritten when its heap is larger than this...
SHRINK_MIN_BYTES = 64 * 1024
#: ...and more than this many times what its live rows need at its fillfactor.
SHRINK_RATIO = 2.0
#: Tables with more live rows are left to VACUUM: measuring and rewriting them
#: would hold their lock too long (the hot tables hold tens to thousands).
SHRINK_MAX_LIVE_ROWS = 100_000
#: A rewrite takes an ACCESS EXCLUSIVE lock: appends, reads and acks of the
#: table wait behind it. It waits at most this long for the lock (a long
#: reader), then leaves the table for the next run.
SHRINK_LOCK_TIMEOUT = "SET lock_timeout = '100ms'"
#: Bytes a row takes beyond its columns: tuple header (24) and line pointer (4).
ROW_OVERHEAD_BYTES = 28
PAGE_BYTES = 8192


@dataclass(frozen=True)
class Vacuumed:
    table: str
    dead_tuples: int
    live_tuples: int


@dataclass(frozen=True)
class Shrunk:
    """A hot table rewritten by :func:`shrink_hot_tables`: its size (heap and
    indexes) before and after."""

    table: str
    bytes_before: int
    bytes_after: int


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


def shrink_hot_tables(client: Client, *, min_bytes: int = SHRINK_MIN_BYTES) -> list[Shrunk]:
    """Rewrite (``VACUUM (FULL, ANALYZE)``) the hot tables whose heap is over
    ``min_bytes`` and over :data:`SHRINK_RATIO` times what their live rows
    need at the table's fillfactor: what a held snapshot leaves behind.

    Skipped: tables with more than :data:`SHRINK_MAX_LIVE_ROWS` live rows, and
    tables with more dead row versions than live ones, which a snapshot still
    held keeps (a rewrite would keep them too). The rewrite waits at most
    :data:`SHRINK_LOCK_TIMEOUT` for its lock."""
    if isinstance(min_bytes, bool) or not isinstance(min_bytes, int) or min_bytes < 0:
        raise errors.InvalidArgumentError("min_bytes must be a non-negative integer")
    rows = client.query(
        "hot_tables_to_shrink", {"tables": list(HOT_TABLES), "min_bytes": min_bytes}
    )
    done: list[Shrunk] = []
    if not rows:
        return done
    conn = connect(client.dsn, application_name="txnq-vacuum")
    try:
        conn.execute(SHRINK_LOCK_TIMEOUT)
        for row in rows:
            if not row["may_vacuum"] or row["n_live_tup"] > SHRINK_MAX_LIVE_ROWS:
                continue
            if row["n_dead_tup"] > max(row["n_live_tup"], 1000):
                continue  # a snapshot still holds them: the next run
            table = sql.Identifier("txnq", row["relname"])
            measured = conn.execute(LIVE_BYTES.format(table)).fetchone()
            assert measured is not None
            live_bytes, live_rows = int(measured[0]), int(measured[1])
            needed = (live_bytes + ROW_OVERHEAD_BYTES * live_rows) * 100 // row["fillfactor"]
            if row["heap_bytes"] <= SHRINK_RATIO * (needed + PAGE_BYTES):
                continue
            try:
                conn.execute(VACUUM_FULL.format(table))
            except psycopg.errors.LockNotAvailable:
                continue  # busy: the next run
            after = conn.execute(
                "SELECT pg_total_relation_size(%s::regclass)", (f"txnq.{row['relname']}",)
            ).fetchone()
            assert after is not None
            log.info(
                "txnq: rewrote txnq.%s: %s -> %s bytes (%s live rows)",
                row["relname"],
                row["total_bytes"],
                after[0],
                live_rows,
            )
            done.append(Shrunk(row["relname"], int(row["total_bytes"]), int(after[0])))
    finally:
        conn.close()
    return done
