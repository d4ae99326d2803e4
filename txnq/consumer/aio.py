"""The asyncio face of the consumer: ``txnq.aio.Consumer``
(``await client.subscribe()``). A task runs the session's loop on its own
``AsyncConnection``; acks, nacks and seeks run on a second one. The
retry-letter topic of ``reconsume_later`` is read by a second consumer that
delivers into this one's receive queue. Everything decided is in
:mod:`txnq.consumer.retry_letters` and below."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Coroutine, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg
from psycopg import sql

from txnq import errors
from txnq.consumer.dead_letters import ensure_topic
from txnq.consumer.retry_letters import RetryLettersBase
from txnq.consumer.shard_listeners import AsyncShardListeners
from txnq.database.plans import AsyncIO, Plan, arun
from txnq.database.routes import AsyncRoutes
from txnq.durations import Duration
from txnq.messages import Message, MessageId
from txnq.options import CONSUMER_OPTIONS, checked_options
from txnq.transaction.aio import checked_transaction
from txnq.transaction.attached_aio import process

if TYPE_CHECKING:
    from txnq.client.aio import Client
    from txnq.transaction.aio import Transaction
    from txnq.transaction.attached_aio import AttachedTransaction

T = TypeVar("T")


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


class Consumer(RetryLettersBase):
    """Receives messages from one subscription; ``await client.subscribe(...)``.
    The sync Consumer's subscription types, options and methods, with
    ``await`` and ``async for``."""

    _client: Client
    _cond: _Signal
    _ack_lock: asyncio.Lock
    _ack_conn: psycopg.AsyncConnection[Any] | None
    _ack_routes: AsyncRoutes
    _fetch_routes: AsyncRoutes
    _ack_io: AsyncIO
    _fetch_conn: psycopg.AsyncConnection[Any]
    _fetch_io: AsyncIO
    _shard_listeners: AsyncShardListeners
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
        _retry_parent: Consumer | None = None,
    ) -> Consumer:
        client._check_open()
        given = checked_options(CONSUMER_OPTIONS, options, "subscribe")
        self = cls()
        self._client = client
        info = await client.admin.get_topic(topic)
        self._configure(client.settings, info, subscription, subscription_type, **given)
        self._configure_retry(given["retry_enable"], _retry_parent, _Signal)
        dlq = self._dead_letter_topic()
        if dlq is not None:
            self._dead_letter_topic_id = await asyncio.to_thread(
                ensure_topic, client.sync.admin, dlq
            )
        if self._retry_topic is not None:
            await asyncio.to_thread(ensure_topic, client.sync.admin, self._retry_topic)
        self._background = set()
        self._ack_lock = asyncio.Lock()
        self._ack_conn = None
        # Through a cluster's proxy, the direct connections to the shards of
        # the acks and of the fetches (txnq.database.routes).
        self._ack_routes = AsyncRoutes(
            self._direct_owner(client.settings), f"txnq-consumer-{self.name}"
        )
        self._fetch_routes = AsyncRoutes(
            self._direct_owner(client.settings), f"txnq-consumer-{self.name}"
        )
        self._ack_io = AsyncIO(
            self._ack_connection, self._ack_reconnect, routed=self._ack_routes.connection
        )
        self._fetch_conn = await client._connection(f"txnq-consumer-{self.name}")
        # Through a cluster's proxy, the shards' LISTEN connections (none on one server).
        self._shard_listeners = AsyncShardListeners(self._channel, self.name, self._poll_interval)
        self._fetch_io = AsyncIO(
            self._current_fetch_conn,
            self._reopen_fetch_conn,
            self._listen,
            self._cond.wait,
            self._shard_listeners.listen_on,
            routed=self._fetch_routes.connection,
        )
        try:
            await self._run_ack(self._subscribe_plan())
            await self._run_ack(self._locate_shards_plan(client._cluster_proxy_plan(), client.dsn))
            await self._listen_on(self._fetch_conn)
            await arun(self._heartbeat_plan(), self._fetch_io)
        except BaseException:
            await self._fetch_conn.close()
            if self._ack_conn is not None:
                await self._ack_conn.close()
            await self._ack_routes.close()
            await self._fetch_routes.close()
            raise
        self._task = asyncio.get_running_loop().create_task(arun(self._run_plan(), self._fetch_io))
        self._task.add_done_callback(self._fetch_task_done)
        if self._retry_topic is not None:
            try:
                retry_consumer = await cls._open(
                    client,
                    self._retry_topic,
                    self.subscription,
                    subscription_type,
                    self._retry_consumer_options(),
                    _retry_parent=self,
                )
            except BaseException:
                await self.close()
                raise
            self._set_retry_consumer(retry_consumer)
        if _retry_parent is None:  # the parent closes its retry consumer
            client._children.append(self)
        return self

    # -- receiving ----------------------------------------------------------

    async def receive(self, timeout: Duration | None = None) -> Message | None:
        """The next message, waiting up to ``timeout`` (forever when None); None on timeout."""
        deadline = self._receive_deadline(timeout)
        while True:
            self._check_usable()
            if self._deliverable():
                return self._hand_out()
            wait = self._receive_wait(deadline)
            if wait is None:
                return None
            await self._cond.wait(wait)

    async def batch_receive(
        self, max_messages: int = 100, timeout: Duration = "100ms"
    ) -> list[Message]:
        """Up to ``max_messages`` messages: waits up to ``timeout`` for the first.
        On exclusive and failover subscriptions a batch ends before a producer
        batch (one entry) that it would split, unless that entry alone holds more
        than ``max_messages``: acknowledging up to an entry's end is cheaper."""
        self._check_max_messages(max_messages)
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
        for owner, items in self._ack_owners(self._ack_items(message)):
            if txn is None:
                await owner._run_ack(owner._acknowledge_plan(items, None))
            else:
                await checked_transaction(txn, self._client)._acknowledge(owner, items)

    async def acknowledge_cumulative(
        self,
        message: Message | MessageId,
        *,
        txn: Transaction | AttachedTransaction | None = None,
    ) -> None:
        """Acknowledge this message and every earlier one of its partition."""
        self._check_cumulative()
        message_id, size = self._identify(message)
        if txn is None:
            await self._run_ack(self._cumulative_plan(message_id, size, None))
        else:
            joined = checked_transaction(txn, self._client)
            await joined._acknowledge_cumulative(self, message_id, size)

    async def negative_acknowledge(self, message: Message) -> None:
        """Have the message delivered again later (see ``txnq.Consumer.negative_acknowledge``)."""
        owner = self._nack_owner(message)
        await owner._run_ack(owner._nack_plan(message))

    async def reconsume_later(self, message: Message, delay: Duration) -> None:
        """Acknowledge ``message`` and send a copy to the retry-letter topic, in
        one txnq transaction (see ``txnq.Consumer.reconsume_later``). Needs
        ``retry_enable=True``."""
        parent, owner, letter = self._reconsumption(message, delay)
        producer = parent._letter_producers.get(letter.topic)
        if producer is None:
            producer = await self._client.producer(letter.topic)
            parent._letter_producers[letter.topic] = producer
        async with self._client.new_transaction() as txn:
            await producer.send(message.value, txn=txn, **letter.send_options(message))
            await owner.acknowledge(message, txn=txn)

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
        if not self._start_closing():
            return
        await self._notify_self()
        try:
            await asyncio.wait_for(asyncio.shield(self._task), self._poll_interval + 5)
        except (TimeoutError, Exception):
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        if self._background:  # give-backs and wake-ups still running
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._retry_consumer is not None:
            await self._retry_consumer.close()
        for producer in self._letter_producers.values():
            await producer.close()
        await self._run_ack(self._leave_plan())
        if self._ack_conn is not None:
            await self._ack_conn.close()
        await self._ack_routes.close()
        await self._fetch_conn.close()
        await self._fetch_routes.close()
        await self._shard_listeners.close()
        self._client._forget(self)

    async def __aenter__(self) -> Consumer:
        self._check_usable()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the asyncio face's I/O ---------------------------------------------

    async def _run_ack(self, plan: Plan[T]) -> T:
        async with self._ack_lock:
            return await arun(plan, self._ack_io)

    async def _ack_connection(self) -> psycopg.AsyncConnection[Any]:
        if self._ack_conn is None or self._ack_conn.closed:
            self._ack_conn = await self._client._connection(f"txnq-consumer-{self.name}")
        return self._ack_conn

    async def _ack_reconnect(self) -> None:
        await self._ack_routes.reset()
        conn, self._ack_conn = self._ack_conn, None
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
        await self._ack_connection()

    def _give_back(self, refused: dict[int, tuple[list[int], list[int]]]) -> None:
        """After an abort (a sync call from the transaction's end): as a task."""
        self._spawn(self._run_ack(self._delivery.give_back_plan(refused)))

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
        await self._fetch_routes.reset()
        with contextlib.suppress(Exception):
            await self._fetch_conn.close()
        self._fetch_conn = await self._client._connection(f"txnq-consumer-{self.name}")
        await self._listen_on(self._fetch_conn)

    async def _listen_on(self, conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))

    async def _listen(self, timeout: float) -> None:
        if self._shard_listeners.active:  # through a cluster's proxy
            await self._shard_listeners.wait(self._fetch_conn, timeout)
            return
        async for _ in self._fetch_conn.notifies(timeout=timeout, stop_after=1):
            pass
