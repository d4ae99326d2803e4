"""Subscriptions: describe one, move its cursors (seek), delete it; and the
seek targets consumers share (``consumer.seek`` takes the same ones)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from txnq.admin.base import check_flag
from txnq.admin.info import (
    ConsumerInfo,
    CursorInfo,
    SubscriptionDescription,
    TopicInfo,
)
from txnq.admin.topics import TopicAdmin
from txnq.errors import InvalidArgumentError, SubscriptionNotFoundError
from txnq.messages import MAX_OFFSET, check_time
from txnq.names import validate_name

# Offsets are clamped by seek_v1 to the retained range, so these stand for the ends.
EARLIEST = -(2**62)
LATEST = 2**62


def seek_target(to: object) -> tuple[int | None, datetime | None]:
    """(offset, time) for seek_v1 from "earliest" / "latest" / an offset / a datetime."""
    if isinstance(to, str):
        if to == "earliest":
            return EARLIEST, None
        if to == "latest":
            return LATEST, None
        raise InvalidArgumentError(
            f"seek target must be 'earliest', 'latest', an offset or a datetime, not {to!r}"
        )
    if isinstance(to, datetime):
        if to.tzinfo is None:
            raise InvalidArgumentError("a seek time must be timezone-aware")
        return None, check_time(to, "a seek time")
    if isinstance(to, int) and not isinstance(to, bool):
        if not 0 <= to <= MAX_OFFSET:
            raise InvalidArgumentError(f"an offset is >= 0 and < 2**63, got {to}")
        return to, None
    raise InvalidArgumentError(
        "seek target must be 'earliest', 'latest', an offset or a datetime, "
        f"not {type(to).__name__}"
    )


class SubscriptionAdmin(TopicAdmin):
    """Subscriptions of the topics :class:`TopicAdmin` finds."""

    def _subscription(self, topic: TopicInfo, name: str) -> dict[str, Any]:
        rows = self._client.query(
            "subscription_by_name",
            {"topic_id": topic.topic_id, "name": validate_name(name, "subscription")},
        )
        if not rows:
            raise SubscriptionNotFoundError(
                f"topic {topic.name!r} has no subscription {name!r}: "
                "subscribe to create it, or list them with `txnq subscriptions list`"
            )
        return rows[0]

    def describe_subscription(self, topic: str, name: str) -> SubscriptionDescription:
        info = self.get_topic(topic)
        sub = self._subscription(info, name)
        summary = next(s for s in self.list_subscriptions(topic) if s.name == name)
        key = {"topic_id": info.topic_id, "subscription_id": sub["subscription_id"]}
        return SubscriptionDescription(
            topic=info.name,
            subscription=summary,
            cursors=[CursorInfo(**r) for r in self._client.query("subscription_cursors", key)],
            consumers=[
                ConsumerInfo(**r) for r in self._client.query("subscription_consumers", key)
            ],
        )

    def reset_subscription(
        self, topic: str, name: str, to: str | int | datetime = "earliest"
    ) -> list[CursorInfo]:
        """Move the subscription's cursors on every partition: to ``"earliest"``,
        ``"latest"``, an offset (the next message delivered), or a publish time.
        Connected consumers rewind to the new position."""
        info = self.get_topic(topic)
        sub = self._subscription(info, name)
        offset, time = seek_target(to)
        for partition in range(info.partitions):
            self._client.execute(
                "seek",
                {
                    "topic_id": info.topic_id,
                    "partition": partition,
                    "subscription_id": sub["subscription_id"],
                    "offset": offset,
                    "time": time,
                },
            )
        return self.describe_subscription(topic, name).cursors

    def delete_subscription(self, topic: str, name: str, *, force: bool = False) -> None:
        """Delete a subscription; refused while consumers are connected unless ``force``."""
        forced = check_flag(force, "force")
        info = self.get_topic(topic)
        sub = self._subscription(info, name)
        params = {"subscription_id": sub["subscription_id"], "except_consumer_id": None}
        self._client.execute("unsubscribe", {**params, "force": forced})
