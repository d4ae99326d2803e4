"""Redelivery policies of shared and key_shared subscriptions (Pulsar's):
:class:`Backoff` (exponential negative-ack delays), :class:`DeadLetterPolicy`
(a message delivered too often goes to a dead-letter topic), and the
retry-letter topic of ``consumer.reconsume_later`` (the decision of where a
reconsumed message goes and with which properties: :func:`reconsumption`).
The consumer's faces do the sending (a producer from the client, through
:class:`LetterClient`, in a txnq transaction); ``retry_letters`` decides the
rest of ``reconsume_later``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from txnq import errors
from txnq.durations import Duration, parse_duration
from txnq.messages import Message, MessageId
from txnq.names import validate_name

if TYPE_CHECKING:
    from txnq.admin import Admin


@dataclasses.dataclass(frozen=True)
class Backoff:
    """Exponential redelivery delay for negative acknowledgements (Pulsar's
    MultiplierRedeliveryBackoff): ``min_delay * multiplier ** redelivery_count``,
    at most ``max_delay``."""

    min_delay: Duration = "1s"
    max_delay: Duration = "60s"
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        low = parse_duration(self.min_delay, what="min_delay")
        high = parse_duration(self.max_delay, what="max_delay")
        if high < low:
            raise errors.InvalidArgumentError(
                f"max_delay ({high:g}s) must not be below min_delay ({low:g}s)"
            )
        if (
            isinstance(self.multiplier, bool)
            or not isinstance(self.multiplier, int | float)
            or not 1 <= self.multiplier < float("inf")
        ):
            raise errors.InvalidArgumentError(
                f"multiplier must be a finite number of at least 1, got {self.multiplier!r}"
            )

    def delay(self, redelivery_count: int) -> float:
        """Seconds before a message nacked at this redelivery count comes back."""
        if isinstance(redelivery_count, bool) or not isinstance(redelivery_count, int):
            raise errors.InvalidArgumentError(
                f"redelivery_count must be an int, not {type(redelivery_count).__name__}"
            )
        low = parse_duration(self.min_delay, what="min_delay")
        high = parse_duration(self.max_delay, what="max_delay")
        try:
            grown = low * float(self.multiplier) ** min(max(redelivery_count, 0), 64)
        except OverflowError:  # a large multiplier: the cap applies
            return high
        return float(min(high, grown))


@dataclasses.dataclass(frozen=True)
class DeadLetterPolicy:
    """Pulsar's DeadLetterPolicy, for shared and key_shared subscriptions: a
    message delivered more than ``max_redeliver_count`` + 1 times goes to
    ``dead_letter_topic`` (default ``<topic>-<subscription>-DLQ``, created
    when missing) with its payload, key and properties plus REAL_TOPIC,
    REAL_SUBSCRIPTION, ORIGIN_MESSAGE_ID, REDELIVERY_COUNT and
    DEAD_LETTER_REASON, and is acknowledged on the subscription in the same
    PostgreSQL transaction. ``retry_letter_topic`` (default
    ``<topic>-<subscription>-RETRY``) is where ``reconsume_later`` sends."""

    max_redeliver_count: int
    dead_letter_topic: str | None = None
    retry_letter_topic: str | None = None

    def __post_init__(self) -> None:
        value = self.max_redeliver_count
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
            raise errors.InvalidArgumentError(
                f"max_redeliver_count must be an int from 0 to 2**31 - 1, got {value!r}"
            )
        for label, name in (
            ("dead_letter_topic", self.dead_letter_topic),
            ("retry_letter_topic", self.retry_letter_topic),
        ):
            if name is not None:
                validate_name(name, label.replace("_", " "))


def dead_letter_topic(policy: DeadLetterPolicy, topic: str, subscription: str) -> str:
    """The dead-letter topic of ``policy`` (default ``<topic>-<subscription>-DLQ``)."""
    return policy.dead_letter_topic or f"{topic}-{subscription}-DLQ"


def retry_letter_topic(policy: DeadLetterPolicy | None, topic: str, subscription: str) -> str:
    """The retry-letter topic (default ``<topic>-<subscription>-RETRY``)."""
    named = None if policy is None else policy.retry_letter_topic
    return named or f"{topic}-{subscription}-RETRY"


def ensure_topic(admin: Admin, name: str) -> int:
    """The id of a dead-letter or retry-letter topic, created (1 partition) when missing."""
    try:
        return admin.get_topic(name).topic_id
    except errors.TopicNotFoundError:
        try:
            return admin.create_topic(name).topic_id
        except errors.TopicExistsError:
            return admin.get_topic(name).topic_id


def reconsume_times(properties: dict[str, str]) -> int:
    """How often a message was reconsumed (its RECONSUMETIMES property, which
    any producer may have set to anything: what is no count is 0)."""
    try:
        return max(0, int(properties.get("RECONSUMETIMES", "0")))
    except (TypeError, ValueError):
        return 0


def topic_of(item: object) -> str | None:
    """The topic of a Message or MessageId (None for anything else)."""
    if isinstance(item, Message):
        return item.message_id.topic
    if isinstance(item, MessageId):
        return item.topic
    return None


class Reconsumption(NamedTuple):
    """Where ``reconsume_later`` sends a message's copy, and how."""

    topic: str
    properties: dict[str, str]
    deliver_after: float | None  # None: at once (a dead letter, or no delay)

    def send_options(self, message: Message) -> dict[str, Any]:
        """The ``producer.send`` options of the copy of ``message`` (whose
        value is the payload): its key and event time, these properties."""
        return {
            "key": message.key_bytes,
            "properties": self.properties,
            "event_time": message.event_time,
            "deliver_after": self.deliver_after,
        }


def reconsumption(
    message: Message,
    delay_seconds: float,
    *,
    topic: str,
    subscription: str,
    retry_topic: str,
    policy: DeadLetterPolicy | None,
) -> Reconsumption:
    """The copy of ``message`` that ``reconsume_later`` sends: to the retry
    topic with RECONSUMETIMES, REAL_TOPIC, ORIGIN_MESSAGE_ID and DELAY_TIME,
    or past ``max_redeliver_count`` reconsumptions to the dead-letter topic
    (with DEAD_LETTER_REASON), delivered at once."""
    properties = dict(message.properties)
    times = reconsume_times(properties) + 1
    properties.setdefault("REAL_TOPIC", topic)
    properties.setdefault("ORIGIN_MESSAGE_ID", str(message.message_id))
    properties["RECONSUMETIMES"] = str(times)
    properties["DELAY_TIME"] = str(int(delay_seconds * 1000))
    if policy is not None and times > policy.max_redeliver_count:
        properties["DEAD_LETTER_REASON"] = (
            f"reconsumed {times} times, more than max_redeliver_count "
            f"{policy.max_redeliver_count} allows"
        )
        return Reconsumption(dead_letter_topic(policy, topic, subscription), properties, None)
    return Reconsumption(retry_topic, properties, None if delay_seconds == 0 else delay_seconds)


class LetterClient(Protocol):
    """What a consumer needs of its client to send retry and dead letters: a
    producer per letter topic and a transaction (so the consumer package never
    imports the producer package). The asyncio client's return awaitables."""

    def producer(self, topic: str, name: str | None = None, **options: Any) -> Any: ...

    def new_transaction(self, timeout: Duration | None = None) -> Any: ...
