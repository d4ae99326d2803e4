"""The asyncio face of client transactions: ``txnq.aio.Transaction``
(``await client.new_transaction()``). It runs the plans of
:class:`~txnq.transaction.base.TransactionBase` on the asyncio client's
connections under an ``asyncio.Lock``; the decisions are all in the base."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from txnq import errors
from txnq.database.plans import Plan, arun
from txnq.messages import MessageId
from txnq.transaction.attached_aio import AttachedTransaction
from txnq.transaction.base import FACE_HINTS, TransactionBase, TxnId, refuse_transaction
from txnq.transaction.pending import PendingSend
from txnq.transaction.protocol import AsyncTransaction, OutgoingMessage

if TYPE_CHECKING:
    from txnq.client.aio import Client
    from txnq.consumer.aio import Consumer
    from txnq.producer.aio import Producer

T = TypeVar("T")


def checked_transaction(txn: object, client: Any) -> AsyncTransaction:
    """``txn`` as given to an asyncio producer's send or consumer's ack: an
    asyncio client or application transaction (of ``client``'s database)."""
    if not isinstance(txn, Transaction | AttachedTransaction):
        refuse_transaction(txn, FACE_HINTS["asyncio"])
    txn._check_client(client)
    return txn


class Transaction(TransactionBase):
    """An open transaction of the asyncio client: ``await txn.commit()``,
    ``await txn.abort()``, or ``async with client.new_transaction() as txn``
    (see ``txnq.Transaction``)."""

    _client: Client
    _face = "asyncio"

    def __init__(self, client: Client, txn_id: TxnId, timeout: float, timeout_at: datetime) -> None:
        super().__init__(client, txn_id, timeout, timeout_at)
        self._lock = asyncio.Lock()

    async def commit(self, *, wait: bool = True) -> None:
        """Commit: flush this transaction's queued sends, write the decision and
        (``wait=True``) run the marker phase (see ``txnq.Transaction.commit``)."""
        async with self._lock:
            self._check_commit(wait)
            await self._commit_checked(wait, await self._flush_but_carrier(wait))

    async def _commit_checked(self, wait: bool, carrier: Producer | None) -> None:
        """As the sync face's ``_commit_checked``."""
        if carrier is not None:
            with contextlib.suppress(errors.TxnqError):
                # Still nothing written (the others may have flushed some).
                if self._carries_batches(wait) and await carrier._commit_with(self):
                    return
                await carrier.flush()
        await self._run(self._commit_plan(wait=wait))

    async def commit_async(self) -> asyncio.Future[None]:
        """Commit without waiting for it (see ``txnq.Transaction.commit_async``):
        ``future = await txn.commit_async()`` takes the transaction's queued
        messages and returns once the commit runs in a task of its own (or,
        when it cannot carry them, once it committed); ``await future`` is
        what ``await txn.commit()`` would have returned or raised."""
        async with self._lock:
            self._check_commit(True)
            carrier = await self._flush_but_carrier(True)
            if carrier is not None and self._carries_batches(True):
                self._state = "COMMITTING"
                future: asyncio.Future[None] | None = None
                try:
                    future = await carrier._commit_with_async(self)
                finally:
                    if future is None:
                        self._state = "OPEN"
                if future is not None:
                    return future
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            try:
                await self._commit_checked(True, carrier)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                done.set_exception(exc)
            else:
                done.set_result(None)
            return done

    async def _flush_but_carrier(self, wait: bool) -> Producer | None:
        """As the sync face's ``_flush_but_carrier``."""
        producers = list(self._producers)
        carrier = producers[-1] if producers and self._carries_batches(wait) else None
        for producer in producers:
            if producer is not carrier:
                with contextlib.suppress(errors.TxnqError):
                    await producer.flush()
        return carrier

    async def _commit_in_background(self, carry: Callable[[], Awaitable[bool]]) -> None:
        """As the sync face's ``_commit_in_background``, in a task."""
        try:
            if not await carry():
                async with self._lock:
                    await self._run(self._commit_plan(wait=True))
        except BaseException:
            if self._state == "COMMITTING":
                self._state = "OPEN"
            raise

    async def abort(self) -> None:
        """Abort: its messages are never delivered, its acks are released."""
        async with self._lock:
            if self._aborted_already():
                return
            await self._run(self._end_plan(commit=False, wait=True))

    async def __aenter__(self) -> Transaction:
        self._check_open()
        return self

    async def __aexit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._state != "OPEN":
            return
        if exc_type is None:
            await self.commit()
        else:
            with contextlib.suppress(errors.TxnqError, psycopg.Error):
                await self.abort()

    # -- the transaction protocol (txnq.transaction.protocol) ----------------

    async def _send(self, producer: Producer, message: OutgoingMessage) -> MessageId:
        await self._join_producer(producer)
        return await producer._write_now(message, self)

    async def _send_async(self, producer: Producer, message: OutgoingMessage) -> PendingSend:
        await self._join_producer(producer)
        return await producer._write_queued(message, self)

    async def _acknowledge(self, consumer: Consumer, items: list[object]) -> None:
        await consumer._run_ack(consumer._acknowledge_plan(items, self))

    async def _acknowledge_cumulative(
        self, consumer: Consumer, message_id: MessageId, size: int | None
    ) -> None:
        await consumer._run_ack(consumer._cumulative_plan(message_id, size, self))

    # -- used by producers --------------------------------------------------

    async def _join_producer(self, producer: Producer) -> None:
        async with self._lock:
            if not self._joined_already(producer):
                await self._run(self._join_producer_plan(producer))

    async def _run(self, plan: Plan[T]) -> T:
        async with self._client._io() as io:
            return await arun(plan, io)
