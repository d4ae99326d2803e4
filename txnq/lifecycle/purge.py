"""The history purge: rows txnq keeps only as history (finished transactions
and their log, aborted ranges nothing is left to hide, DELETED ledgers whose
entries are gone, DROPPED entry logs, GC runs, consumers whose lease expired
long ago, producers idle for long) are deleted once older than their retention
(``txnq.purge_history_v1``). docs/lifecycle.md ("Every table bounded") has the
rule of every table of txnq and the job that applies it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from txnq import errors
from txnq.lifecycle.limits import MAX_AGE_SECONDS, check_number
from txnq.lifecycle.report import LifecycleReport, record_run

if TYPE_CHECKING:
    from txnq.client import Client

#: Rows of one kind deleted per call of purge_history_v1 (one transaction).
PURGE_BATCH_ROWS = 10_000
#: Calls per run at most: a run never holds the database longer than this
#: many batches; what is left waits for the next run.
PURGE_MAX_BATCHES = 20


@dataclass(frozen=True)
class Purged:
    relation: str
    rows: int


def purge_history(
    client: Client,
    *,
    finished_txn_seconds: float | None = None,
    history_seconds: float | None = None,
    producer_seconds: float | None = None,
    batch_rows: int = PURGE_BATCH_ROWS,
) -> LifecycleReport:
    """Delete the history older than its retention: finished transactions
    after ``finished_txn_seconds`` (default: the setting
    FINISHED_TXN_RETENTION_SECONDS), the rest after ``history_seconds``
    (HISTORY_RETENTION_SECONDS), producers idle for ``producer_seconds``
    (PRODUCER_EXPIRY_SECONDS); ``batch_rows`` rows of each kind per
    transaction, at most :data:`PURGE_MAX_BATCHES` transactions a run."""
    settings = client.settings
    finished = check_number(
        settings.finished_txn_retention_seconds
        if finished_txn_seconds is None
        else finished_txn_seconds,
        "finished_txn_seconds",
        MAX_AGE_SECONDS,
    )
    history = check_number(
        settings.history_retention_seconds if history_seconds is None else history_seconds,
        "history_seconds",
        MAX_AGE_SECONDS,
    )
    producer = check_number(
        settings.producer_expiry_seconds if producer_seconds is None else producer_seconds,
        "producer_seconds",
        MAX_AGE_SECONDS,
    )
    if finished <= 0 or history <= 0 or producer <= 0:
        raise errors.InvalidArgumentError("retention periods must be longer than zero")
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise errors.InvalidArgumentError("batch_rows must be a positive integer")
    report = LifecycleReport("purge", False, datetime.now(UTC))
    totals: dict[str, int] = {}
    for _ in range(PURGE_MAX_BATCHES):
        rows = client.query(
            "purge_history",
            {
                "finished_seconds": finished,
                "history_seconds": history,
                "producer_seconds": producer,
                "limit": batch_rows,
            },
        )
        for row in rows:
            totals[row["relation"]] = totals.get(row["relation"], 0) + int(row["purged"])
        if not any(row["more"] for row in rows):
            break
    report.items.extend(Purged(relation, count) for relation, count in totals.items() if count)
    if report.items:
        record_run(client, report, sum(i.rows for i in report.items), dict(sorted(totals.items())))
    return report
