"""Messages as users see them: :class:`MessageId`, :class:`Message`, the
checks that turn user input (payload, key, properties, event time) into what
is stored, and the decoding of stored messages.

Decoding never stalls delivery. Whatever is stored -- an event time after
year 9999 or 'infinity' (Python's datetime holds years 1 to 9999),
properties that are not an object of strings, rows an older version or a
hand edit wrote -- a consumer's fetch or claim returns every row: the rows
load with psycopg's own loaders (properties checked as they load, by
:func:`use_message_loaders`), and only when a value fails are the rows of
that result loaded again by :func:`lenient_rows`, which puts an
:class:`Undecodable` in place of each value that cannot be decoded. The
consumer then turns each message holding one into an
:class:`UndecodableMessage` (:func:`checked`), which ``receive()`` raises
as a MessageDecodeError in its place. The fast path pays nothing per
message: no extra round trip, no per-value Python call but the properties
check, and the second pass runs only for a result that failed.
"""

from __future__ import annotations

import json
import struct
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

import psycopg
from psycopg import adapt
from psycopg.pq import Format
from psycopg.types.datetime import TimestamptzBinaryLoader, TimestamptzLoader

from txnq.errors import InvalidArgumentError, MessageDecodeError

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

    @property
    def batch_index(self) -> int:
        return self.message_id.batch_index

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


# -- decoding stored messages ------------------------------------------------------


class Undecodable:
    """In a row loaded by :func:`lenient_rows`, in place of a stored value the
    client cannot decode; ``detail`` says what it holds and why it fails."""

    __slots__ = ("detail",)

    def __init__(self, detail: str) -> None:
        self.detail = detail

    def __repr__(self) -> str:
        return f"Undecodable({self.detail!r})"


class LenientRows(list[Any]):
    """Rows loaded by :func:`lenient_rows`: some values may be :class:`Undecodable`."""


class UndecodableMessage(Message):
    """Stands in a receive queue for a message one of whose fields could not be
    decoded (it holds an :class:`Undecodable`): ``receive()`` raises
    :meth:`error` instead of handing it out. Its id and batch size are real,
    so acknowledging it by id works as for any message."""

    __slots__ = ("detail", "field", "note")
    field: str  # publish_time, event_time or properties
    detail: str  # what it holds and why it fails
    note: str  # what else happened (a dead-letter move that failed), or ""

    def error(self) -> MessageDecodeError:
        return MessageDecodeError(
            self.message_id, self.field, self.detail, self.value, self.key_bytes, self.note
        )


#: The fields of a Message that a stored value may fail to decode into.
DECODED_FIELDS = ("publish_time", "event_time", "properties")


def checked(message: Message) -> Message:
    """``message``, or an :class:`UndecodableMessage` for it when one of its
    fields is :class:`Undecodable` (only rows from :func:`lenient_rows` have those)."""
    for field in DECODED_FIELDS:
        value = getattr(message, field)
        if value.__class__ is Undecodable:
            bad = UndecodableMessage(
                message.value,
                message.key_bytes,
                {},
                message.message_id,
                message.publish_time,
                message.event_time,
                message.redelivery_count,
                message.producer_id,
                message.sequence,
                message.batch_size,
            )
            bad.field, bad.detail, bad.note = field, value.detail, ""
            return bad
    return message


def _properties(value: Any, text: bytes) -> Any:
    """Stored properties as a dict of str (JSON null: none); raises DataError
    otherwise. (The loaders inline the common case: this runs per message.)"""
    if value.__class__ is dict:
        for item in value.values():
            if item.__class__ is not str:
                break
        else:
            return value
    elif value is None:
        return {}
    raise psycopg.DataError(f"properties {_clipped(text)} are not an object of strings")


def _clipped(text: bytes | str, limit: int = 200) -> str:
    shown = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    return shown if len(shown) <= limit else shown[:limit] + "..."


class _PropertiesBinaryLoader(adapt.Loader):
    """jsonb properties, binary: a dict of str, checked as it loads."""

    format = Format.BINARY

    def load(self, data: Any) -> Any:
        if data and data[0] != 1:
            raise psycopg.DataError(f"unknown jsonb binary format: {data[0]}")
        text = bytes(data[1:])
        value = json.loads(text)
        if value.__class__ is dict:  # the common case, inline: this runs per message
            for item in value.values():
                if item.__class__ is not str:
                    break
            else:
                return value
        return _properties(value, text)


class _PropertiesLoader(adapt.Loader):
    """jsonb properties, text: as :class:`_PropertiesBinaryLoader`."""

    def load(self, data: Any) -> Any:
        text = bytes(data)
        return _properties(json.loads(text), text)


