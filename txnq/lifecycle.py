"""The message lifecycle: TTL, retention and entry-log GC (docs/lifecycle.md).

Three steps, as in Pulsar and BookKeeper, each a function of a
:class:`~txnq.client.Client` that the scheduler runs on its own schedule and
``txnq gc run`` runs on demand:

- :func:`expire_ttl` acknowledges, on every subscription's behalf, messages
  older than their topic's TTL (``txnq.expire_ttl_v2``). Nothing is deleted.
- :func:`apply_retention` deletes closed ledgers that every subscription has
  consumed and that retention no longer keeps (``txnq.apply_retention_v2``):
  their metadata goes to DELETED; the rows stay until GC.
- :func:`collect_entry_logs` drops a sealed entry log (a PostgreSQL partition
  of ``txnq.entries``) whose entries all belong to deleted ledgers: DETACH
  PARTITION ... CONCURRENTLY (appends and reads go on), a second look at the
  detached table, then DROP TABLE. No row deletes, no vacuum bloat. A log whose
  live share is under the minor (or, for a major run, the major) threshold is
  compacted: its live rows are copied, throttled by bytes and within the run's
  time budget, into a new detached table that one short transaction then
  swaps in for the old log (sql/functions/compaction_v1.sql says why it is
  not the active log).
- :func:`vacuum_hot_tables` vacuums the small, constantly updated tables
  (head rows, cursors, producer sequences, consumer waiters, ...) when their
  dead tuples pile up: what autovacuum does, for servers where it is off or
  behind (PgQ's ticker does the same for its tables).
- :func:`doctor` finds dirty data (orphan ledgers, entries without a ledger,
  inactive subscriptions) and removes it only when asked.

Every run that did something is recorded in ``txnq.gc_runs``.

One bad topic never stops a job for the others: TTL, retention and the
backlog quota check process each topic in its own PostgreSQL transaction,
GC each entry log; a topic (entry log) that fails -- on a row its function
cannot handle, any error but PostgreSQL being unreachable -- becomes a
:class:`~txnq.job_failures.JobFailure` in the report, and the job goes on.
Failures are logged, recorded in the run's ``txnq.gc_runs`` row
(``failures``, ``details.failures``) and in ``txnq.job_failures`` (the view
``txnq.job_failure_status``: what fails now), and counted by the scheduler
(``txnq_job_topic_failures_total``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import psycopg
from psycopg import sql

from txnq import errors
from txnq.database.connections import connect, scalar
from txnq.database.queries import QUERIES
from txnq.job_failures import JobFailure, failure_of, policy_hint, replace_failures

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
log = logging.getLogger("txnq.lifecycle")

LOCK_TIMEOUT = "SET lock_timeout = '5s'"
#: How long gc_drop_entry_log_v1 waits for txnq.entries (a scheduler that does
#: not own it: docs/security.md); appends and fetches wait behind it that long at worst.
GC_DROP_LOCK_TIMEOUT = "2s"

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


@dataclass(frozen=True)
class CursorExpiry:
    topic: str
    partition: int
    subscription_id: int
    mark_delete_before: int
    mark_delete_after: int


@dataclass(frozen=True)
class DeletedLedger:
    topic: str
    partition: int
    ledger_id: int
    first_offset: int
    last_offset: int
    size_bytes: int


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
    action: str  # dropped | would drop | compacted | would compact | kept: ... (why)
    # Compaction: the new entry log the live rows went to, and how much moved.
    compacted_into: int | None = None
    moved_entries: int = 0
    moved_bytes: int = 0

    @property
    def live_share(self) -> float:
        return self.live_bytes / self.bytes if self.bytes else 0.0


@dataclass
class LifecycleReport:
    """One run of one lifecycle step: what it did, and what it could not do
    (``failures``, one per topic or entry log; the others were processed)."""

    job: str
    dry_run: bool
    started_at: datetime
    items: list[Any] = field(default_factory=list)
    reclaimed_bytes: int = 0
    failures: list[JobFailure] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "dry_run": self.dry_run,
            "started_at": self.started_at,
            "items": [dataclasses.asdict(item) for item in self.items],
            "reclaimed_bytes": self.reclaimed_bytes,
            "failures": [dataclasses.asdict(f) | {"where": f.where} for f in self.failures],
        }


#: How many failures a run's txnq.gc_runs row lists in details.failures.
RECORDED_FAILURES = 20


def _record(client: Client, report: LifecycleReport, count: int, details: dict[str, Any]) -> None:
    if report.failures:
        details = details | {
            "failures": [
                {"where": f.where, "error": f.error} for f in report.failures[:RECORDED_FAILURES]
            ]
        }
    client.execute(
        "record_gc_run",
        {
            "job": report.job,
            "dry_run": report.dry_run,
            "started_at": report.started_at,
            "items": count,
            "bytes": report.reclaimed_bytes,
            "details": json.dumps(details),
            "failures": len(report.failures),
        },
    )


def expire_ttl(client: Client) -> LifecycleReport:
    """Acknowledge messages older than their topic's TTL on every subscription,
    topic by topic (a topic that fails is a failure of the report)."""
    report = LifecycleReport("ttl", False, datetime.now(UTC))
    for topic in client.query("ttl_topics", {}):
        try:
            rows = client.query("expire_ttl", {"topic_id": topic["topic_id"]})
        except errors.TopicNotFoundError:
            continue  # deleted since it was listed: nothing left to expire
        except Exception as exc:
            hint = policy_hint(topic["name"], {"ttl_seconds": topic["ttl_seconds"]}, exc)
            report.failures.append(
                failure_of("ttl", exc, topic=topic["name"], topic_id=topic["topic_id"], hint=hint)
            )
            continue
        for row in rows:
            report.items.append(CursorExpiry(topic=topic["name"], **row))
    if report.items or report.failures:
        moved = sum(i.mark_delete_after - i.mark_delete_before for i in report.items)
        _record(client, report, len(report.items), {"entries_expired": moved})
    replace_failures(client, report.job, report.failures)
    return report


def apply_retention(client: Client) -> LifecycleReport:
    """Delete the consumed ledgers that retention no longer keeps, topic by
    topic (a topic that fails is a failure of the report)."""
    report = LifecycleReport("retention", False, datetime.now(UTC))
    for topic in client.query("retention_topics", {}):
        try:
            rows = client.query("apply_retention", {"topic_id": topic["topic_id"]})
        except errors.TopicNotFoundError:
            continue  # deleted since it was listed: its ledgers went with it
        except Exception as exc:
            hint = policy_hint(
                topic["name"],
                {"retention_seconds": topic["retention_seconds"]},
                exc,
                {"retention_bytes": topic["retention_bytes"]},
            )
            report.failures.append(
                failure_of(
                    "retention", exc, topic=topic["name"], topic_id=topic["topic_id"], hint=hint
                )
            )
            continue
        for row in rows:
            report.items.append(DeletedLedger(topic=topic["name"], **row))
    report.reclaimed_bytes = sum(i.size_bytes for i in report.items)
    if report.items or report.failures:
        topics = sorted({i.topic for i in report.items})
        _record(client, report, len(report.items), {"topics": topics})
    replace_failures(client, report.job, report.failures)
    return report


class _Budget:
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


#: The longest age a lifecycle call compares with (PostgreSQL's intervals and
#: timestamps overflow far beyond; nothing txnq keeps is this old).
MAX_AGE_SECONDS = 1e9


def _number(value: Any, what: str, maximum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise errors.InvalidArgumentError(f"{what} must be a number, got {value!r}")
    if not math.isfinite(value):
        raise errors.InvalidArgumentError(f"{what} must be a finite number, not {value!r}")
    if value < 0:
        raise errors.InvalidArgumentError(f"{what} must not be negative (0: no limit)")
    if maximum is not None and value > maximum:
        raise errors.InvalidArgumentError(f"{what} must be at most {maximum:g}, not {value!r}")
    return float(value)


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
    grace = _number(grace_seconds, "grace_seconds", MAX_AGE_SECONDS)
    if compaction not in COMPACTION_MODES:
        raise errors.InvalidArgumentError(
            f"compaction must be one of {', '.join(COMPACTION_MODES)}, got {compaction!r}"
        )
    settings = client.settings
    budget = _Budget(
        _number(
            settings.gc_time_budget_seconds if time_budget_seconds is None else time_budget_seconds,
            "time_budget_seconds",
        ),
        int(
            _number(
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
        finally:
            conn.execute(QUERIES["gc_unlock"])
    finally:
        conn.close()
    done = [i for i in report.items if i.action in ("dropped", "would drop")]
    compacted = [i for i in report.items if i.action in ("compacted", "would compact")]
    report.reclaimed_bytes = sum(i.total_bytes for i in done) + sum(
        i.total_bytes - i.moved_bytes if i.action == "would compact" else i.total_bytes
        for i in compacted
    )
    if report.items or report.failures:
        _record(
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
    budget: _Budget,
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
        return _compact(conn, entry_log_id, result, budget)
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


def _compact(
    conn: psycopg.Connection[Any],
    source: int,
    result: Callable[..., EntryLogGc],
    budget: _Budget,
) -> EntryLogGc:
    """Copy the live rows of ``source`` into its compaction target (resuming
    one an earlier run left), chunk by chunk within ``budget``, then swap."""
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


def _table_state(conn: psycopg.Connection[Any], table_name: str) -> dict[str, Any]:
    row = conn.execute(QUERIES["entry_log_table_state"], {"table_name": table_name}).fetchone()
    assert row is not None
    return {"exists": row[0], "attached": row[1], "detach_pending": row[2], "total_bytes": row[3]}


def _usage(conn: psycopg.Connection[Any], entry_log_id: int) -> tuple[int, int, int, int]:
    row = conn.execute(QUERIES["entry_log_usage"], {"entry_log_id": entry_log_id}).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def run_all(
    client: Client, *, dry_run: bool = False, compaction: Compaction = "minor"
) -> list[LifecycleReport]:
    """TTL, retention, the backlog quota check, then GC with ``compaction``, as
    ``txnq gc run`` does. In a dry run, TTL, retention and the quota check are
    skipped (they would change cursors and ledgers) and GC only reports."""
    from txnq.backlog_quota import check_backlog_quotas

    reports = (
        []
        if dry_run
        else [expire_ttl(client), apply_retention(client), check_backlog_quotas(client)]
    )
    reports.append(collect_entry_logs(client, dry_run=dry_run, compaction=compaction))
    return reports


# -- vacuum of the hot tables ----------------------------------------------------

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


# -- the dirty-data sweep ------------------------------------------------------


@dataclass(frozen=True)
class OrphanLedger:
    topic_id: int
    partition: int
    ledger_id: int
    state: str
    first_offset: int
    last_offset: int | None
    reason: str
    removed: bool = False


@dataclass(frozen=True)
class EntriesWithoutLedger:
    topic_id: int
    partition: int
    ledger_id: int
    entry_logs: list[int]
    entries: int
    first_offset: int
    last_offset: int
    bytes: int
    removed: bool = False


@dataclass(frozen=True)
class InactiveSubscription:
    topic: str
    subscription: str
    subscription_id: int
    subscription_type: str
    last_active: datetime
    backlog: int
    removed: bool = False


@dataclass
class DoctorReport:
    """What the dirty-data sweep found and, with ``remove``, removed."""

    removed: bool
    inactive_seconds: float
    orphan_ledgers: list[OrphanLedger] = field(default_factory=list)
    entries_without_ledger: list[EntriesWithoutLedger] = field(default_factory=list)
    inactive_subscriptions: list[InactiveSubscription] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (
            self.orphan_ledgers or self.entries_without_ledger or self.inactive_subscriptions
        )

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"clean": self.clean}


def doctor(
    client: Client, *, remove: bool = False, inactive_seconds: float | None = None
) -> DoctorReport:
    """Find dirty data; with ``remove``, remove what was found.

    - orphan ledgers (not DELETED, but their topic or partition is gone, or an
      OPEN ledger that is not its partition's current one): removal marks them
      DELETED, and GC reclaims their entries;
    - entries without a ledger row: removal gives them a DELETED ledger row
      (never a row delete), and GC reclaims them;
    - inactive subscriptions (no consumer connected, cursor unmoved for
      ``inactive_seconds``, default INACTIVE_CURSOR_SECONDS): removal
      unsubscribes them, which releases what they held back from retention.

    Every removal re-checks its condition in the same statement, so something
    that became active since the look is left alone. A removal is recorded in
    ``txnq.gc_runs`` (job ``doctor``).
    """
    if not isinstance(remove, bool):
        raise errors.InvalidArgumentError("remove must be True or False")
    inactive = _number(
        client.settings.inactive_cursor_seconds if inactive_seconds is None else inactive_seconds,
        "inactive_seconds",
        MAX_AGE_SECONDS,
    )
    if inactive <= 0:
        raise errors.InvalidArgumentError("inactive_seconds must be positive")
    started = datetime.now(UTC)
    report = DoctorReport(remove, inactive)
    for row in client.query("doctor_orphan_ledgers", {}):
        row.pop("metadata")
        removed = remove and bool(client.query("doctor_delete_orphan_ledger", row))
        report.orphan_ledgers.append(OrphanLedger(**row, removed=removed))
    for row in client.query("doctor_entries_without_ledger", {}):
        removed = remove and bool(client.query("doctor_adopt_entries", row))
        report.entries_without_ledger.append(EntriesWithoutLedger(**row, removed=removed))
    params = {"inactive_seconds": inactive}
    for row in client.query("doctor_inactive_subscriptions", params):
        removed = False
        if remove:
            try:
                done = client.query(
                    "doctor_remove_subscription",
                    params | {"subscription_id": row["subscription_id"]},
                )
            except errors.ConsumerBusyError:  # a consumer connected since the look
                done = []
            removed = bool(done)
        report.inactive_subscriptions.append(InactiveSubscription(**row, removed=removed))
    if remove and not report.clean:
        items = report.orphan_ledgers + report.entries_without_ledger
        count = sum(1 for i in [*items, *report.inactive_subscriptions] if i.removed)
        _record(
            client,
            LifecycleReport("doctor", False, started),
            count,
            {
                "orphan_ledgers": [
                    [i.topic_id, i.partition, i.ledger_id]
                    for i in report.orphan_ledgers
                    if i.removed
                ],
                "ledgers_created": [
                    [i.topic_id, i.partition, i.ledger_id]
                    for i in report.entries_without_ledger
                    if i.removed
                ],
                "unsubscribed": [
                    f"{i.topic}/{i.subscription}"
                    for i in report.inactive_subscriptions
                    if i.removed
                ],
            },
        )
    return report
