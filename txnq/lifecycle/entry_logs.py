"""Entry-log GC: drop a sealed entry log (a PostgreSQL partition of
``txnq.entries``) whose entries all belong to deleted ledgers -- DETACH
PARTITION ... CONCURRENTLY (appends and reads go on), a second look at the
detached table, then DROP TABLE. No row deletes, no vacuum bloat. A log whose
live share is under the minor (or, for a major run, the major) threshold is
compacted instead (:mod:`txnq.lifecycle.compaction`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from txnq import errors
from txnq.database.connections import connect, scalar
from txnq.database.queries import QUERIES
from txnq.lifecycle.compaction import (
    COMPACTION_MODES,
    SWAP_LOCK_TIMEOUT,
    Compaction,
    GcBudget,
    compact,
)
from txnq.lifecycle.job_failures import failure_of, replace_failures
from txnq.lifecycle.limits import LOCK_TIMEOUT, MAX_AGE_SECONDS, check_number
from txnq.lifecycle.report import LifecycleReport, record_run

if TYPE_CHECKING:
    from txnq.client import Client

#: A sealed entry log is left alone for this long: an append that read the old
#: active log just before the roll may still insert into it.
SEALED_GRACE_SECONDS = 60.0

#: Entry-log tables are named by roll_entry_log_v2 from an integer only.
_ENTRY_LOG_TABLE = re.compile(r"^entries_[0-9]+$")

DETACH = sql.SQL("ALTER TABLE txnq.entries DETACH PARTITION {} CONCURRENTLY")
FINALIZE = sql.SQL("ALTER TABLE txnq.entries DETACH PARTITION {} FINALIZE")
ATTACH = sql.SQL("ALTER TABLE txnq.entries ATTACH PARTITION {} FOR VALUES IN ({})")
DROP = sql.SQL("DROP TABLE {}")

#: How long gc_drop_entry_log_v1 waits for txnq.entries (a scheduler that does
#: not own it: docs/security.md); appends and fetches wait behind it that long at worst.
GC_DROP_LOCK_TIMEOUT = "2s"

#: GC merges a sealed log into another (txnq.compaction_merge_v1) only when
#: its live payload is at most this large: the copy runs in the transaction
#: that drops it, holding back vacuum meanwhile.
MERGE_MAX_LIVE_BYTES = 8 << 20


@dataclass(frozen=True)
class EntryLogGc:
    """What GC found in (and did to) one sealed entry log."""

    entry_log_id: int
    table_name: str
    entries: int
    bytes: int
    live_entries: int
    live_bytes: int
    total_bytes: int  # on disk, indexes and TOAST included
    action: str  # dropped | would drop | compacted | would compact | merged | kept: ... (why)
    # Compaction: the new entry log the live rows went to (merged: the log
    # they were merged into), and how much moved.
    compacted_into: int | None = None
    moved_entries: int = 0
    moved_bytes: int = 0

    @property
    def live_share(self) -> float:
        return self.live_bytes / self.bytes if self.bytes else 0.0


def collect_entry_logs(
    client: Client,
    *,
    dry_run: bool = False,
    grace_seconds: float = SEALED_GRACE_SECONDS,
    compaction: Compaction = "none",
    time_budget_seconds: float | None = None,
    max_bytes_per_second: int | None = None,
) -> LifecycleReport:
    """Drop the sealed entry logs that hold no live entry, compact those whose
    live share is under the ``compaction`` threshold, and report the others.

    ``time_budget_seconds`` and ``max_bytes_per_second`` default to the
    settings GC_TIME_BUDGET_SECONDS and GC_MAX_BYTES_PER_SECOND (0: no limit).
    When the budget is spent the run stops; a compaction it started resumes at
    the next run. Raises :class:`~txnq.errors.GcBusyError` when another GC
    holds the lock.
    """
    grace = check_number(grace_seconds, "grace_seconds", MAX_AGE_SECONDS)
    if compaction not in COMPACTION_MODES:
        raise errors.InvalidArgumentError(
            f"compaction must be one of {', '.join(COMPACTION_MODES)}, got {compaction!r}"
        )
    settings = client.settings
    budget = GcBudget(
        check_number(
            settings.gc_time_budget_seconds if time_budget_seconds is None else time_budget_seconds,
            "time_budget_seconds",
        ),
        int(
            check_number(
                settings.gc_max_bytes_per_second
                if max_bytes_per_second is None
                else max_bytes_per_second,
                "max_bytes_per_second",
            )
        ),
    )
    threshold = {
        "none": 0.0,
        "minor": settings.gc_minor_threshold,
        "major": settings.gc_major_threshold,
    }[compaction]
    report = LifecycleReport("gc", dry_run, datetime.now(UTC))
    conn = connect(client.dsn, application_name="txnq-gc")
    try:
        if not scalar(conn, QUERIES["gc_try_lock"]):
            raise errors.GcBusyError(
                "another entry-log GC is running (the scheduler, or another `txnq gc run`): "
                "try again when it has finished"
            )
        try:
            conn.execute(LOCK_TIMEOUT)
            if not dry_run:
                # As the scheduler's roll job does: an active log over
                # ENTRY_LOG_MAX_BYTES or ENTRY_LOG_MAX_AGE is sealed now, so a
                # GC run never leaves it growing (it is collected once sealed
                # for longer than the grace period).
                before = scalar(conn, QUERIES["active_entry_log"])
                after = scalar(conn, QUERIES["roll_entry_log"], {"force": False})
                if after != before:
                    report.rolled_to_entry_log = int(after)
                for (target,) in conn.execute(QUERIES["compactions_without_source"]).fetchall():
                    conn.execute(QUERIES["compaction_abandon"], {"target": target})
            logs = conn.execute(
                QUERIES["gc_sealed_entry_logs"], {"grace_seconds": grace}
            ).fetchall()
            # The owner of txnq.entries detaches concurrently; the scheduler's
            # own role (txnq_scheduler) through gc_drop_entry_log_v1.
            owner = bool(scalar(conn, QUERIES["gc_owns_entries"]))
            for entry_log_id, table_name, _sealed_at in logs:
                if budget.spent:
                    break
                try:
                    report.items.append(
                        _collect_one(
                            conn, entry_log_id, table_name, dry_run, threshold, budget, owner
                        )
                    )
                except Exception as exc:
                    # One entry log that fails (a row GC cannot handle, a
                    # table that is not what its row says) never stops GC
                    # of the others.
                    report.failures.append(
                        failure_of("gc", exc, subject=f"entry log {entry_log_id}")
                    )
            if not dry_run and compaction != "none" and not budget.spent:
                _merge_small_logs(conn, report, budget, settings.entry_log_max_bytes)
        finally:
            conn.execute(QUERIES["gc_unlock"])
    finally:
        conn.close()
    done = [i for i in report.items if i.action in ("dropped", "would drop")]
    compacted = [i for i in report.items if i.action in ("compacted", "would compact", "merged")]
    report.reclaimed_bytes = sum(i.total_bytes for i in done) + sum(
        i.total_bytes - i.moved_bytes if i.action in ("would compact", "merged") else i.total_bytes
        for i in compacted
    )
    if report.items or report.failures:
        record_run(
            client,
            report,
            len(done) + len(compacted),
            {
                "compaction": compaction,
                "dropped": [i.entry_log_id for i in done],
                "compacted": {str(i.entry_log_id): i.compacted_into for i in compacted},
                "moved_bytes": sum(i.moved_bytes for i in compacted),
                "examined": len(report.items),
                "budget_spent": budget.spent,
            },
        )
    if not dry_run:
        replace_failures(client, report.job, report.failures)
    return report


def _collect_one(
    conn: psycopg.Connection[Any],
    entry_log_id: int,
    table_name: str,
    dry_run: bool,
    threshold: float,
    budget: GcBudget,
    owner: bool = True,
) -> EntryLogGc:
    if not _ENTRY_LOG_TABLE.match(table_name):
        raise errors.TxnqError(f"entry log {entry_log_id} has an unexpected table {table_name!r}")
    table = sql.Identifier("txnq", table_name)
    state = _table_state(conn, table_name)
    if not state["exists"]:  # dropped by a run that died before recording it
        if not dry_run:
            conn.execute(QUERIES["mark_entry_log_dropped"], {"entry_log_id": entry_log_id})
        return EntryLogGc(entry_log_id, table_name, 0, 0, 0, 0, 0, "dropped")
    usage = _usage(conn, entry_log_id)

    def result(action: str, **extra: Any) -> EntryLogGc:
        return EntryLogGc(
            entry_log_id,
            table_name,
            *usage,
            total_bytes=state["total_bytes"],
            action=action,
            **extra,
        )

    if usage[2] > 0:
        live_share = usage[3] / usage[1] if usage[1] else 1.0
        if live_share >= threshold or state["detach_pending"] or not state["attached"]:
            return result(f"kept: {live_share:.0%} live")
        if dry_run:
            return result("would compact", moved_entries=usage[2], moved_bytes=usage[3])
        return compact(conn, entry_log_id, result, budget)
    if dry_run:
        return result("would drop")
    if not owner:
        # DETACH ... CONCURRENTLY is the owner's and cannot run in a function:
        # a short non-concurrent detach under a lock timeout, as the owner.
        action = scalar(
            conn,
            QUERIES["gc_drop_entry_log"],
            {"entry_log_id": entry_log_id, "lock_timeout": GC_DROP_LOCK_TIMEOUT},
        )
        return result(str(action))
    if state["detach_pending"]:
        conn.execute(FINALIZE.format(table))
    elif state["attached"]:
        try:
            conn.execute(DETACH.format(table))
        except psycopg.errors.LockNotAvailable:
            return result("kept: busy, next run")
    # Detached: nothing can be appended to it now. A second look catches an
    # append that came between the first look and the detach.
    usage = _usage(conn, entry_log_id)
    if usage[2] > 0:
        conn.execute(ATTACH.format(table, sql.Literal(entry_log_id)))
        return result("kept: a late append")
    conn.execute(DROP.format(table))
    conn.execute(QUERIES["mark_entry_log_dropped"], {"entry_log_id": entry_log_id})
    return result("dropped")


def _merge_small_logs(
    conn: psycopg.Connection[Any], report: LifecycleReport, budget: GcBudget, max_log_bytes: int
) -> None:
    """Merge the small sealed logs of this run into as few logs as
    ENTRY_LOG_MAX_BYTES allows, oldest first: the logs it kept and the new
    logs its compactions made. Compaction alone turns one log into one, so
    logs a slow subscription holds a little of each would never become fewer
    (BookKeeper's compaction writes many entry logs' live entries into one)."""
    live: dict[int, int] = {}  # entry log -> live payload bytes
    for item in report.items:
        if item.action.startswith("kept:") and "busy" not in item.action:
            live[item.entry_log_id] = item.live_bytes
        elif item.action == "compacted" and item.compacted_into is not None:
            live[item.compacted_into] = item.moved_bytes
    target: int | None = None
    target_live = 0
    for log_id in sorted(live):
        if budget.spent:
            return
        size = live[log_id]
        if target is None or size > MERGE_MAX_LIVE_BYTES or target_live + size > max_log_bytes:
            target, target_live = log_id, size
            continue
        table_name = f"entries_{log_id:06d}"
        total = _table_state(conn, table_name)["total_bytes"]
        try:
            row = conn.execute(
                QUERIES["compaction_merge"],
                {"target": target, "source": log_id, "lock_timeout": SWAP_LOCK_TIMEOUT},
            ).fetchone()
        except psycopg.Error as exc:
            if exc.sqlstate in ("TQ020", "TQ005"):  # busy, or no longer mergeable: next run
                continue
            raise
        assert row is not None
        moved_entries, moved_bytes = int(row[0]), int(row[1])
        budget.spend(moved_bytes)
        target_live += moved_bytes
        merged = EntryLogGc(
            log_id,
            table_name,
            moved_entries,
            moved_bytes,
            moved_entries,
            moved_bytes,
            total,
            "merged",
            compacted_into=target,
            moved_entries=moved_entries,
            moved_bytes=moved_bytes,
        )
        report.items = [i for i in report.items if i.entry_log_id != log_id] + [merged]


def _table_state(conn: psycopg.Connection[Any], table_name: str) -> dict[str, Any]:
    row = conn.execute(QUERIES["entry_log_table_state"], {"table_name": table_name}).fetchone()
    assert row is not None
    return {"exists": row[0], "attached": row[1], "detach_pending": row[2], "total_bytes": row[3]}


def _usage(conn: psycopg.Connection[Any], entry_log_id: int) -> tuple[int, int, int, int]:
    row = conn.execute(QUERIES["entry_log_usage"], {"entry_log_id": entry_log_id}).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])
