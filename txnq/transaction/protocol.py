"""The one transaction protocol: what a producer and a consumer ask of the
transaction given as ``txn=``.

Four classes implement it: ``txnq.Transaction`` and ``txnq.aio.Transaction``
(client transactions, ``client.new_transaction()``) and
``txnq.AttachedTransaction`` and ``txnq.aio.AttachedTransaction``
(application transactions, ``txnq.attach(conn)``). A producer or consumer
never asks which kind it was given: it checks that ``txn`` is a transaction of
its own face (sync or asyncio) and hands the send or the acknowledgement to it
(double dispatch). The transaction decides how the work joins it and calls
back the side that does it:

- a client transaction binds the producer's transactional session (or
  registers the consumer) and has the producer append, or the consumer
  acknowledge, naming the transaction's id;
- an application transaction stages the message or the acks on the caller's
  connection itself, and refuses what it cannot take (``send()``, which
  returns an offset, delayed messages, cumulative acks, shared
  subscriptions).

The protocol is generic in what its methods return, because the two faces
wait differently: the sync face returns the result, the asyncio face an
awaitable of it (:data:`SyncTransaction`, :data:`AsyncTransaction`).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, TypeVar

from txnq.messages import MessageId
from txnq.transaction.pending import PendingSend, SendCallback


# Not frozen: a frozen dataclass's __init__ cost send_async about 10%
# (bench/produce_consume.py, batched produce).
@dataclass(slots=True)
class OutgoingMessage:
    """One message a producer checked and encoded, not routed yet: what a
    send hands its transaction (nobody changes it once made)."""

    payload: bytes
    key: bytes | None
    properties: str | None  # JSON text
    event_time: datetime | None
    partition: int | None  # asked for by the caller; None: routed by key or round robin
    callback: SendCallback | None = None
    deliver_at: datetime | None = None  # a delayed message (None: deliverable at once)


Written = TypeVar("Written", covariant=True)
Queued = TypeVar("Queued", covariant=True)
Done = TypeVar("Done", covariant=True)


class TransactionProtocol(Protocol[Written, Queued, Done]):
    """What every transaction does for the producers and consumers that join it.

    ``producer`` and ``consumer`` are of the transaction's own face; each
    method does the whole send or acknowledgement, or raises what this kind of
    transaction refuses (InvalidArgumentError) or why it cannot take more
    (TransactionEndedError and its kin)."""

    def _send(self, producer: Any, message: OutgoingMessage) -> Written:
        """``producer.send(..., txn=self)``: written when this returns."""
        ...

    def _send_async(self, producer: Any, message: OutgoingMessage) -> Queued:
        """``producer.send_async(..., txn=self)``: queued, resolved later."""
        ...

    def _acknowledge(self, consumer: Any, items: list[object]) -> Done:
        """``consumer.acknowledge(items, txn=self)`` (Messages or MessageIds)."""
        ...

    def _acknowledge_cumulative(
        self, consumer: Any, message_id: MessageId, size: int | None
    ) -> Done:
        """``consumer.acknowledge_cumulative(message, txn=self)``."""
        ...


#: A transaction of the sync face.
SyncTransaction = TransactionProtocol[MessageId, PendingSend, None]
#: A transaction of the asyncio face.
AsyncTransaction = TransactionProtocol[
    Awaitable[MessageId], Awaitable[PendingSend], Awaitable[None]
]
