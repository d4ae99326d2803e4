"""The message lifecycle: TTL, retention and entry-log GC (docs/lifecycle.md).

Three steps, as in Pulsar and BookKeeper, each a function of a
:class:`~txnq.client.Client` that the scheduler runs on its own schedule and
``txnq gc run`` runs on demand:

- :func:`expire_ttl` (``ttl``) acknowledges, on every subscription's behalf,
  messages older than their topic's TTL. Nothing is deleted.
- :func:`apply_retention` (``retention``) deletes closed ledgers that every
  subscription has consumed and that retention no longer keeps: their
  metadata goes to DELETED; the rows stay until GC.
- :func:`collect_entry_logs` (``entry_logs``) drops a sealed entry log whose
  entries all belong to deleted ledgers, and compacts (``compaction``) one
  whose live share is under the run's threshold.

Beside them: :func:`check_backlog_quotas` (``backlog_quota``) enforces the
topics' backlog quotas, :func:`vacuum_hot_tables` (``vacuum``) vacuums the
small, constantly updated tables and :func:`shrink_hot_tables` rewrites those
a held snapshot left bloated, :func:`purge_history` (``purge``) deletes the
history older than its retention, and :func:`doctor` (``dirty_data``) finds
dirty data and removes it only when asked.

Every run that did something is recorded in ``txnq.gc_runs`` (``report``);
``limits`` holds the lock timeout and argument checks the jobs share.

One bad topic never stops a job for the others: TTL, retention and the
backlog quota check process each topic in its own PostgreSQL transaction,
GC each entry log; a topic (entry log) that fails -- on a row its function
cannot handle, any error but PostgreSQL being unreachable -- becomes a
:class:`~txnq.lifecycle.job_failures.JobFailure` in the report (``job_failures``),
and the job goes on. Failures are logged, recorded in the run's ``txnq.gc_runs`` row
(``failures``, ``details.failures``) and in ``txnq.job_failures`` (the view
``txnq.job_failure_status``: what fails now), and counted by the scheduler
(``txnq_job_topic_failures_total``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from txnq.lifecycle.backlog_quota import QuotaBreach, check_backlog_quotas
from txnq.lifecycle.compaction import (
    COMPACTION_MODES,
    COPY_CHUNK_ROWS,
    SWAP_LOCK_TIMEOUT,
    Compaction,
)
from txnq.lifecycle.dirty_data import (
    DoctorReport,
    EntriesWithoutLedger,
    InactiveSubscription,
    OrphanLedger,
    doctor,
)
from txnq.lifecycle.entry_logs import (
    GC_DROP_LOCK_TIMEOUT,
    SEALED_GRACE_SECONDS,
    EntryLogGc,
    collect_entry_logs,
)
from txnq.lifecycle.job_failures import JobFailure
from txnq.lifecycle.limits import LOCK_TIMEOUT, MAX_AGE_SECONDS
from txnq.lifecycle.purge import PURGE_BATCH_ROWS, Purged, TxnLogPartition, purge_history
from txnq.lifecycle.report import RECORDED_FAILURES, LifecycleReport, record_run
from txnq.lifecycle.retention import DeletedLedger, apply_retention
from txnq.lifecycle.ttl import CursorExpiry, expire_ttl
from txnq.lifecycle.vacuum import HOT_TABLES, Shrunk, Vacuumed, shrink_hot_tables, vacuum_hot_tables

if TYPE_CHECKING:
    from txnq.client import Client


def run_all(
    client: Client, *, dry_run: bool = False, compaction: Compaction = "minor"
) -> list[LifecycleReport]:
    """TTL, retention, the backlog quota check, then GC with ``compaction``, as
    ``txnq gc run`` does. In a dry run, TTL, retention and the quota check are
    skipped (they would change cursors and ledgers) and GC only reports."""
    reports = (
        []
        if dry_run
        else [expire_ttl(client), apply_retention(client), check_backlog_quotas(client)]
    )
    reports.append(collect_entry_logs(client, dry_run=dry_run, compaction=compaction))
    return reports


__all__ = [
    "COMPACTION_MODES",
    "COPY_CHUNK_ROWS",
    "GC_DROP_LOCK_TIMEOUT",
    "HOT_TABLES",
    "LOCK_TIMEOUT",
    "MAX_AGE_SECONDS",
    "PURGE_BATCH_ROWS",
    "RECORDED_FAILURES",
    "SEALED_GRACE_SECONDS",
    "SWAP_LOCK_TIMEOUT",
    "Compaction",
    "CursorExpiry",
    "DeletedLedger",
    "DoctorReport",
    "EntriesWithoutLedger",
    "EntryLogGc",
    "InactiveSubscription",
    "JobFailure",
    "LifecycleReport",
    "OrphanLedger",
    "Purged",
    "QuotaBreach",
    "Shrunk",
    "TxnLogPartition",
    "Vacuumed",
    "apply_retention",
    "check_backlog_quotas",
    "collect_entry_logs",
    "doctor",
    "expire_ttl",
    "purge_history",
    "record_run",
    "run_all",
    "shrink_hot_tables",
    "vacuum_hot_tables",
]
