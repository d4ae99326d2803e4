"""The asyncio face of application transactions: ``txnq.aio.attach(conn)``
gives an :class:`AttachedTransaction` on a psycopg ``AsyncConnection``;
:func:`process` is the exactly-once loop of the asyncio
``consumer.process(conn)``. What they do and guarantee is in
:mod:`txnq.transaction.attached_base` (and docs/exactly-once.md); this module
runs its plans on the caller's ``AsyncConnection``."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.pq import TransactionStatus

from txnq import errors
from txnq.database.plans import AsyncIO, arun
from txnq.durations import Duration
from txnq.messages import Message, MessageId
from txnq.transaction.attached_base import (
    AttachedBase,
    active_transaction,
    check_between_batches,
    process_options,
)
from txnq.transaction.pending import PendingSend
from txnq.transaction.protocol import OutgoingMessage

if TYPE_CHECKING:
    from txnq.client.aio import Client
    from txnq.consumer.aio import Consumer
    from txnq.producer.aio import Producer


class AttachedTransaction(AttachedBase):
    """A txnq transaction in the application's own PostgreSQL transaction on a
    psycopg ``AsyncConnection`` (``txnq.aio.attach(conn)``): the asyncio face
    of ``txnq.AttachedTransaction``, same plans, same guarantees
    (docs/exactly-once.md). ``async with`` publishes at a normal exit and
    discards at an exception; the caller commits its own transaction."""

    connection: psycopg.AsyncConnection[Any]

    def __init__(self, connection: object, *, client: Client | None = None) -> None:
        if not isinstance(connection, psycopg.AsyncConnection):
            raise errors.InvalidArgumentError(
                "txnq.aio.attach takes a psycopg AsyncConnection (in a transaction: "
                "`async with conn.transaction():`); for a sync psycopg or SQLAlchemy "
                f"connection use txnq.attach, not {type(connection).__name__}"
            )
        self._setup(connection, client)
        self._io = AsyncIO(self._current, _no_reconnect)

    _result_hint = "await the result after txn.commit()"
    _attach_name = "txnq.aio.attach"

    async def _current(self) -> psycopg.AsyncConnection[Any]:
        conn: psycopg.AsyncConnection[Any] = self._joined_connection()
        return conn

    async def send(
        self,
        topic: str,
        value: object,
        *,
        key: str | bytes | None = None,
        properties: dict[str, str] | None = None,
        partition: int | None = None,
        encoding: str = "utf-8",
    ) -> None:
        """Produce one message to ``topic`` when the caller's transaction commits."""
        await arun(self._send_plan(topic, value, key, properties, partition, encoding), self._io)

    async def commit(self) -> None:
        """Publish what this transaction staged (see ``txnq.AttachedTransaction.commit``)."""
        await arun(self._commit_plan(), self._io)

    async def abort(self) -> None:
        """Drop what was staged; consumers that acknowledged in it deliver again."""
        await arun(self._abort_plan(), self._io)

    async def flush(self) -> None:
        """Stage the messages ``send_async`` queued in this transaction."""
        await arun(self._flush_plan(), self._io)

    async def __aenter__(self) -> AttachedTransaction:
        self._enter()
        return self

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._exit(exc_type is not None):
            return
        if exc_type is None:
            await self.commit()
        else:
            await self.abort()

    # -- the transaction protocol (txnq.transaction.protocol) ----------------

    async def _send(self, producer: Producer, message: OutgoingMessage) -> MessageId:
        self._refuse_send()

    async def _send_async(self, producer: Producer, message: OutgoingMessage) -> PendingSend:
        """Staged on the caller's connection, appended when the caller commits."""
        self._check_not_delayed(message)
        partition = await producer._route_staged(message)
        staged, full = self._queue_send(producer, partition, message)
        if full is not None:
            await arun(self._stage_plan(full), self._io)
        return staged

    async def _acknowledge(self, consumer: Consumer, items: list[object]) -> None:
        """Staged on the caller's connection, applied when the caller commits."""
        await arun(self._stage_acks_plan(consumer, consumer._staged_acks(items)), self._io)

    async def _acknowledge_cumulative(
        self, consumer: Consumer, message_id: MessageId, size: int | None
    ) -> None:
        self._refuse_cumulative()


async def _no_reconnect() -> None:
    """The caller's connection is the caller's: a lost one is theirs to replace."""


def attach(connection: object, *, client: Client | None = None) -> AttachedTransaction:
    """Join the application transaction of a psycopg ``AsyncConnection``;
    inside an ``async with txnq.aio.attach(conn)`` block or a
    ``consumer.process(conn)`` batch, returns that block's transaction."""
    active = active_transaction(connection, AttachedTransaction)
    return active if active is not None else AttachedTransaction(connection, client=client)


#: The process() generator running on each connection (by id): a new one
#: closes the previous first, so a batch left by an exception in the loop body
#: rolls back before the next batch begins (an async generator is not closed
#: when its loop is left, unlike a sync one, which is collected at once).
_PROCESSING: dict[int, tuple[object, AsyncGenerator[Message, None]]] = {}


def process(
    consumer: Consumer,
    connection: object,
    *,
    batch_size: int = 100,
    idle_timeout: Duration | None = None,
) -> AsyncGenerator[Message, None]:
    """The asyncio face of ``txnq.transaction.attached_sync.process``: yield the
    consumer's messages, committing each batch's acks in one PostgreSQL
    transaction on ``connection`` with what the loop body wrote there. If the
    body raises, the batch rolls back and is delivered again: when the
    generator is closed (``async with contextlib.aclosing(...)``), or at the
    latest when the next ``process()`` on the connection starts."""
    batch_size, idle = process_options(batch_size, idle_timeout)
    if not isinstance(connection, psycopg.AsyncConnection):
        raise errors.InvalidArgumentError(
            "process() of the asyncio client takes a psycopg AsyncConnection, "
            f"not {type(connection).__name__}"
        )
    token = object()
    running = _PROCESSING.get(id(connection))
    previous = None if running is None else running[1]
    generator = _process(consumer, connection, batch_size, idle, previous, token)
    _PROCESSING[id(connection)] = (token, generator)
    return generator


async def _process(
    consumer: Consumer,
    conn: psycopg.AsyncConnection[Any],
    batch_size: int,
    idle: float | None,
    previous: AsyncGenerator[Message, None] | None,
    token: object,
) -> AsyncGenerator[Message, None]:
    if previous is not None:
        await previous.aclose()  # its open batch rolls back and is delivered again
    try:
        while True:
            batch = await consumer.batch_receive(batch_size, timeout=1.0 if idle is None else idle)
            if not batch:
                if idle is not None:
                    return
                continue
            busy = conn.info.transaction_status != TransactionStatus.IDLE
            check_between_batches(consumer, batch, busy)
            done = False
            try:
                async with conn.transaction(), AttachedTransaction(conn) as txn:
                    for message in batch:
                        yield message
                    await consumer.acknowledge(batch, txn=txn)
                done = True
            except errors.TransactionConflictError:
                pass  # consumed and committed elsewhere: rolled back here, go on
            finally:
                if not done:
                    consumer._rewind({m.message_id.partition for m in batch})
    finally:
        running = _PROCESSING.get(id(conn))
        if running is not None and running[0] is token:
            del _PROCESSING[id(conn)]
