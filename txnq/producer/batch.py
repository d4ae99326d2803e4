"""What a producer queues for one partition until it is written: an
:class:`EntryBatch` (one batch becomes one entry), and one message as the
columns of an append of its own (:func:`message_columns`)."""

from __future__ import annotations

import time
from concurrent.futures import Future
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeGuard

from txnq.transaction.pending import SendCallback
from txnq.transaction.protocol import OutgoingMessage

if TYPE_CHECKING:
    from txnq.transaction.base import TransactionBase


def plain_payload(value: object, limit: int, *given: object) -> TypeGuard[bytes]:
    """Whether a send is the producers' hot path: a ``bytes`` payload within
    the topic's size limit and none of the optional arguments ``given``
    (key, properties, event time, callback, delays), so nothing to check or
    encode and no OutgoingMessage to make (a third of send_async's time)."""
    return type(value) is bytes and len(value) <= limit and given.count(None) == len(given)


def joined_already(txn: object, face: type, producer: Any) -> TypeGuard[TransactionBase]:
    """Whether ``txn`` is a client transaction of the producer's face and
    client that the producer joined: the checks of its first message
    (``_joined``, ``_join_producer``) hold for the thousandth (transactional
    produce queued at 8 us a message through them, docs/benchmarks.md)."""
    return (
        type(txn) is face
        and txn._client is producer._client  # type: ignore[attr-defined]
        and txn._joined_already(producer)  # type: ignore[attr-defined]
    )


def message_columns(
    message: OutgoingMessage,
) -> tuple[list[bytes], list[bytes | None], list[str | None], list[datetime | None]]:
    """One message as the columns of an append of its own (payloads, keys,
    properties, event times)."""
    return [message.payload], [message.key], [message.properties], [message.event_time]


class EntryBatch:
    """Messages for one partition that will become one entry."""

    __slots__ = (
        "bytes",
        "callbacks",
        "details",
        "future",
        "opened",
        "payloads",
        "txn",
    )

    def __init__(self, txn: TransactionBase | None) -> None:
        self.txn = txn
        self.payloads: list[bytes] = []
        # The keys, properties and event times, one element per payload, once
        # a message of the batch has one of them; None until then (written as
        # NULL), so a batch of plain payloads appends to one list per message.
        self.details: tuple[list[bytes | None], list[str | None], list[datetime | None]] | None = (
            None
        )
        self.callbacks: list[tuple[int, SendCallback]] = []
        self.bytes = 0
        self.opened = time.monotonic()
        self.future: Future[int] = Future()  # resolves to the entry offset

    def add_details(self, index: int, message: OutgoingMessage | None) -> None:
        """The key, properties and event time of message ``index`` (just added;
        None: a plain payload, which has none of them)."""
        if self.details is None:
            self.details = ([None] * index, [None] * index, [None] * index)
        keys, properties, event_times = self.details
        if message is None:
            keys.append(None)
            properties.append(None)
            event_times.append(None)
            return
        keys.append(message.key)
        properties.append(message.properties)
        event_times.append(message.event_time)

    def columns(
        self,
    ) -> tuple[list[bytes], list[bytes | None], list[str | None], list[datetime | None]]:
        """The payloads, keys, properties and event times to append (the last
        three empty when no message has one)."""
        if self.details is None:
            return self.payloads, [], [], []
        return self.payloads, *self.details
