"""What one run of a lifecycle job did, and its record in ``txnq.gc_runs``:
the report and the recording every job shares."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from txnq.lifecycle.job_failures import JobFailure

if TYPE_CHECKING:
    from txnq.client import Client


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
    #: Of an entry-log GC run: the entry log it made active, when the active
    #: one was over ENTRY_LOG_MAX_BYTES or ENTRY_LOG_MAX_AGE and it rolled it.
    rolled_to_entry_log: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "dry_run": self.dry_run,
            "started_at": self.started_at,
            "items": [dataclasses.asdict(item) for item in self.items],
            "reclaimed_bytes": self.reclaimed_bytes,
            "rolled_to_entry_log": self.rolled_to_entry_log,
            "failures": [dataclasses.asdict(f) | {"where": f.where} for f in self.failures],
        }


#: How many failures a run's txnq.gc_runs row lists in details.failures.
RECORDED_FAILURES = 20


def record_run(
    client: Client, report: LifecycleReport, count: int, details: dict[str, Any]
) -> None:
    """Record ``report`` as a row of txnq.gc_runs: ``count`` items, ``details``
    as JSON (with the first RECORDED_FAILURES failures)."""
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
