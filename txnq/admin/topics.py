"""Topics and their policies: create, inspect, grow, set retention, TTL and
backlog quota, delete; and the subscriptions a topic has."""

from __future__ import annotations

import dataclasses
from typing import Any

from txnq.admin.base import AdminBase, check_flag
from txnq.admin.info import (
    BacklogQuotaInfo,
    PartitionInfo,
    SubscriptionInfo,
    TopicDescription,
    TopicInfo,
)
from txnq.database.queries import QUERIES
from txnq.durations import Duration, Size, parse_duration, parse_size
from txnq.errors import InvalidArgumentError, TopicNotFoundError
from txnq.names import validate_name
from txnq.policies import (
    parse_limit_bytes,
    parse_limit_seconds,
    parse_policy,
    parse_retention_size,
    parse_retention_time,
    topic_value,
)

# set_topic_policy(ttl=...) left out: keep the TTL (None removes it).
_UNCHANGED = object()


def _quota_params(
    size: object, age: object, policy: object, given: list[bool] | None = None
) -> dict[str, Any]:
    """Parameters of the set_backlog_quota query; ``given`` says which values
    to change (default: those not None). None or "default" -> the server
    default (NULL)."""
    set_bytes, set_seconds, set_policy = given or [v is not None for v in (size, age, policy)]
    return {
        "set_bytes": set_bytes,
        "limit_bytes": topic_value(size, parse_limit_bytes, "backlog_quota_size"),
        "set_seconds": set_seconds,
        "limit_seconds": topic_value(age, parse_limit_seconds, "backlog_quota_age"),
        "set_policy": set_policy,
        "policy": topic_value(policy, parse_policy, "backlog_quota_policy"),
    }


def _check_partitions(partitions: object) -> int:
    if isinstance(partitions, bool) or not isinstance(partitions, int):
        raise InvalidArgumentError(f"partitions must be an int, not {type(partitions).__name__}")
    if not 1 <= partitions <= 4096:
        raise InvalidArgumentError(f"a topic has 1 to 4096 partitions, not {partitions}")
    return partitions


