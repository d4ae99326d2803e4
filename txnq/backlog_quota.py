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
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from txnq.durations import Duration, Size, parse_duration, parse_size
from txnq.errors import InvalidArgumentError, TopicNotFoundError

if TYPE_CHECKING:
    from txnq.client import Client
    from txnq.lifecycle import LifecycleReport

POLICIES = ("producer_hold", "producer_error", "consumer_backlog_eviction")
#: Pulsar's names of the policies, accepted as well.
PULSAR_POLICIES = {
    "producer_request_hold": "producer_hold",
    "producer_exception": "producer_error",
}
#: Per-topic values that mean "no limit" (stored as -1) and "use the server
#: default" (stored as NULL).
NO_LIMIT = ("-1", "infinite", "unlimited")
DEFAULT = "default"


def parse_policy(value: object, *, what: str = "backlog_quota_policy") -> str:
    """One of :data:`POLICIES` (Pulsar's names are accepted too)."""
    if isinstance(value, str):
        name = value.strip().lower().replace("-", "_")
        name = PULSAR_POLICIES.get(name, name)
        if name in POLICIES:
            return name
    raise InvalidArgumentError(
        f"{what} must be one of {', '.join(POLICIES)} (Pulsar's producer_request_hold and "
        f"producer_exception are accepted too), not {value!r}"
    )


def _is_no_limit(value: object) -> bool:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value == -1
    return isinstance(value, str) and value.strip().lower() in NO_LIMIT


def parse_limit_bytes(value: Size, *, what: str = "backlog_quota_size") -> int:
    """Bytes (> 0), or -1 for no limit; ``"10GiB"``, ``1048576``, ``-1``, ``"infinite"``."""
    if _is_no_limit(value):
        return -1
    size = parse_size(value, what=what)
    if size == 0:
        raise InvalidArgumentError(
            f"{what} must be a positive size such as '10GiB', or -1 for no limit, not 0"
        )
    return size


def parse_limit_seconds(value: Duration, *, what: str = "backlog_quota_age") -> float:
    """Seconds (> 0), or -1 for no limit; ``"1h"``, ``3600``, ``-1``, ``"infinite"``."""
    if _is_no_limit(value):
        return -1.0
    return parse_duration(value, what=what, allow_zero=False)


def topic_value(value: object, parse: Any, what: str) -> Any:
    """A per-topic value for the database: None or "default" -> NULL (the
    server default), else the parsed limit or policy."""
    if value is None or (isinstance(value, str) and value.strip().lower() == DEFAULT):
        return None
    return parse(value, what=what)


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


@dataclass(frozen=True)
class BacklogQuotaInfo:
    """A topic's backlog quota in effect (its own values, else the server
    defaults) and whether the last check found it over."""

    limit_bytes: int
    limit_seconds: float
    policy: str
    from_defaults: list[str]  # which of size/age/policy come from the server defaults
    exceeded_since: datetime | None
    exceeded_reason: str | None
    checked_at: datetime | None


def check_backlog_quotas(client: Client, topic: str | None = None) -> LifecycleReport:
    """Check every topic with a backlog quota (or only ``topic``): evict for
    ``consumer_backlog_eviction``, record the topics over quota for the
    producer policies, clear the ones back under. Recorded in txnq.gc_runs
    (job ``backlog_quota``) when a subscription was over."""
    from txnq.lifecycle import LifecycleReport, _record

    report = LifecycleReport("backlog_quota", False, datetime.now(UTC))
    if topic is None:
        topics = client.query("backlog_quota_topics", {})
    else:
        info = client.admin.get_topic(topic)
        topics = [{"topic_id": info.topic_id, "name": info.name}]
    for row in topics:
        try:
            breaches = client.query("check_backlog_quota", {"topic_id": row["topic_id"]})
        except TopicNotFoundError:
            if topic is not None:
                raise
            continue  # deleted since it was listed: no quota to hold
        for breach in breaches:
            breach.pop("subscription_id")
            report.items.append(QuotaBreach(topic=row["name"], **breach))
    if report.items:
        evicted = sum(b.evicted_entries for b in report.items)
        held = sorted({b.topic for b in report.items if b.policy != "consumer_backlog_eviction"})
        _record(
            client,
            report,
            len(report.items),
            {"entries_evicted": evicted, "topics_over_quota": held},
        )
    return report
