"""Backlog quotas (Pulsar's ``backlogQuota``), docs/backlog-quota.md.

A topic may limit how much backlog each of its subscriptions holds: by size
(payload bytes between the cursor and the max read offset, summed over the
partitions) and by age (how long ago its oldest unacknowledged message was
published). What happens when a subscription is over is the topic's policy:

- ``producer_hold``: sends block (up to BACKLOG_QUOTA_HOLD_TIMEOUT_SECONDS,
  re-checking the quota meanwhile), then raise BacklogQuotaExceededError;
- ``producer_error``: sends raise BacklogQuotaExceededError at once;
- ``consumer_backlog_eviction``: the oldest backlog of the subscriptions over
  the quota is acknowledged on their behalf until it fits (as TTL does).

The produce path stays cheap: no backlog is computed per message.
:func:`check_backlog_quotas` (the scheduler's ``backlog_quota`` job, every
BACKLOG_QUOTA_CHECK_INTERVAL_SECONDS, and ``txnq gc run``) checks each topic
with ``txnq.check_backlog_quota_v2``, which evicts or records the topic in
``txnq.backlog_quota_exceeded``; the append function reads that row only.

The limits and policies are parsed by :mod:`txnq.policies` (topics and
settings alike); ``client.admin.describe_topic`` shows a topic's quota in
effect (:class:`txnq.admin.BacklogQuotaInfo`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from txnq.errors import TopicNotFoundError
from txnq.lifecycle.job_failures import failure_of, policy_hint, replace_failures
from txnq.lifecycle.report import LifecycleReport, record_run

if TYPE_CHECKING:
    from txnq.client import Client


@dataclass(frozen=True)
class QuotaBreach:
    """A subscription over its topic's backlog quota, as one check found it."""

    topic: str
    subscription: str
    over_size: bool
    over_age: bool
    backlog_bytes: int
    backlog_seconds: float | None
    limit_bytes: int
    limit_seconds: float
    policy: str
    evicted_entries: int


def check_backlog_quotas(client: Client, topic: str | None = None) -> LifecycleReport:
    """Check every topic with a backlog quota (or only ``topic``): evict for
    ``consumer_backlog_eviction``, record the topics over quota for the
    producer policies, clear the ones back under. Recorded in txnq.gc_runs
    (job ``backlog_quota``) when a subscription was over."""
    report = LifecycleReport("backlog_quota", False, datetime.now(UTC))
    scope: int | None = None
    if topic is None:
        topics = client.query("backlog_quota_topics", {})
    else:
        info = client.admin.get_topic(topic)
        scope = info.topic_id
        topics = [{"topic_id": info.topic_id, "name": info.name, "limit_seconds": None}]
    for row in topics:
        # Topic by topic: one that fails (e.g. a NaN age limit stored by hand)
        # is a failure of the report, and the others are still checked.
        try:
            breaches = client.query("check_backlog_quota", {"topic_id": row["topic_id"]})
        except TopicNotFoundError:
            if topic is not None:
                raise
            continue  # deleted since it was listed: no quota to hold
        except Exception as exc:
            hint = policy_hint(row["name"], {"backlog_quota_seconds": row["limit_seconds"]}, exc)
            report.failures.append(
                failure_of(
                    "backlog_quota", exc, topic=row["name"], topic_id=row["topic_id"], hint=hint
                )
            )
            continue
        for breach in breaches:
            breach.pop("subscription_id")
            report.items.append(QuotaBreach(topic=row["name"], **breach))
    if report.items or report.failures:
        evicted = sum(b.evicted_entries for b in report.items)
        held = sorted({b.topic for b in report.items if b.policy != "consumer_backlog_eviction"})
        record_run(
            client,
            report,
            len(report.items),
            {"entries_evicted": evicted, "topics_over_quota": held},
        )
    replace_failures(client, report.job, report.failures, scope)
    return report
