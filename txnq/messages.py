"""Messages as users see them: :class:`MessageId`, :class:`Message`, and the
checks that turn user input (payload, key, properties, event time) into what
is stored.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from txnq.errors import InvalidArgumentError

Payload = bytes | bytearray | memoryview | str
Key = str | bytes

#: The ranges of a message id's fields (PostgreSQL integer and bigint).
MAX_PARTITION = 2**31 - 1
MAX_OFFSET = 2**63 - 1
MAX_BATCH_INDEX = 2**31 - 1
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class MessageId(NamedTuple):
    """Where a message is: its entry's offset in the partition and its index in the batch.

    A tuple, so ids compare and sort by (topic, partition, offset, batch_index).
    """

    topic: str
    partition: int
    offset: int
    batch_index: int = 0

    def __str__(self) -> str:
        return f"{self.topic}:{self.partition}:{self.offset}:{self.batch_index}"


class Message:
    """A received message.

    ``value`` is the payload; ``key`` the key as text (``key_bytes`` raw);
    ``properties`` a dict of str; ``publish_time`` when it was appended;
    ``event_time`` what the producer gave; ``redelivery_count`` how often it
    was delivered before (on exclusive and failover subscriptions: negatively
    acknowledged and delivered again to this consumer; on shared and
    key_shared ones: delivered to any consumer, for any reason — nack, ack
    timeout, a consumer gone, an aborted transaction).
    """

    __slots__ = (
        "batch_size",
        "event_time",
        "key_bytes",
        "message_id",
        "producer_id",
        "properties",
        "publish_time",
        "redelivery_count",
        "sequence",
        "value",
    )

    def __init__(
        self,
        value: bytes,
        key_bytes: bytes | None,
        properties: dict[str, str],
        message_id: MessageId,
        publish_time: datetime,
        event_time: datetime | None = None,
        redelivery_count: int = 0,
        producer_id: int | None = None,
        sequence: int | None = None,
        batch_size: int = 1,
    ) -> None:
        self.value = value
        self.key_bytes = key_bytes
        self.properties = properties
        self.message_id = message_id
        self.publish_time = publish_time
        self.event_time = event_time
        self.redelivery_count = redelivery_count
        self.producer_id = producer_id
        self.sequence = sequence
        # How many messages share this message's entry (1 unless it was batched).
        self.batch_size = batch_size

    @property
    def key(self) -> str | None:
        return None if self.key_bytes is None else self.key_bytes.decode("utf-8", "replace")

    @property
    def topic(self) -> str:
        return self.message_id.topic

    @property
    def partition(self) -> int:
        return self.message_id.partition

    @property
    def offset(self) -> int:
        return self.message_id.offset

    def data(self) -> bytes:
        """Pulsar's spelling of :attr:`value`."""
        return self.value

    def __repr__(self) -> str:
        return (
            f"Message(id={self.message_id}, key={self.key!r}, value={self.value[:40]!r}"
            f"{'...' if len(self.value) > 40 else ''}, redelivery_count={self.redelivery_count})"
        )


