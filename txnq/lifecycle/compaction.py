"""Entry-log compaction: the live rows of a sealed log whose live share is
under the threshold are copied, chunk by chunk, throttled by bytes and within
the GC run's time budget, into a new detached table that one short
transaction then swaps in for the old log (sql/functions/compaction_v1.sql
says why it is not the active log)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Literal, TypeVar

import psycopg

from txnq.database.connections import scalar
from txnq.database.queries import QUERIES

#: How a GC run treats a sealed log that still holds live rows: ``none`` keeps
#: it, ``minor``/``major`` compact it when its live share (live payload bytes
#: over all payload bytes) is under GC_MINOR_THRESHOLD / GC_MAJOR_THRESHOLD.
Compaction = Literal["none", "minor", "major"]
COMPACTION_MODES: tuple[str, ...] = ("none", "minor", "major")

#: The compaction swap waits at most this long for txnq.entries (readers and
#: appends wait behind it meanwhile); then the run keeps the copy for later.
SWAP_LOCK_TIMEOUT = "2s"

#: One compaction copy transaction moves at most this many entries, and at
#: most a quarter second of the byte rate (at least 1 MiB, 16 MiB unthrottled).
COPY_CHUNK_ROWS = 1000
COPY_CHUNK_MIN_BYTES = 1 << 20
COPY_CHUNK_UNTHROTTLED_BYTES = 16 << 20

#: What ``compact`` returns: whatever its ``result`` callback builds (the
#: entry-log GC's report of the log).
Result = TypeVar("Result")


class GcBudget:
    """A GC run's time budget and byte-rate limit (0: none). ``spend`` sleeps
    as long as the bytes copied so far need at the rate, never past the
    deadline."""

    def __init__(self, seconds: float, bytes_per_second: int) -> None:
        self._start = time.monotonic()
        self._deadline = self._start + seconds if seconds > 0 else None
        self._rate = bytes_per_second
        self._bytes = 0

    @property
    def spent(self) -> bool:
        return self._deadline is not None and time.monotonic() >= self._deadline

    @property
    def chunk_bytes(self) -> int:
        if self._rate <= 0:
            return COPY_CHUNK_UNTHROTTLED_BYTES
        return max(COPY_CHUNK_MIN_BYTES, self._rate // 4)

    def spend(self, nbytes: int) -> None:
        self._bytes += nbytes
        if self._rate <= 0:
            return
        delay = self._start + self._bytes / self._rate - time.monotonic()
        if self._deadline is not None:
            delay = min(delay, self._deadline - time.monotonic())
        if delay > 0:
            time.sleep(delay)


def compact(
    conn: psycopg.Connection[Any],
    source: int,
    result: Callable[..., Result],
    budget: GcBudget,
) -> Result:
    """Copy the live rows of ``source`` into its compaction target (resuming
    one an earlier run left), chunk by chunk within ``budget``, then swap;
    ``result(action, compacted_into=, moved_entries=, moved_bytes=)`` says
    how it went."""
    target = int(scalar(conn, QUERIES["compaction_begin"], {"source": source}))
    last = conn.execute(QUERIES["compaction_resume_key"], {"target": target}).fetchone()
    key = tuple(last) if last else (-1, -1, -1)
    moved_entries = moved_bytes = 0
    while True:
        if budget.spent:
            return result(
                "kept: time budget spent, compaction resumes next run",
                compacted_into=target,
                moved_entries=moved_entries,
                moved_bytes=moved_bytes,
            )
        row = conn.execute(
            QUERIES["compaction_copy"],
            {
                "target": target,
                "after_topic": key[0],
                "after_partition": key[1],
                "after_offset": key[2],
                "max_rows": COPY_CHUNK_ROWS,
                "max_bytes": budget.chunk_bytes,
            },
        ).fetchone()
        assert row is not None
        rows, nbytes = int(row[0]), int(row[1])
        if rows == 0:
            break
        key = (row[2], row[3], row[4])
        moved_entries += rows
        moved_bytes += nbytes
        budget.spend(nbytes)
    caught_up = conn.execute(QUERIES["compaction_catch_up"], {"target": target}).fetchone()
    assert caught_up is not None
    copied, source_rows = caught_up
    moved_entries += int(copied)
    try:
        late = scalar(
            conn,
            QUERIES["compaction_swap"],
            {"target": target, "source_rows": source_rows, "lock_timeout": SWAP_LOCK_TIMEOUT},
        )
    except psycopg.Error as exc:
        if exc.sqlstate != "TQ020":
            raise
        return result(
            "kept: busy, compaction resumes next run",
            compacted_into=target,
            moved_entries=moved_entries,
            moved_bytes=moved_bytes,
        )
    moved_entries += int(late)
    return result(
        "compacted", compacted_into=target, moved_entries=moved_entries, moved_bytes=moved_bytes
    )
