"""Topic policies as users write them: retention, and the backlog quota's
limits and policy (docs/lifecycle.md, docs/backlog-quota.md).

A foundation module: the settings (the server defaults of the backlog quota)
and the Admin API (a topic's own values) parse them alike, and neither needs
the lifecycle jobs that enforce them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from txnq.durations import Duration, Size, parse_duration, parse_size
from txnq.errors import InvalidArgumentError

#: Retention values that keep acknowledged data forever (stored as -1).
FOREVER = ("infinite", "forever", "-1")

#: What happens when a subscription is over its topic's backlog quota.
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


def parse_retention_time(value: Duration | None) -> float:
    """Seconds; -1 (or "infinite") keeps acknowledged data forever, 0 keeps none."""
    if value is None:
        return 0.0
    if isinstance(value, int | float) and not isinstance(value, bool) and value == -1:
        return -1.0
    if isinstance(value, str) and value.strip().lower() in FOREVER:
        return -1.0
    return parse_duration(value, what="retention")


def parse_retention_size(value: Size | None) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value == -1:
        return -1
    if isinstance(value, str) and value.strip().lower() in FOREVER:
        return -1
    return parse_size(value, what="retention_size")


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


def topic_value(value: object, parse: Callable[..., Any], what: str) -> Any:
    """A per-topic value for the database: None or "default" -> NULL (the
    server default), else the parsed limit or policy."""
    if value is None or (isinstance(value, str) and value.strip().lower() == DEFAULT):
        return None
    return parse(value, what=what)
