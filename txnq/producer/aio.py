"""The asyncio face of the producer: ``txnq.aio.Producer``
(``await client.producer()``). A task writes the pending batches; the
decisions (routing, batching, the append and its retries) are in
:mod:`txnq.producer.base`."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from txnq import errors
from txnq.database.plans import AsyncIO, arun
from txnq.database.routes import AsyncRoutes, owners_plan, topic_owner
from txnq.durations import Duration
from txnq.failpoints import raise_if_armed
from txnq.messages import MessageId
from txnq.options import PRODUCER_OPTIONS, checked_options
from txnq.producer.base import ProducerBase
from txnq.producer.batch import EntryBatch, joined_already, message_columns, plain_payload
from txnq.producer.decided import (
    Carried,
    Taken,
    carried_commit_plan,
    fail_carried,
    settle_carried,
    take_for_commit,
)
from txnq.transaction.aio import Transaction, checked_transaction
from txnq.transaction.base import TransactionBase
from txnq.transaction.pending import PendingSend, SendCallback
from txnq.transaction.protocol import AsyncTransaction, OutgoingMessage

if TYPE_CHECKING:
    from txnq.client.aio import Client
    from txnq.transaction.attached_aio import AttachedTransaction


class Producer(ProducerBase):
    """Sends messages to one topic; ``await client.producer(topic, name=...)``.
    The sync Producer's options and behaviour (batching, idempotence,
    transactional ids, backlog quotas), with ``await``."""

    _client: Client
    _conn: psycopg.AsyncConnection[Any] | None
    _io: AsyncIO
    _owners: dict[int, tuple[int, str]]
    _routes: AsyncRoutes
    _io_lock: asyncio.Lock
    _wake: asyncio.Event
    _room: asyncio.Event
    _flusher: asyncio.Task[None]
    _committing: set[asyncio.Task[None]]

    @classmethod
    async def _open(
        cls, client: Client, topic: str, name: str | None, options: dict[str, Any]
    ) -> Producer:
        client._check_open()
        given = checked_options(PRODUCER_OPTIONS, options, "producer")  # before the lookup, as sync
        self = cls()
        self._client = client
        info = await client.admin.get_topic(topic)
        transactional_id = self._configure(client.settings, info, name, **given)
        self._conn = None
        # Through a cluster's proxy, the appends' direct connections to the shards.
        self._owners = {}
        self._routes = AsyncRoutes(
            topic_owner(self._topic.topic_id, lambda: self._owners), f"txnq-producer-{self.name}"
        )
        self._io = AsyncIO(self._connection, self._reconnect, routed=self._routes.connection)
        self._io_lock = asyncio.Lock()  # one append at a time, in order
        # commit_async()'s commits that carry batches, while they run.
        self._committing = set()
        self._wake = asyncio.Event()  # a batch opened or filled: the flusher looks
        self._room = asyncio.Event()  # the pending queue shrank
        if transactional_id is not None:
            epoch = await client._init_transactional_id(transactional_id)
            self._transactional = (transactional_id, epoch)
        await arun(self._register_plan(), self._io)
        self._owners = await arun(
            owners_plan(client, self._topic.topic_id, self._topic.partitions), self._io
        )
        # Read once per client: on one database, not a cluster's proxy, a
        # commit may carry its batches (take_for_commit).
        await arun(client._cluster_proxy_plan(), self._io)
        self._flusher = asyncio.get_running_loop().create_task(self._flush_loop())
        client._children.append(self)
        return self

    async def send(
        self,
        value: object,
        *,
        key: str | bytes | None = None,
        properties: dict[str, str] | None = None,
        event_time: datetime | float | None = None,
        partition: int | None = None,
        txn: Transaction | AttachedTransaction | None = None,
        deliver_after: Duration | None = None,
        deliver_at: datetime | None = None,
    ) -> MessageId:
        """Send one message and wait until it is written; its MessageId (see
        ``txnq.Producer.send``)."""
        joined = self._joined(txn)
        message = self._outgoing(
            value, key, properties, event_time, partition, None, deliver_after, deliver_at
        )
        if joined is not None:
            return await joined._send(self, message)
        return await self._write_now(message, None)

    async def send_async(
        self,
        value: object,
        *,
        key: str | bytes | None = None,
        properties: dict[str, str] | None = None,
        event_time: datetime | float | None = None,
        partition: int | None = None,
        callback: SendCallback | None = None,
        txn: Transaction | AttachedTransaction | None = None,
        deliver_after: Duration | None = None,
        deliver_at: datetime | None = None,
    ) -> PendingSend:
        """Queue one message (waiting for room in the pending queue); ``await``
        the returned PendingSend for its MessageId. Written within
        ``batching_max_delay`` or when its batch is full; with ``txn``,
        ``txn.commit()`` flushes it first. A delayed message is written
        before this returns."""
        if plain_payload(
            value,
            self._topic.max_message_bytes,
            key,
            properties,
            event_time,
            callback,
            deliver_after,
            deliver_at,
        ) and (txn is None or joined_already(txn, Transaction, self)):
            await self._refresh(partition)
            return await self._enqueue(OutgoingMessage(value, None, None, None, partition), txn)
        joined = self._joined(txn)
        message = self._outgoing(
            value, key, properties, event_time, partition, callback, deliver_after, deliver_at
        )
        if joined is not None:
            return await joined._send_async(self, message)
        return await self._write_queued(message, None)

    async def flush(self) -> None:
        """Write every queued message and wait until all sent so far are
        written; raises the first error of a batch written since the last
        flush (as ``txnq.Producer.flush``)."""
        self._check_usable()
        for partition in range(self._partitions):
            await self._flush_partition(partition)
        futures = [asyncio.wrap_future(f) for f in self._last_futures.values()]
        for future in futures:
            # These copies only wait: their errors reach the caller below and
            # through each PendingSend. Unread, asyncio would log each one as
            # "Future exception was never retrieved" when it is collected.
            future.add_done_callback(_read_outcome)
        if futures:
            await asyncio.wait(futures, timeout=self._result_timeout)
        self._check_usable()
        self._raise_unreported()

    async def close(self) -> None:
        """Flush and release the connection. Safe to call twice."""
        if self._closed:
            return
        try:
            if self._failure is None:
                await self.flush()
        finally:
            self._closed = True
            self._wake.set()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._flusher, 5)
            if self._committing:  # commit_async()'s commits in flight end first
                await asyncio.gather(*self._committing, return_exceptions=True)
            async with self._io_lock:
                if self._conn is not None:
                    await self._conn.close()
                await self._routes.close()
            self._client._forget(self)

    async def __aenter__(self) -> Producer:
        self._check_usable()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- what a transaction calls back (txnq.transaction.protocol) ----------

    def _joined(self, txn: object) -> AsyncTransaction | None:
        """The transaction a send names, checked (an asyncio one of this database)."""
        if txn is None:
            return None
        joined = checked_transaction(txn, self._client)
        self._check_usable()
        return joined

    async def _write_now(self, message: OutgoingMessage, txn: TransactionBase | None) -> MessageId:
        """Write one message and wait (``send``), in ``txn`` if given."""
        key_bytes, partition = message.key, message.partition
        await self._refresh(partition)
        async with self._io_lock:
            self._check_usable()
            target = self._route(key_bytes, partition)
            direct = target not in self._batches and not self._sealed.get(target)
            if direct or message.deliver_at is not None:
                self._advance_round_robin(key_bytes, partition)
                if not direct:
                    await self._flush_locked(target)  # what is queued goes first
                offset = await arun(
                    self._append_plan(target, *message_columns(message), txn, message.deliver_at),
                    self._io,
                )
                return MessageId(self.topic, target, offset, 0)
        pending = await self._enqueue(message, txn)
        await self._flush_partition(pending._partition)
        return await asyncio.wait_for(pending, self._result_timeout)

    async def _write_queued(
        self, message: OutgoingMessage, txn: TransactionBase | None
    ) -> PendingSend:
        """Queue one message (``send_async``), in ``txn`` if given; a delayed one is written now."""
        if message.deliver_at is None:
            await self._refresh(message.partition)
            return await self._enqueue(message, txn)
        try:
            message_id = await self._write_now(message, txn)
        except errors.TxnqError as exc:
            self._delayed_failed(message, exc)
            raise
        return self._delayed_written(message, message_id)

    async def _route_staged(self, message: OutgoingMessage) -> int:
        """The partition of a message an application transaction stages."""
        self._check_usable()
        await self._refresh(message.partition)
        target = self._route(message.key, message.partition)
        self._advance_round_robin(message.key, message.partition)
        return target

    # -- internals ----------------------------------------------------------

    async def _refresh(self, partition: int | None) -> None:
        if self._needs_refresh(partition):
            async with self._client._io() as io:
                await arun(self._refresh_partitions_plan(), io)

    async def _enqueue(self, message: OutgoingMessage, txn: TransactionBase | None) -> PendingSend:
        deadline = time.monotonic() + self._send_timeout
        self._check_usable()
        target = self._route(message.key, message.partition)
        while self._pending >= self._max_pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._queue_full_error()
            self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), remaining)
            self._check_usable()
        pending, wake = self._add(target, message.payload, message, txn)
        if wake:
            self._wake.set()
        return pending

    async def _flush_loop(self) -> None:
        try:
            while not self._closed:
                ready, wait = self._ready_partitions()
                if not ready:
                    self._wake.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), wait)
                    continue
                raise_if_armed("producer_flush")
                for partition in ready:
                    await self._flush_partition(partition)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            # The task ends here: fail what is queued, so nothing waits for it.
            self._stopped(exc, [])
            self._room.set()

    async def _flush_partition(self, partition: int) -> None:
        async with self._io_lock:
            await self._flush_locked(partition)

    async def _flush_locked(self, partition: int) -> None:
        """Write the partition's queued batches, in order (the I/O lock is held)."""
        await self._write_taken(partition, self._take(partition))

    async def _commit_with(self, txn: TransactionBase) -> bool:
        """``await txn.commit()``: as the sync producer's ``_commit_with``."""
        async with self._io_lock:
            taken = take_for_commit(self, txn)
            if taken is None:
                return False
            carried = await self._carry(txn, taken)
        if carried is None:
            return False
        self._carried(txn, taken, carried)
        return True

    async def _commit_with_async(self, txn: Transaction) -> asyncio.Future[None] | None:
        """``await txn.commit_async()``: as the sync producer's
        ``_commit_with_async``, the commit running in a task of its own that
        releases the I/O lock taken here once the batches are written. The
        future returned is not the task: cancelling it does not stop the
        commit, which holds the producer."""
        await self._io_lock.acquire()
        try:
            taken = take_for_commit(self, txn)
        except BaseException:
            self._io_lock.release()
            raise
        if taken is None:
            self._io_lock.release()
            return None
        outcome: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        held = [True]  # the I/O lock, until _carry_taken releases it
        task = asyncio.create_task(
            self._commit_taken(txn, taken, outcome, held), name=f"txnq-commit-{txn.txn_id}"
        )
        self._committing.add(task)  # a reference, until it is done

        def done(task: asyncio.Task[None]) -> None:
            self._committing.discard(task)
            if held[0]:  # cancelled before it ran (the event loop closing)
                held[0] = False
                fail_carried(self, taken, asyncio.CancelledError())
                self._io_lock.release()
                self._room.set()

        task.add_done_callback(done)
        return outcome

    async def _commit_taken(
        self, txn: Transaction, taken: Taken, outcome: asyncio.Future[None], held: list[bool]
    ) -> None:
        """The task's half of ``commit_async()``: ``outcome`` is the future
        the caller holds."""
        try:
            await txn._commit_in_background(lambda: self._carry_taken(txn, taken, held))
        except asyncio.CancelledError:
            outcome.cancel()
            raise
        except BaseException as exc:
            if not outcome.done():
                outcome.set_exception(exc)
        else:
            if not outcome.done():
                outcome.set_result(None)

    async def _carry_taken(self, txn: Transaction, taken: Taken, held: list[bool]) -> bool:
        """As the sync producer's ``_carry_taken``."""
        try:
            carried = await self._carry(txn, taken)
        except errors.TxnqError:
            carried = None  # as commit(): the usual commit after reports it
        finally:
            held[0] = False
            self._io_lock.release()
        if carried is None:
            return False
        self._carried(txn, taken, carried)
        return True

    async def _carry(self, txn: TransactionBase, taken: Taken) -> Carried | None:
        """As the sync producer's ``_carry`` (the I/O lock is held)."""
        try:
            carried = await arun(carried_commit_plan(self, txn, taken), self._io)
        except BaseException as exc:
            fail_carried(self, taken, exc)
            self._room.set()
            raise
        if carried is None:
            for partition, batch in taken:
                await self._write_taken(partition, [batch])
            return None
        settle_carried(self, taken, carried.offsets)
        self._room.set()
        return carried

    def _carried(self, txn: TransactionBase, taken: Taken, carried: Carried) -> None:
        """After a commit that carried ``taken`` (the I/O lock released)."""
        for partition, batch in taken:
            self._run_callbacks(partition, batch)
        txn._committed_with_batches(carried.state, carried.reason)

    async def _write_taken(self, partition: int, batches: list[EntryBatch]) -> None:
        """Write batches taken from the partition's queue, in order (the I/O lock is held)."""
        for index, batch in enumerate(batches):
            try:
                await arun(self._write_plan(partition, batch), self._io)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                raise self._write_failed(exc, batches, index) from exc
            finally:
                self._pending -= len(batch.payloads)
                self._room.set()
            self._run_callbacks(partition, batch)

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = await self._client._dedicated_connection(f"txnq-producer-{self.name}")
        return self._conn

    async def _reconnect(self) -> None:
        await self._routes.reset()
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


def _read_outcome(future: asyncio.Future[Any]) -> None:
    """Mark a settled future's error as read (see ``Producer.flush``)."""
    if not future.cancelled():
        future.exception()