def use_message_loaders(cursor: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> None:
    """Load the cursor's jsonb values (the messages' properties) as dicts of
    str, raising DataError for anything else, so that :func:`lenient_rows`
    takes over. One registration per query, not per message."""
    cursor.adapters.register_loader("jsonb", _PropertiesBinaryLoader)
    cursor.adapters.register_loader("jsonb", _PropertiesLoader)


_INT8 = struct.Struct("!q")
_INFINITY = (1 << 63) - 1
_MINUS_INFINITY = -(1 << 63)
_DAY_MICROS = 86_400_000_000
_DAYS_1970_TO_2000 = 10_957
_DATETIME_LIMITS = "a Python datetime holds years 1 to 9999, in the session's time zone"


def timestamp_text(micros: int) -> str:
    """A binary timestamptz (microseconds since 2000-01-01 UTC) as PostgreSQL
    prints it in UTC, for any year (datetime stops at 9999)."""
    if micros == _INFINITY:
        return "infinity"
    if micros == _MINUS_INFINITY:
        return "-infinity"
    days, rest = divmod(micros, _DAY_MICROS)
    year, month, day = _civil_from_days(days + _DAYS_1970_TO_2000)
    hours, rest = divmod(rest, 3_600_000_000)
    minutes, rest = divmod(rest, 60_000_000)
    seconds, fraction = divmod(rest, 1_000_000)
    era = "" if year > 0 else " BC"
    text = f"{year if year > 0 else 1 - year:04d}-{month:02d}-{day:02d} "
    text += f"{hours:02d}:{minutes:02d}:{seconds:02d}"
    return text + (f".{fraction:06d}".rstrip("0") if fraction else "") + "+00" + era


def _civil_from_days(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a count of days since 1970-01-01, proleptic
    Gregorian, year 0 being 1 BC (H. Hinnant's algorithm)."""
    z = days + 719_468
    era = z // 146_097
    day_of_era = z - era * 146_097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36_524 - day_of_era // 146_096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted_month = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted_month + 2) // 5 + 1
    month = shifted_month + 3 if shifted_month < 10 else shifted_month - 9
    return year_of_era + era * 400 + (month <= 2), month, day


class _LenientTimestamptzBinaryLoader(TimestamptzBinaryLoader):
    def load(self, data: Any) -> Any:
        try:
            return super().load(data)
        except (psycopg.DataError, OverflowError, ValueError):
            text = timestamp_text(_INT8.unpack(bytes(data))[0])
            return Undecodable(f"{text} cannot be decoded ({_DATETIME_LIMITS})")


class _LenientTimestamptzLoader(TimestamptzLoader):
    def load(self, data: Any) -> Any:
        try:
            return super().load(data)
        except (psycopg.DataError, OverflowError, ValueError):
            text = bytes(data).decode("ascii", "replace")
            return Undecodable(f"{text} cannot be decoded ({_DATETIME_LIMITS})")


class _LenientPropertiesBinaryLoader(_PropertiesBinaryLoader):
    def load(self, data: Any) -> Any:
        try:
            return super().load(data)
        except (psycopg.DataError, ValueError) as exc:
            return Undecodable(str(exc).removeprefix("properties "))


class _LenientPropertiesLoader(_PropertiesLoader):
    def load(self, data: Any) -> Any:
        try:
            return super().load(data)
        except (psycopg.DataError, ValueError) as exc:
            return Undecodable(str(exc).removeprefix("properties "))


class _LenientContext:
    """What a psycopg Transformer needs of its context: adapters and a connection."""

    def __init__(self, adapters: adapt.AdaptersMap, connection: Any) -> None:
        self.adapters = adapters
        self.connection = connection


def lenient_rows(cursor: psycopg.Cursor[Any] | psycopg.AsyncCursor[Any]) -> LenientRows:
    """All the rows of the cursor's current result, loaded again (from the
    result the server sent: no round trip) with an :class:`Undecodable` in
    place of each timestamp or properties value that cannot be decoded. For
    the result of a message query whose ``fetchall()`` raised DataError."""
    result = cursor.pgresult
    if result is None:
        return LenientRows()
    connection = cursor.connection
    adapters = adapt.AdaptersMap(connection.adapters)
    adapters.register_loader("timestamptz", _LenientTimestamptzBinaryLoader)
    adapters.register_loader("timestamptz", _LenientTimestamptzLoader)
    adapters.register_loader("jsonb", _LenientPropertiesBinaryLoader)
    adapters.register_loader("jsonb", _LenientPropertiesLoader)
    transformer = adapt.Transformer(_LenientContext(adapters, connection))
    transformer.set_pgresult(result)
    return LenientRows(transformer.load_rows(0, result.ntuples, tuple))