def encode_payload(value: object, encoding: str = "utf-8") -> bytes:
    if isinstance(value, bytes):
        return value
    if isinstance(value, bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        return _encoded(value, encoding, "a payload")
    raise InvalidArgumentError(
        f"a payload must be bytes or str, not {type(value).__name__}; serialise it first "
        "(e.g. json.dumps(obj).encode())"
    )


def _encoded(text: str, encoding: str, what: str) -> bytes:
    try:
        return text.encode(encoding)
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{what} has characters that {encoding} cannot encode ({exc.reason} at position "
            f"{exc.start}, e.g. a lone surrogate): give bytes, or text without them"
        ) from None
    except (LookupError, TypeError, ValueError):
        raise InvalidArgumentError(
            f"unknown encoding {encoding!r}: use a text encoding such as 'utf-8'"
        ) from None


def encode_key(key: object) -> bytes | None:
    if key is None:
        return None
    if isinstance(key, bytes):
        return key
    if isinstance(key, str):
        return _encoded(key, "utf-8", "a key")
    raise InvalidArgumentError(f"a key must be str or bytes, not {type(key).__name__}")


def encode_properties(properties: object) -> str | None:
    """Properties as JSON text, or None when empty."""
    if properties is None:
        return None
    if not isinstance(properties, dict):
        raise InvalidArgumentError(
            f"properties must be a dict[str, str], not {type(properties).__name__}"
        )
    for name, value in properties.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise InvalidArgumentError(
                f"properties must map str to str; got {name!r}: {value!r} — convert values "
                "with str() first"
            )
        for text in (name, value):
            # PostgreSQL's jsonb holds neither NUL nor lone surrogates; refused
            # here, before the message joins a batch of other messages.
            _encoded(text, "utf-8", f"property {name!r}")
            if "\x00" in text:
                raise InvalidArgumentError(
                    f"property {name!r} contains a NUL character, which PostgreSQL cannot "
                    "store: remove it or encode the value (e.g. base64)"
                )
    return json.dumps(properties, separators=(",", ":")) if properties else None


def check_time(value: object, what: str) -> datetime:
    """``value`` as an aware datetime in UTC, which Python, PostgreSQL and
    Spark all represent (year 1 to 9999 in UTC); raises InvalidArgumentError
    naming ``what`` before anything is written."""
    if not isinstance(value, datetime):
        raise InvalidArgumentError(f"{what} must be a datetime, not {type(value).__name__}")
    try:
        utc = None if value.utcoffset() is None else value.astimezone(UTC)
    except (OverflowError, ValueError, TypeError):
        raise InvalidArgumentError(
            f"{what} {value!r} is not a time from year 1 to 9999 in UTC, the range Python, "
            "PostgreSQL and Spark share: give a time in that range"
        ) from None
    if utc is None:
        raise InvalidArgumentError(
            f"{what} must be timezone-aware (e.g. datetime.now(timezone.utc))"
        )
    return utc


def check_event_time(event_time: object) -> datetime | None:
    """An event time (a datetime, or seconds since the epoch) in UTC; see :func:`check_time`."""
    if event_time is None:
        return None
    if isinstance(event_time, bool) or not isinstance(event_time, datetime | int | float):
        raise InvalidArgumentError(
            "event_time must be a datetime or seconds since the epoch, "
            f"not {type(event_time).__name__}"
        )
    if isinstance(event_time, datetime):
        return check_time(event_time, "event_time")
    try:
        return _EPOCH + timedelta(seconds=event_time)
    except (OverflowError, ValueError):
        raise InvalidArgumentError(
            f"event_time {event_time!r} is not a time from year 1 to 9999 in UTC: give "
            "finite seconds since the epoch in that range"
        ) from None


def check_message_id(message_id: MessageId) -> MessageId:
    """A MessageId whose fields have the types and ranges of a stored message
    (a hand-made one may hold anything)."""
    partition, offset, index = message_id.partition, message_id.offset, message_id.batch_index
    for label, value, top in (
        ("partition", partition, MAX_PARTITION),
        ("offset", offset, MAX_OFFSET),
        ("batch_index", index, MAX_BATCH_INDEX),
    ):
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
            raise InvalidArgumentError(
                f"message id {message_id!r} has no valid {label} (an int from 0 to {top}): "
                "use the message_id of a received Message"
            )
    return message_id


def check_batch_size(size: object) -> int | None:
    """The batch size of a Message given back to acknowledge (None: unknown)."""
    if size is None:
        return None
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BATCH_INDEX:
        raise InvalidArgumentError(
            f"a Message's batch_size must be a positive int, not {size!r}: acknowledge "
            "the Message as it was received"
        )
    return size


def decode_properties(raw: Any) -> dict[str, str]:
    if raw is None:
        return {}
    if isinstance(raw, dict):
        return raw
    return dict(json.loads(raw))
