"""Retention: delete the closed ledgers that every subscription has consumed
and that retention no longer keeps (``txnq.apply_retention_v2``). Their
metadata goes to DELETED; the rows stay until entry-log GC drops their log."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from txnq import errors
from txnq.lifecycle.job_failures import failure_of, policy_hint, replace_failures
from txnq.lifecycle.report import LifecycleReport, record_run

if TYPE_CHECKING:
    from txnq.client import Client


@dataclass(frozen=True)
class DeletedLedger:
    topic: str
    partition: int
    ledger_id: int
    first_offset: int
    last_offset: int
    size_bytes: int


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
        record_run(client, report, len(report.items), {"topics": topics})
    replace_failures(client, report.job, report.failures)
    return report