class TopicAdmin(AdminBase):
    """Topics, their policies and their subscriptions: the part of the Admin
    that the subscriptions part builds on."""

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        retention: Duration | None = 0,
        retention_size: Size | None = 0,
        ttl: Duration | None = None,
        max_message_bytes: Size | None = None,
        backlog_quota_size: Size | None = None,
        backlog_quota_age: Duration | None = None,
        backlog_quota_policy: str | None = None,
    ) -> TopicInfo:
        """Create a topic. ``retention`` keeps acknowledged data for that long
        (-1/"infinite": forever), ``retention_size`` caps it by bytes, ``ttl``
        acknowledges unconsumed messages older than that on the subscriptions'
        behalf (None: never). ``backlog_quota_size`` / ``backlog_quota_age`` /
        ``backlog_quota_policy`` limit each subscription's backlog (see
        :meth:`set_topic_policy`); None uses the server default."""
        quota = _quota_params(backlog_quota_size, backlog_quota_age, backlog_quota_policy)
        params = {
            "name": validate_name(name, "topic"),
            "partitions": _check_partitions(partitions),
            "retention_seconds": parse_retention_time(retention),
            "retention_bytes": parse_retention_size(retention_size),
            "ttl_seconds": None
            if ttl is None
            else parse_duration(ttl, what="ttl", allow_zero=False),
            "max_message_bytes": self._max_message_bytes(max_message_bytes),
        }
        if not any(quota[k] for k in ("set_bytes", "set_seconds", "set_policy")):
            self._client.execute("create_topic", params)
        else:
            # The topic and its quota in one PostgreSQL transaction.
            with self._client.connection() as conn, conn.transaction():
                row = conn.execute(QUERIES["create_topic"], params).fetchone()
                assert row is not None
                conn.execute(QUERIES["set_backlog_quota"], {**quota, "topic_id": row[0]})
        return self.get_topic(name)

    def _max_message_bytes(self, value: Size | None) -> int:
        cap = self._client.settings.max_message_bytes
        if value is None:
            return cap
        size = parse_size(value, what="max_message_bytes")
        if not 1 <= size <= cap:
            raise InvalidArgumentError(
                f"max_message_bytes must be between 1 and MAX_MESSAGE_BYTES ({cap}), got {size}"
            )
        return size

    def get_topic(self, name: str) -> TopicInfo:
        rows = self._client.query("topic_by_name", {"name": validate_name(name, "topic")})
        if not rows:
            raise TopicNotFoundError(
                f"topic {name!r} does not exist: create it with client.admin.create_topic "
                f"or `txnq topics create {name}`"
            )
        return TopicInfo(**rows[0])

    def list_topics(self) -> list[TopicInfo]:
        fields = {f.name for f in dataclasses.fields(TopicInfo)}
        return [
            TopicInfo(**{k: v for k, v in row.items() if k in fields})
            for row in self._client.query("list_topics", {})
        ]

    def describe_topic(self, name: str) -> TopicDescription:
        topic = self.get_topic(name)
        partitions = self._client.query("topic_partitions", {"topic_id": topic.topic_id})
        quota = self._client.query("backlog_quota_info", {"topic_id": topic.topic_id})
        return TopicDescription(
            topic=topic,
            partitions=[PartitionInfo(**row) for row in partitions],
            subscriptions=self.list_subscriptions(name),
            backlog_quota=BacklogQuotaInfo(**quota[0]) if quota else None,
        )

    def update_topic(self, name: str, *, partitions: int) -> TopicInfo:
        """Grow a topic to ``partitions`` partitions (never shrink, as Kafka and Pulsar)."""
        topic = self.get_topic(name)
        count = _check_partitions(partitions)
        if count < topic.partitions:
            raise InvalidArgumentError(
                f"topic {name!r} has {topic.partitions} partitions and can only grow "
                "(keys would move to other partitions and lose their order)"
            )
        self._client.execute("add_partitions", {"topic_id": topic.topic_id, "partitions": count})
        return self.get_topic(name)

    def set_topic_policy(
        self,
        name: str,
        *,
        retention: Duration | None = None,
        retention_size: Size | None = None,
        ttl: Duration | object | None = _UNCHANGED,
        backlog_quota_size: Size | object | None = _UNCHANGED,
        backlog_quota_age: Duration | object | None = _UNCHANGED,
        backlog_quota_policy: str | object | None = _UNCHANGED,
    ) -> TopicInfo:
        """Change a topic's lifecycle policies; what is not given stays.

        ``retention`` keeps consumed ledgers for that long (-1/"infinite":
        forever, 0: not by time), ``retention_size`` while they add up to at
        most that (-1: no cap, 0: not by size); both 0 deletes what every
        subscription has consumed at the next retention run. ``ttl``
        acknowledges messages older than that on the subscriptions' behalf;
        ``ttl=None`` removes it. The lifecycle jobs read the new values at
        their next run (docs/lifecycle.md).

        Backlog quota (docs/backlog-quota.md): ``backlog_quota_size`` (bytes
        or "10GiB") and ``backlog_quota_age`` (a duration) limit each
        subscription's backlog, -1 for no limit; ``backlog_quota_policy`` is
        ``producer_hold``, ``producer_error`` or ``consumer_backlog_eviction``.
        None (or "default") for any of them uses the server default
        (BACKLOG_QUOTA_DEFAULT_*). A change clears the topic's over-quota
        state; the next check (scheduler, ``txnq gc run``, a held producer)
        decides anew.
        """
        topic = self.get_topic(name)
        quota_given = [
            v is not _UNCHANGED
            for v in (backlog_quota_size, backlog_quota_age, backlog_quota_policy)
        ]
        if (
            retention is None
            and retention_size is None
            and ttl is _UNCHANGED
            and not any(quota_given)
        ):
            raise InvalidArgumentError(
                "nothing to change: give retention, retention_size, ttl, backlog_quota_size, "
                "backlog_quota_age and/or backlog_quota_policy"
            )
        quota = _quota_params(
            None if backlog_quota_size is _UNCHANGED else backlog_quota_size,
            None if backlog_quota_age is _UNCHANGED else backlog_quota_age,
            None if backlog_quota_policy is _UNCHANGED else backlog_quota_policy,
            given=quota_given,
        )
        params = {
            "topic_id": topic.topic_id,
            "retention_seconds": None if retention is None else parse_retention_time(retention),
            "retention_bytes": None
            if retention_size is None
            else parse_retention_size(retention_size),
            "ttl_seconds": None
            if ttl is None or ttl is _UNCHANGED
            else parse_duration(ttl, what="ttl", allow_zero=False),  # type: ignore[arg-type]
            "clear_ttl": ttl is None,
        }
        if retention is not None or retention_size is not None or ttl is not _UNCHANGED:
            self._client.execute("set_topic_policy", params)
        if any(quota_given):
            self._client.execute("set_backlog_quota", {**quota, "topic_id": topic.topic_id})
        return self.get_topic(name)

    def delete_topic(self, name: str, *, force: bool = False) -> None:
        """Delete a topic; refused while a subscription has a backlog or a
        consumer is connected, unless ``force``."""
        forced = check_flag(force, "force")
        topic = self.get_topic(name)
        self._client.execute("delete_topic", {"topic_id": topic.topic_id, "force": forced})

    def list_subscriptions(self, topic: str) -> list[SubscriptionInfo]:
        info = self.get_topic(topic)
        return [
            SubscriptionInfo(**row)
            for row in self._client.query("list_subscriptions", {"topic_id": info.topic_id})
        ]
