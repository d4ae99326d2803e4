"""The asyncio client: ``txnq.aio.Client``, the same API as ``txnq.Client``
with ``await`` (docs/asyncio.md).

    async with txnq.aio.Client(dsn) as client:
        producer = await client.producer("orders")
        await producer.send(b"payload", key="k1")
        async with client.subscribe("orders", "billing", initial_position="earliest") as consumer:
            async for msg in consumer:
                async with client.new_transaction() as txn:
                    await producer.send(b"out", txn=txn)
                    await consumer.acknowledge(msg, txn=txn)

One implementation, two faces: every exchange with PostgreSQL (appends,
fetches, claims, heartbeats, acks, transaction ends, their retries and error
mapping) is a plan of ``txnq.database.plans`` shared with the sync client; this module
only drives the plans on psycopg ``AsyncConnection``s and replaces threads
with tasks and conditions with events. Sync and asyncio clients interoperate
on the same database: same topics, subscriptions, transactional ids (a new
session in either face fences the other) and transactions' effects.

``client.admin`` runs the sync Admin's calls in a worker thread (topic and
subscription management is not on the data path); starting an embedded
PostgreSQL (no DSN) happens in a worker thread too.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import deque
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterable,
)
from contextlib import asynccontextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

import psycopg
from psycopg import sql
from psycopg.pq import TransactionStatus

from txnq import errors
from txnq.app_transaction import (
    _ACTIVE,
    _ACTIVE_LOCK,
    _ATTACHED_SHARED_HINT,
    AttachedBase,
    StagedSend,
    check_between_batches,
)
from txnq.client import Client as SyncClient
from txnq.client import ClientBase
from txnq.consumer import Backoff, ConsumerBase, DeadLetterPolicy, _ensure_topic
from txnq.database.connections import libpq_dsn
from txnq.database.plans import AsyncIO, Plan, arun
from txnq.durations import Duration, parse_duration
from txnq.failpoints import raise_if_armed
from txnq.messages import Message, MessageId
from txnq.options import CONSUMER_OPTIONS, PRODUCER_OPTIONS, checked_options
from txnq.producer import (
    PendingSend,
    ProducerBase,
    SendCallback,
    _Batch,
    delivery_time,
)
from txnq.settings import Settings
from txnq.transaction import TransactionBase, TxnId

if TYPE_CHECKING:
    from txnq.admin import Admin

__all__ = [
    "AttachedTransaction",
    "Backoff",
    "Client",
    "Consumer",
    "DeadLetterPolicy",
    "Message",
    "MessageId",
    "PendingSend",
    "Producer",
    "Transaction",
    "attach",
]

T = TypeVar("T")
#: Idle pooled connections a client keeps for transactions and control calls.
POOL_IDLE = 4


async def _connect(dsn: str, application_name: str) -> psycopg.AsyncConnection[Any]:
    """A dedicated autocommit asyncio connection (raises OperationalError)."""
    return await psycopg.AsyncConnection.connect(
        libpq_dsn(dsn), autocommit=True, application_name=application_name, connect_timeout=10
    )


def _unavailable(exc: BaseException) -> errors.ServerUnavailableError:
    return errors.ServerUnavailableError(
        f"PostgreSQL is unavailable ({str(exc).strip()}); the call changed nothing: retry it "
        "when the server is back (check TXNQ_DSN / --dsn and that the server is running)"
    )


class _Opening(Generic[T]):
    """What ``client.producer()``, ``client.subscribe()`` and
    ``client.new_transaction()`` return: ``await`` it for the object, or use
    it in ``async with`` (closed, or committed/aborted, at the end)."""

    def __init__(self, factory: Callable[[], Awaitable[T]]) -> None:
        self._factory = factory
        self._opened: Any = None

    def __await__(self) -> Generator[Any, None, T]:
        return self._factory().__await__()

    async def __aenter__(self) -> T:
        self._opened = await self._factory()
        return await self._opened.__aenter__()  # type: ignore[no-any-return]

    async def __aexit__(self, *exc: Any) -> None:
        await self._opened.__aexit__(*exc)


class _Admin:
    """``client.admin``: the sync Admin's methods, awaited (run in a worker thread)."""

    def __init__(self, admin: Admin) -> None:
        self._admin = admin

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self._admin, name)
        if not callable(method):
            raise AttributeError(name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(method, *args, **kwargs)

        call.__doc__ = method.__doc__
        return call


class Client(ClientBase):
    """The asyncio client: ``async with txnq.aio.Client(dsn) as client`` or
    ``client = await txnq.aio.Client.connect(dsn)``. ``dsn``, else
    ``TXNQ_DSN``, else an embedded PostgreSQL under ``./.txnq`` (as
    ``txnq.Client``); the database must be migrated."""

    def __init__(
        self, dsn: str | None = None, *, settings: Settings | None = None, **overrides: Any
    ) -> None:
        self._check_dsn(dsn, settings)
        self._args = (dsn, settings, overrides)
        self._sync: SyncClient | None = None
        self._idle: deque[psycopg.AsyncConnection[Any]] = deque()
        self._children: list[Producer | Consumer] = []
        self._closed = False
        self._epoch_lock = asyncio.Lock()

    @classmethod
    async def connect(
        cls, dsn: str | None = None, *, settings: Settings | None = None, **overrides: Any
    ) -> Client:
        """A connected client (checks the schema; starts an embedded server without a DSN)."""
        client = cls(dsn, settings=settings, **overrides)
        await client.open()
        return client

    async def open(self) -> None:
        """Connect: check the schema, start the embedded server if needed. Idempotent."""
        if self._closed:
            raise errors.ClosedError("the client is closed: create a new txnq.aio.Client")
        if self._sync is not None:
            return
        dsn, settings, overrides = self._args
        self._sync = await asyncio.to_thread(SyncClient, dsn, settings=settings, **overrides)
        self.settings = self._sync.settings
        self.dsn = self._sync.dsn
        self.admin = _Admin(self._sync.admin)
        self._init_transactions()

    @property
    def sync(self) -> SyncClient:
        """The sync client this one shares settings and schema checks with."""
        if self._sync is None:
            raise errors.ClosedError(
                "the asyncio client is not open: `await client.open()` or use `async with`"
            )
        return self._sync

    async def __aenter__(self) -> Client:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Close every producer (flushing it) and consumer of this client, then its connections."""
        if self._closed:
            return
        for child in reversed(list(self._children)):
            await child.close()
        self._closed = True
        while self._idle:
            await self._idle.popleft().close()
        if self._sync is not None:
            await asyncio.to_thread(self._sync.close)

    # -- factories ----------------------------------------------------------

    def producer(self, topic: str, name: str | None = None, **options: Any) -> _Opening[Producer]:
        """An idempotent producer for ``topic`` (options as ``txnq.Client.producer``):
        ``producer = await client.producer(...)`` or ``async with client.producer(...) as p``."""
        return _Opening(lambda: Producer._open(self, topic, name, options))

    def subscribe(
        self,
        topic: str,
        subscription: str,
        subscription_type: str = "exclusive",
        **options: Any,
    ) -> _Opening[Consumer]:
        """A consumer (options as ``txnq.Client.subscribe``; ``retry_enable`` is
        for the sync client only): ``await`` it or use it in ``async with``."""
        return _Opening(
            lambda: Consumer._open(self, topic, subscription, subscription_type, options)
        )

    @overload
    def new_transaction(self, timeout: Duration | None = None) -> _Opening[Transaction]: ...

    @overload
    def new_transaction(
        self, timeout: Duration | None = None, *, connection: object
    ) -> _Opening[AttachedTransaction]: ...

    def new_transaction(
        self, timeout: Duration | None = None, *, connection: object | None = None
    ) -> _Opening[Transaction] | _Opening[AttachedTransaction]:
        """Open a transaction: ``txn = await client.new_transaction()`` or
        ``async with client.new_transaction() as txn`` (commits at the end,
        aborts on an exception). With ``connection`` (a psycopg
        ``AsyncConnection`` in a transaction), join the application's
        transaction instead (:class:`AttachedTransaction`)."""
        if connection is not None:
            self._check_open()
            self._no_attach_timeout(timeout)

            async def joined() -> AttachedTransaction:
                return attach(connection, client=self)

            return _Opening(joined)
        return _Opening(lambda: self._new_transaction(timeout))

    async def _new_transaction(self, timeout: Duration | None) -> Transaction:
        self._check_open()
        async with self._io() as io:
            txn_id, seconds, timeout_at = await arun(self._open_txn_plan(timeout), io)
        return Transaction(self, txn_id, seconds, timeout_at)

    async def _transactional_epoch(self, transactional_id: str) -> int:
        async with self._epoch_lock, self._io() as io:
            return await arun(self._transactional_epoch_plan(transactional_id), io)

    # -- connections ----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise errors.ClosedError("the client is closed: create a new txnq.aio.Client")
        if self._sync is None:
            raise errors.ClosedError(
                "the asyncio client is not open: `await client.open()` or use `async with`"
            )

    async def _connection(self, application_name: str = "txnq") -> psycopg.AsyncConnection[Any]:
        self._check_open()
        try:
            return await _connect(self.dsn, application_name)
        except psycopg.OperationalError as exc:
            raise _unavailable(exc) from exc

    @asynccontextmanager
    async def _io(self) -> AsyncIterator[AsyncIO]:
        """A plan's view of the pool: an idle connection (or a new one) taken on
        first use, replaced on Reconnect, given back at the end."""
        held: list[psycopg.AsyncConnection[Any]] = []

        async def connection() -> psycopg.AsyncConnection[Any]:
            if not held:
                while self._idle:
                    conn = self._idle.popleft()
                    if not conn.closed:
                        held.append(conn)
                        break
                else:
                    held.append(await self._connection())
            return held[0]

        async def reconnect() -> None:
            if held:
                with contextlib.suppress(Exception):
                    await held.pop().close()

        try:
            yield AsyncIO(connection, reconnect)
        finally:
            if held:
                conn = held[0]
                usable = not conn.closed and conn.info.transaction_status == 0  # IDLE
                if usable and len(self._idle) < POOL_IDLE and not self._closed:
                    self._idle.append(conn)
                else:
                    with contextlib.suppress(Exception):
                        await conn.close()

    def _forget(self, child: Producer | Consumer) -> None:
        if child in self._children:
            self._children.remove(child)


class Producer(ProducerBase):
    """Sends messages to one topic; ``await client.producer(topic, name=...)``.
    The sync Producer's options and behaviour (batching, idempotence,
    transactional ids, backlog quotas), with ``await``."""

    _client: Client
    _conn: psycopg.AsyncConnection[Any] | None
    _io: AsyncIO
    _io_lock: asyncio.Lock
    _wake: asyncio.Event
    _room: asyncio.Event
    _flusher: asyncio.Task[None]

    @classmethod
    async def _open(
        cls, client: Client, topic: str, name: str | None, options: dict[str, Any]
    ) -> Producer:
        client._check_open()
        self = cls()
        self._client = client
        info = await client.admin.get_topic(topic)
        transactional_id = self._configure(
            client.settings, info, name, **checked_options(PRODUCER_OPTIONS, options, "producer")
        )
        self._conn = None
        self._io = AsyncIO(self._connection, self._reconnect)
        self._io_lock = asyncio.Lock()  # one append at a time, in order
        self._wake = asyncio.Event()  # a batch opened or filled: the flusher looks
        self._room = asyncio.Event()  # the pending queue shrank
        if transactional_id is not None:
            epoch = await client._transactional_epoch(transactional_id)
            self._transactional = (transactional_id, epoch)
        await arun(self._register_plan(), self._io)
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
        if isinstance(txn, AttachedTransaction):
            raise errors.InvalidArgumentError(
                "send() returns the message's offset, which a message of an application "
                "transaction gets only when it commits: use send_async(..., txn=txn) (await "
                "the result after txn.commit()) or txn.send(topic, value)"
            )
        payload, key_bytes, props, when = self._prepare(value, key, properties, event_time)
        deliver = delivery_time(deliver_after, deliver_at)
        await self._join(txn)
        await self._refresh(partition)
        async with self._io_lock:
            self._check_usable()
            target = self._route(key_bytes, partition)
            direct = target not in self._batches and not self._sealed.get(target)
            if direct or deliver is not None:
                self._advance_round_robin(key_bytes, partition)
                if not direct:
                    await self._flush_locked(target)  # what is queued goes first
                offset = await arun(
                    self._append_plan(
                        target, [payload], [key_bytes], [props], [when], txn, deliver
                    ),
                    self._io,
                )
                return MessageId(self.topic, target, offset, 0)
        pending = await self._enqueue(payload, key_bytes, props, when, partition, None, txn)
        await self._flush_partition(pending._partition)
        return await asyncio.wait_for(pending, self._result_timeout)

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
        if callback is not None and not callable(callback):
            raise errors.InvalidArgumentError("callback must be callable(exception, message_id)")
        if deliver_after is not None or deliver_at is not None:
            if isinstance(txn, AttachedTransaction):
                raise errors.InvalidArgumentError(
                    "deliver_after/deliver_at do not apply to an application transaction "
                    "(txnq.aio.attach): its messages are appended when the caller commits; "
                    "send a delayed message outside it or in a txnq transaction"
                )
            batch = _Batch(txn)
            try:
                message_id = await self.send(
                    value,
                    key=key,
                    properties=properties,
                    event_time=event_time,
                    partition=partition,
                    txn=txn,
                    deliver_after=deliver_after,
                    deliver_at=deliver_at,
                )
            except errors.TxnqError as exc:
                if callback is not None:
                    callback(exc, None)
                raise
            batch.future.set_result(message_id.offset)
            if callback is not None:
                callback(None, message_id)
            return PendingSend(self.topic, message_id.partition, batch, 0)
        payload, key_bytes, props, when = self._prepare(value, key, properties, event_time)
        if isinstance(txn, AttachedTransaction):
            # Staged on the caller's connection, appended when the caller commits.
            self._check_usable()
            await self._refresh(partition)
            target = self._route(key_bytes, partition)
            self._advance_round_robin(key_bytes, partition)
            return await txn._send_async(
                self, target, payload, key_bytes, props, when, callback, self._max_messages
            )
        await self._join(txn)
        await self._refresh(partition)
        return await self._enqueue(payload, key_bytes, props, when, partition, callback, txn)

    async def flush(self) -> None:
        """Write every queued message and wait until all sent so far are
        written; raises the first error of a batch written since the last
        flush (as ``txnq.Producer.flush``)."""
        self._check_usable()
        for partition in range(self._partitions):
            await self._flush_partition(partition)
        futures = [asyncio.wrap_future(f) for f in self._last_futures.values()]
        if futures:
            await asyncio.wait(futures, timeout=self._result_timeout)
        self._check_usable()
        unreported, self._unreported = self._unreported, None
        if unreported is not None:
            raise unreported

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
            async with self._io_lock:
                if self._conn is not None:
                    await self._conn.close()
            self._client._forget(self)

    async def __aenter__(self) -> Producer:
        self._check_usable()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- internals ----------------------------------------------------------

    async def _join(self, txn: Transaction | None) -> None:
        if txn is None:
            return
        Transaction.checked(txn, self._client)
        self._check_usable()
        await txn._join_producer(self)

    async def _refresh(self, partition: int | None) -> None:
        if self._needs_refresh(partition):
            async with self._client._io() as io:
                await arun(self._refresh_partitions_plan(), io)

    async def _enqueue(
        self,
        payload: bytes,
        key_bytes: bytes | None,
        props: str | None,
        when: datetime | None,
        partition: int | None,
        callback: SendCallback | None,
        txn: Transaction | None,
    ) -> PendingSend:
        deadline = time.monotonic() + self._send_timeout
        self._check_usable()
        target = self._route(key_bytes, partition)
        while self._pending >= self._max_pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise errors.TimeoutError(
                    f"the producer's pending queue is full ({self._max_pending} messages) "
                    "and did not drain in time: PostgreSQL may be unreachable"
                )
            self._room.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._room.wait(), remaining)
            self._check_usable()
        pending, wake = self._add(target, payload, key_bytes, props, when, callback, txn)
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
        batches = self._take(partition)
        for index, batch in enumerate(batches):
            try:
                await arun(self._write_plan(partition, batch), self._io)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:
                failure = self._stopped(exc, batches[index:])
                self._pending -= sum(len(b.payloads) for b in batches[index + 1 :])
                raise failure from exc
            finally:
                self._pending -= len(batch.payloads)
                self._room.set()
            self._run_callbacks(partition, batch)

    async def _connection(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = await _connect(self._client.dsn, f"txnq-producer-{self.name}")
        return self._conn

    async def _reconnect(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()


class _Signal:
    """The asyncio face's ``_cond``: the state needs no lock (one event loop),
    ``notify_all`` wakes whoever waits for the queue to change."""

    def __init__(self) -> None:
        self.changed = asyncio.Event()

    def __enter__(self) -> _Signal:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def notify_all(self) -> None:
        self.changed.set()

    async def wait(self, timeout: float) -> None:
        self.changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.changed.wait(), timeout)


class Consumer(ConsumerBase):
    """Receives messages from one subscription; ``await client.subscribe(...)``.
    The sync Consumer's subscription types and options (except
    ``retry_enable`` / ``reconsume_later``), with ``await`` and ``async for``."""

    _client: Client
    _cond: _Signal
    _ack_lock: asyncio.Lock
    _ack_conn: psycopg.AsyncConnection[Any] | None
    _ack_io: AsyncIO
    _fetch_conn: psycopg.AsyncConnection[Any]
    _fetch_io: AsyncIO
    _task: asyncio.Task[None]
    _background: set[asyncio.Task[Any]]

    @classmethod
    async def _open(
        cls,
        client: Client,
        topic: str,
        subscription: str,
        subscription_type: str,
        options: dict[str, Any],
    ) -> Consumer:
        client._check_open()
        given = checked_options(CONSUMER_OPTIONS, options, "subscribe")
        if given["retry_enable"]:
            raise errors.InvalidArgumentError(
                "retry_enable (reconsume_later) is in the sync client only: subscribe with "
                "txnq.Client, or nack with a negative_ack_backoff here"
            )
        self = cls()
        self._client = client
        info = await client.admin.get_topic(topic)
        self._configure(client.settings, info, subscription, subscription_type, **given)
        dlq, _ = self._letter_topics()
        if dlq is not None:
            self._dead_letter_topic_id = await asyncio.to_thread(
                _ensure_topic, client.sync.admin, dlq
            )
        self._cond = _Signal()
        self._queue = deque()
        self._background = set()
        self._ack_lock = asyncio.Lock()
        self._ack_conn = None
        self._ack_io = AsyncIO(self._ack_connection, self._ack_reconnect)
        self._fetch_conn = await client._connection(f"txnq-consumer-{self.name}")
        self._fetch_io = AsyncIO(
            self._current_fetch_conn, self._reopen_fetch_conn, self._listen, self._cond.wait
        )
        try:
            await self._run_ack(self._subscribe_plan())
            await self._listen_on(self._fetch_conn)
            await arun(self._heartbeat_plan(), self._fetch_io)
        except BaseException:
            await self._fetch_conn.close()
            if self._ack_conn is not None:
                await self._ack_conn.close()
            raise
        self._task = asyncio.get_running_loop().create_task(arun(self._run_plan(), self._fetch_io))
        self._task.add_done_callback(self._fetch_task_done)
        client._children.append(self)
        return self

    # -- receiving ----------------------------------------------------------

    async def receive(self, timeout: Duration | None = None) -> Message | None:
        """The next message, waiting up to ``timeout`` (forever when None); None on timeout."""
        wait = None if timeout is None else parse_duration(timeout, what="timeout")
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            self._check_usable()
            if self._deliverable():
                message = self._queue.popleft()
                if len(self._queue) < self._queue_size // 2:
                    self._cond.notify_all()  # room for the fetch task
                return self._handed_out(message)
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            wait = 1.0 if remaining is None else remaining
            if self._queue:  # the lease may have run out: wait for the heartbeat
                wait = min(wait, max(0.001, self._poll_interval / 4))
            await self._cond.wait(wait)

    async def batch_receive(
        self, max_messages: int = 100, timeout: Duration = "100ms"
    ) -> list[Message]:
        """Up to ``max_messages`` messages: waits up to ``timeout`` for the first."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:
            raise errors.InvalidArgumentError(
                f"max_messages must be a positive int, got {max_messages!r}"
            )
        first = await self.receive(timeout)
        if first is None:
            return []
        return self._take_messages(first, max_messages)

    def __aiter__(self) -> Consumer:
        return self

    async def __anext__(self) -> Message:
        message = await self.receive()
        assert message is not None
        return message

    # -- acknowledging ------------------------------------------------------

    async def acknowledge(
        self,
        message: Message | MessageId | Iterable[Message | MessageId],
        *,
        txn: Transaction | AttachedTransaction | None = None,
    ) -> None:
        """Acknowledge messages individually (see ``txnq.Consumer.acknowledge``);
        with an :class:`AttachedTransaction`, staged in the caller's transaction."""
        items = self._ack_items(message)
        if isinstance(txn, AttachedTransaction):
            if self._shared:
                raise errors.InvalidArgumentError(_ATTACHED_SHARED_HINT)
            per_partition = self._per_partition(items)
            self._check_usable()
            await txn._acknowledge(self, per_partition)
            return
        await self._run_ack(self._acknowledge_plan(items, txn))

    async def acknowledge_cumulative(
        self, message: Message | MessageId, *, txn: Transaction | None = None
    ) -> None:
        """Acknowledge this message and every earlier one of its partition."""
        self._check_cumulative()
        if isinstance(txn, AttachedTransaction):
            raise errors.InvalidArgumentError(
                "a cumulative ack cannot be checked for exactly-once in an application "
                "transaction: acknowledge the messages individually (acknowledge(list))"
            )
        message_id, size = self._identify(message)
        await self._run_ack(self._cumulative_plan(message_id, size, txn))

    async def negative_acknowledge(self, message: Message) -> None:
        """Have the message delivered again later (see ``txnq.Consumer.negative_acknowledge``)."""
        await self._run_ack(self._nack_plan(message))

    def process(
        self, connection: object, *, batch_size: int = 100, idle_timeout: Duration | None = None
    ) -> AsyncGenerator[Message, None]:
        """Exactly-once processing: ``async for msg in consumer.process(conn): ...``
        commits each batch's acks in one PostgreSQL transaction with what the
        loop body wrote on ``conn`` (a psycopg ``AsyncConnection``); see
        :func:`process`."""
        self._check_process()
        return process(self, connection, batch_size=batch_size, idle_timeout=idle_timeout)

    async def seek(
        self, target: MessageId | int | datetime | str, partition: int | None = None
    ) -> None:
        """Move the subscription (see ``txnq.Consumer.seek``)."""
        await self._run_ack(self._seek_plan(target, partition))
        await self._notify_self()

    async def unsubscribe(self) -> None:
        """Delete the subscription (refused while other consumers are connected), then close."""
        await self._run_ack(self._unsubscribe_plan())
        await self.close()

    async def close(self) -> None:
        """Leave the subscription: unacknowledged messages go to the next consumer."""
        if self._closed:
            return
        self._closed = True
        self._queue.clear()  # redelivered to the next consumer, never handed out here
        self._cond.notify_all()
        await self._notify_self()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), self._poll_interval + 5)
        except (TimeoutError, Exception):
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._background:  # give-backs and wake-ups still running
            await asyncio.gather(*self._background, return_exceptions=True)
        await self._run_ack(self._leave_plan())
        if self._ack_conn is not None:
            await self._ack_conn.close()
        await self._fetch_conn.close()
        self._client._forget(self)

    async def __aenter__(self) -> Consumer:
        self._check_usable()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the asyncio face's I/O ---------------------------------------------

    def _checked_txn(self, txn: object) -> TransactionBase:
        checked: TransactionBase = Transaction.checked(txn, self._client)
        return checked

    async def _run_ack(self, plan: Plan[T]) -> T:
        async with self._ack_lock:
            return await arun(plan, self._ack_io)

    async def _ack_connection(self) -> psycopg.AsyncConnection[Any]:
        if self._ack_conn is None or self._ack_conn.closed:
            self._ack_conn = await self._client._connection(f"txnq-consumer-{self.name}")
        return self._ack_conn

    async def _ack_reconnect(self) -> None:
        conn, self._ack_conn = self._ack_conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
        await self._ack_connection()

    def _give_back(self, unacked: dict[int, tuple[list[int], list[int]]]) -> None:
        """After an abort (a sync call from the transaction's end): as a task."""
        self._spawn(self._run_ack(self._give_back_plan(unacked)))

    def _wake_fetcher(self) -> None:
        """Wake the fetch task's LISTEN wait (from a transaction's end)."""
        self._spawn(self._notify_self())

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run ``work`` as a task of this consumer (kept until done: the loop
        holds only weak references to tasks)."""
        try:
            task = asyncio.get_running_loop().create_task(work)
        except RuntimeError:  # no running loop: nothing to wake
            work.close()
            return
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _notify_self(self) -> None:
        try:
            async with self._ack_lock:
                conn = await self._ack_connection()
                await conn.execute("SELECT pg_notify(%s, '')", (self._channel,))
        except (psycopg.Error, errors.TxnqError):
            pass  # the fetch task polls anyway

    def _fetch_task_done(self, task: asyncio.Task[None]) -> None:
        """The fetch task ended: if on an error the plan did not stop on itself,
        every later call raises it (never None forever)."""
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None and not self._closed:
            self._fetch_failed(exc)

    async def _current_fetch_conn(self) -> psycopg.AsyncConnection[Any]:
        return self._fetch_conn

    async def _reopen_fetch_conn(self) -> None:
        with contextlib.suppress(Exception):
            await self._fetch_conn.close()
        self._fetch_conn = await self._client._connection(f"txnq-consumer-{self.name}")
        await self._listen_on(self._fetch_conn)

    async def _listen_on(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))

    async def _listen(self, timeout: float) -> None:
        async for _ in self._fetch_conn.notifies(timeout=timeout, stop_after=1):
            pass


class Transaction(TransactionBase):
    """An open transaction of the asyncio client: ``await txn.commit()``,
    ``await txn.abort()``, or ``async with client.new_transaction() as txn``
    (see ``txnq.Transaction``)."""

    _client: Client

    def __init__(self, client: Client, txn_id: TxnId, timeout: float, timeout_at: datetime) -> None:
        super().__init__(client, txn_id, timeout, timeout_at)
        self._lock = asyncio.Lock()

    async def commit(self, *, wait: bool = True) -> None:
        """Commit: flush this transaction's queued sends, write the decision and
        (``wait=True``) run the marker phase (see ``txnq.Transaction.commit``)."""
        self._check_wait(wait)
        async with self._lock:
            if self._state in ("ABORTED", "ABORTING"):
                self._rewind_consumers()  # the system aborted it (timeout, fencing)
            self._check_open()
            for producer in list(self._producers):
                with contextlib.suppress(errors.TxnqError):
                    await producer.flush()
            await self._run(self._commit_plan(wait=wait))

    async def abort(self) -> None:
        """Abort: its messages are never delivered, its acks are released."""
        async with self._lock:
            if self._state in ("ABORTED", "ABORTING"):
                self._rewind_consumers()
                return
            self._check_open()
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

    async def _join_producer(self, producer: Producer) -> None:
        async with self._lock:
            await self._run(self._join_producer_plan(producer))

    async def _run(self, plan: Plan[T]) -> T:
        async with self._client._io() as io:
            return await arun(plan, io)


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

    async def _send_async(
        self,
        producer: Producer,
        partition: int,
        payload: bytes,
        key: bytes | None,
        properties: str | None,
        event_time: datetime | None,
        callback: SendCallback | None,
        max_messages: int,
    ) -> StagedSend:
        staged, full = self._queue_send(
            producer, partition, payload, key, properties, event_time, callback, max_messages
        )
        if full is not None:
            await arun(self._stage_plan(full), self._io)
        return staged

    async def _acknowledge(
        self,
        consumer: Consumer,
        per_partition: dict[int, tuple[list[int], list[int], list[int | None]]],
    ) -> None:
        await arun(self._acknowledge_plan(consumer, per_partition), self._io)


async def _no_reconnect() -> None:
    """The caller's connection is the caller's: a lost one is theirs to replace."""


def attach(connection: object, *, client: Client | None = None) -> AttachedTransaction:
    """Join the application transaction of a psycopg ``AsyncConnection``;
    inside an ``async with txnq.aio.attach(conn)`` block or a
    ``consumer.process(conn)`` batch, returns that block's transaction."""
    with _ACTIVE_LOCK:
        active = _ACTIVE.get(id(connection))
    if (
        isinstance(active, AttachedTransaction)
        and active.connection is connection
        and active._usable()
    ):
        return active
    return AttachedTransaction(connection, client=client)


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
    """The asyncio face of ``txnq.app_transaction.process``: yield the
    consumer's messages, committing each batch's acks in one PostgreSQL
    transaction on ``connection`` with what the loop body wrote there. If the
    body raises, the batch rolls back and is delivered again: when the
    generator is closed (``async with contextlib.aclosing(...)``), or at the
    latest when the next ``process()`` on the connection starts."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise errors.InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
    idle = None if idle_timeout is None else parse_duration(idle_timeout, what="idle_timeout")
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
