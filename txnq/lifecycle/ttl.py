"""TTL: acknowledge, on every subscription's behalf, messages older than
their topic's TTL (``txnq.expire_ttl_v2``). Nothing is deleted."""

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
class CursorExpiry:
    topic: str
    partition: int
    subscription_id: int
    mark_delete_before: int
    mark_delete_after: int


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
        record_run(client, report, len(report.items), {"entries_expired": moved})
    replace_failures(client, report.job, report.failures)
    return report
