"""The message lifecycle: TTL, retention and entry-log GC (docs/lifecycle.md).

Three steps, as in Pulsar and BookKeeper, each a function of a
:class:`~txnq.client.Client` that the scheduler runs on its own schedule and
``txnq gc run`` runs on demand:

- :func:`expire_ttl` acknowledges, on every subscription's behalf, messages
  older than their topic's TTL (``txnq.expire_ttl_v1``). Nothing is deleted.
- :func:`apply_retention` deletes closed ledgers that every subscription has
  consumed and that retention no longer keeps (``txnq.apply_retention_v1``):
  their metadata goes to DELETED; the rows stay until GC.
- :func:`collect_entry_logs` drops a sealed entry log (a PostgreSQL partition
  of ``txnq.entries``) whose entries all belong to deleted ledgers: DETACH
  PARTITION ... CONCURRENTLY (appends and reads go on), a second look at the
  detached table, then DROP TABLE. No row deletes, no vacuum bloat. A log that
  still holds live entries is reported with its live share; moving those rows
  (compaction) is not done by this version.

Every run is recorded in ``txnq.gc_runs``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from txnq import errors
from txnq.queries import QUERIES
from txnq.storage import connect, scalar

if TYPE_CHECKING:
    from txnq.client import Client

#: A sealed entry log is left alone for this long: an append that read the old
#: active log just before the roll may still insert into it.
SEALED_GRACE_SECONDS = 60.0

#: Entry-log tables are named by roll_entry_log_v1 from an integer only.
_ENTRY_LOG_TABLE = re.compile(r"^entries_[0-9]+$")

DETACH = sql.SQL("ALTER TABLE txnq.entries DETACH PARTITION {} CONCURRENTLY")
FINALIZE = sql.SQL("ALTER TABLE txnq.entries DETACH PARTITION {} FINALIZE")
ATTACH = sql.SQL("ALTER TABLE txnq.entries ATTACH PARTITION {} FOR VALUES IN ({})")
DROP = sql.SQL("DROP TABLE {}")
LOCK_TIMEOUT = "SET lock_timeout = '5s'"


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
    action: str  # dropped | would drop | kept: live entries | kept: a late append | ...

    @property
    def live_share(self) -> float:
        return self.live_bytes / self.bytes if self.bytes else 0.0


@dataclass
class LifecycleReport:
    """One run of one lifecycle step."""

    job: str
    dry_run: bool
    started_at: datetime
    items: list[Any] = field(default_factory=list)
    reclaimed_bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "dry_run": self.dry_run,
            "started_at": self.started_at,
            "items": [dataclasses.asdict(item) for item in self.items],
            "reclaimed_bytes": self.reclaimed_bytes,
        }


def _record(client: Client, report: LifecycleReport, count: int, details: dict[str, Any]) -> None:
    client.execute(
        "record_gc_run",
        {
            "job": report.job,
            "dry_run": report.dry_run,
            "started_at": report.started_at,
            "items": count,
            "bytes": report.reclaimed_bytes,
            "details": json.dumps(details),
        },
    )


def expire_ttl(client: Client) -> LifecycleReport:
    """Acknowledge messages older than their topic's TTL on every subscription."""
    report = LifecycleReport("ttl", False, datetime.now(UTC))
    for topic in client.query("ttl_topics", {}):
        for row in client.query("expire_ttl", {"topic_id": topic["topic_id"]}):
            report.items.append(CursorExpiry(topic=topic["name"], **row))
    if report.items:
        moved = sum(i.mark_delete_after - i.mark_delete_before for i in report.items)
        _record(client, report, len(report.items), {"entries_expired": moved})
    return report


def apply_retention(client: Client) -> LifecycleReport:
    """Delete the consumed ledgers that retention no longer keeps."""
    report = LifecycleReport("retention", False, datetime.now(UTC))
    for topic in client.query("retention_topics", {}):
        for row in client.query("apply_retention", {"topic_id": topic["topic_id"]}):
            report.items.append(DeletedLedger(topic=topic["name"], **row))
    report.reclaimed_bytes = sum(i.size_bytes for i in report.items)
    if report.items:
        topics = sorted({i.topic for i in report.items})
        _record(client, report, len(report.items), {"topics": topics})
    return report


def collect_entry_logs(
    client: Client, *, dry_run: bool = False, grace_seconds: float = SEALED_GRACE_SECONDS
) -> LifecycleReport:
    """Drop the sealed entry logs that hold no live entry; report the others.

    Raises :class:`~txnq.errors.TxnqError` when another GC holds the lock.
    """
    if isinstance(grace_seconds, bool) or not isinstance(grace_seconds, int | float):
        raise errors.InvalidArgumentError("grace_seconds must be a number of seconds")
    if grace_seconds < 0:
        raise errors.InvalidArgumentError("grace_seconds must not be negative")
    report = LifecycleReport("gc", dry_run, datetime.now(UTC))
    conn = connect(client.dsn, application_name="txnq-gc")
    try:
        if not scalar(conn, QUERIES["gc_try_lock"]):
            raise errors.TxnqError(
                "another entry-log GC is running (the scheduler, or another `txnq gc run`): "
                "try again when it has finished"
            )
        try:
            conn.execute(LOCK_TIMEOUT)
            logs = conn.execute(
                QUERIES["gc_sealed_entry_logs"], {"grace_seconds": float(grace_seconds)}
            ).fetchall()
            for entry_log_id, table_name, _sealed_at in logs:
                report.items.append(_collect_one(conn, entry_log_id, table_name, dry_run))
        finally:
            conn.execute(QUERIES["gc_unlock"])
    finally:
        conn.close()
    dropped = [i for i in report.items if i.action in ("dropped", "would drop")]
    report.reclaimed_bytes = sum(i.total_bytes for i in dropped)
    if report.items:
        _record(
            client,
            report,
            len(dropped),
            {"dropped": [i.entry_log_id for i in dropped], "examined": len(report.items)},
        )
    return report


def _collect_one(
    conn: psycopg.Connection[Any], entry_log_id: int, table_name: str, dry_run: bool
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

    def result(action: str) -> EntryLogGc:
        return EntryLogGc(
            entry_log_id, table_name, *usage, total_bytes=state["total_bytes"], action=action
        )

    if usage[2] > 0:
        return result("kept: live entries")
    if dry_run:
        return result("would drop")
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


def _table_state(conn: psycopg.Connection[Any], table_name: str) -> dict[str, Any]:
    row = conn.execute(QUERIES["entry_log_table_state"], {"table_name": table_name}).fetchone()
    assert row is not None
    return {"exists": row[0], "attached": row[1], "detach_pending": row[2], "total_bytes": row[3]}


def _usage(conn: psycopg.Connection[Any], entry_log_id: int) -> tuple[int, int, int, int]:
    row = conn.execute(QUERIES["entry_log_usage"], {"entry_log_id": entry_log_id}).fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2]), int(row[3])


def run_all(client: Client, *, dry_run: bool = False) -> list[LifecycleReport]:
    """TTL, retention, the backlog quota check, then GC, as ``txnq gc run``
    does. In a dry run, TTL, retention and the quota check are skipped (they
    would change cursors and ledgers) and GC only reports."""
    from txnq.backlog_quota import check_backlog_quotas

    reports = (
        []
        if dry_run
        else [expire_ttl(client), apply_retention(client), check_backlog_quotas(client)]
    )
    reports.append(collect_entry_logs(client, dry_run=dry_run))
    return reports
