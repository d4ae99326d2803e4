"""The history purge: rows txnq keeps only as history (finished transactions
and their log, aborted ranges nothing is left to hide, DELETED ledgers whose
entries are gone, DROPPED entry logs, GC runs, consumers whose lease expired
long ago, producers idle for long) are deleted once older than their retention
(``txnq.purge_history_v1``). docs/lifecycle.md ("Every table bounded") has the
rule of every table of txnq and the job that applies it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

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
#: txn_log partitions made ahead of the current period.
TXN_LOG_PERIODS_AHEAD = 2


@dataclass(frozen=True)
class Purged:
    relation: str
    rows: int


@dataclass(frozen=True)
class TxnLogPartition:
    """A time partition of txnq.txn_log made (ahead) or dropped (its
    transactions all purged) by txnq.txn_log_maintain_v1."""

    action: str
    partition: str


def purge_history(
    client: Client,
    *,
    finished_txn_seconds: float | None = None,
    history_seconds: float | None = None,
    producer_seconds: float | None = None,
    batch_rows: int = PURGE_BATCH_ROWS,
) -> LifecycleReport:
    """Delete the history older than its retention, then keep txn_log's time
    partitions (made ahead, dropped once their transactions are purged):
    finished transactions
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
    partitions = [
        TxnLogPartition(row["action"], row["partition_name"])
        for row in client.query(
            "txn_log_maintain",
            {
                "partition_seconds": settings.txn_log_partition_seconds,
                "ahead": TXN_LOG_PERIODS_AHEAD,
                "keep_seconds": finished,
            },
        )
    ]
    report.items.extend(partitions)
    if report.items:
        details: dict[str, Any] = dict(sorted(totals.items()))
        details["txn_log_partitions"] = {
            action: [p.partition for p in partitions if p.action == action]
            for action in ("created", "dropped")
        }
        record_run(client, report, len(report.items), details)
    return report
