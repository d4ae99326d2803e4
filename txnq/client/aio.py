"""The asyncio client: ``txnq.aio.Client``, the same API as ``txnq.Client``
with ``await`` (docs/asyncio.md). It shares :class:`ClientBase` with the
sync client and keeps a few idle ``AsyncConnection`` s for transactions and
control calls; ``client.admin`` runs the sync Admin's calls in a worker
thread (topic and subscription management is not on the data path), and
starting an embedded PostgreSQL (no DSN) happens in a worker thread too."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager
from typing import Any, Generic, TypeVar, overload

import psycopg

from txnq import errors
from txnq.admin import Admin
from txnq.client.base import ClientBase
from txnq.client.sync import Client as SyncClient
from txnq.consumer.aio import Consumer
from txnq.database.connections import libpq_dsn
from txnq.database.plans import AsyncIO, arun
from txnq.durations import Duration
from txnq.producer.aio import Producer
from txnq.settings import Settings
from txnq.transaction.aio import Transaction
from txnq.transaction.attached_aio import AttachedTransaction, attach

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
        """A consumer (options as ``txnq.Client.subscribe``, ``retry_enable``
        and ``reconsume_later`` included): ``await`` it or use it in ``async with``."""
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

    async def _init_transactional_id(self, transactional_id: str) -> int:
        """A new session of a transactional id for a producer; its epoch (see
        :meth:`ClientBase._init_transactional_id_plan`)."""
        async with self._io() as io:
            return await arun(self._init_transactional_id_plan(transactional_id), io)

    # -- connections ----------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise errors.ClosedError("the client is closed: create a new txnq.aio.Client")
        if self._sync is None:
            raise errors.ClosedError(
                "the asyncio client is not open: `await client.open()` or use `async with`"
            )

    async def _connection(self, application_name: str = "txnq") -> psycopg.AsyncConnection[Any]:
        """A dedicated connection (ServerUnavailableError while PostgreSQL cannot be reached)."""
        self._check_open()
        try:
            return await _connect(self.dsn, application_name)
        except psycopg.OperationalError as exc:
            raise _unavailable(exc) from exc

    async def _dedicated_connection(self, application_name: str) -> psycopg.AsyncConnection[Any]:
        """A dedicated connection for a producer's appends: a failure to connect
        is the psycopg OperationalError, which the append plan retries."""
        return await _connect(self.dsn, application_name)

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
