"""The sync client: ``txnq.Client(dsn)``, one per process and database, the
factory of producers and consumers and the owner of the connection pool."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar, overload

import psycopg
import sqlalchemy.exc
from psycopg.rows import dict_row

from txnq import errors
from txnq.admin import Admin
from txnq.client.base import ClientBase, Closeable, named_query
from txnq.consumer.sync import Consumer
from txnq.database.connections import create_engine_for, translated_errors
from txnq.database.embedded import EmbeddedServer
from txnq.database.migrate import check_schema, upgrade
from txnq.database.plans import SyncIO, ended_before_it_ran, run
from txnq.durations import Duration
from txnq.options import CONSUMER_OPTIONS, PRODUCER_OPTIONS, checked_options
from txnq.producer.sync import Producer
from txnq.settings import Settings, load_settings
from txnq.transaction.attached_sync import AttachedTransaction, attach
from txnq.transaction.sync import Transaction

T = TypeVar("T")


class Client(ClientBase):
    """Connects to PostgreSQL: ``dsn``, else ``TXNQ_DSN``, else an embedded
    PostgreSQL under ``./.txnq`` (started or reused, and migrated).

    A database given by DSN must have been migrated (``txnq migrate``); the
    client refuses one whose schema is behind.
    """

    def __init__(
        self, dsn: str | None = None, *, settings: Settings | None = None, **overrides: Any
    ) -> None:
        self._check_dsn(dsn, settings)
        self.settings = settings or load_settings(**overrides)
        self.embedded: EmbeddedServer | None = None
        dsn = dsn or self.settings.dsn
        if dsn is None:
            self.embedded = EmbeddedServer(self.settings.home, port=self.settings.embedded_port)
            dsn = self.embedded.start()
            upgrade(dsn, settings=self.settings)
        self.dsn: str = dsn
        self._engine = create_engine_for(dsn)
        self._lock = threading.Lock()
        self._children: list[Closeable] = []
        self._closed = False
        self._init_transactions()
        try:
            with self._engine.connect() as connection:
                check_schema(connection)
        except Exception as exc:
            self._engine.dispose()
            if isinstance(exc, errors.TxnqError):
                raise
            # SQLAlchemy wraps the driver's error and appends a link to its
            # docs; the driver's own message is what helps here.
            cause = getattr(exc, "orig", None) or exc
            detail = str(cause).strip().splitlines()[0] if str(cause).strip() else repr(cause)
            raise errors.ServerUnavailableError(
                f"cannot use PostgreSQL at the given DSN: {detail}; check TXNQ_DSN / --dsn "
                "and that the server is running"
            ) from exc
        self.admin = Admin(self)

    # -- connections --------------------------------------------------------

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit psycopg connection for the duration of the block
        (ServerUnavailableError while PostgreSQL cannot be reached)."""
        proxy = self._checkout_or_unavailable()
        try:
            conn: psycopg.Connection[Any] = proxy.driver_connection
            with translated_errors():
                yield conn
        except psycopg.OperationalError:
            proxy.invalidate()
            raise
        finally:
            proxy.close()

    def checkout(self) -> Any:
        """A pooled connection kept by a producer or consumer for its lifetime
        (``.driver_connection`` is the psycopg connection; ``.close()`` returns it).
        Raises ServerUnavailableError while PostgreSQL cannot be reached."""
        return self._checkout_or_unavailable()

    def query(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run the named query and return its rows as dicts."""
        text = named_query(name)

        def once() -> list[dict[str, Any]]:
            with self.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
                cur.execute(text, params)
                return cur.fetchall() if cur.description else []

        return _once_more_if_ended(once)

    def execute(self, name: str, params: dict[str, Any]) -> None:
        text = named_query(name)

        def once() -> None:
            with self.connection() as conn:
                conn.execute(text, params)

        _once_more_if_ended(once)

    # -- producers and consumers -------------------------------------------

    def producer(self, topic: str, name: str | None = None, **options: Any) -> Producer:
        """An idempotent producer for ``topic``; see :class:`txnq.producer.sync.Producer`."""
        self._check_open()
        checked_options(PRODUCER_OPTIONS, options, "producer")
        producer = Producer(self, topic, name, **options)
        self._adopt(producer)
        return producer

    def subscribe(
        self,
        topic: str,
        subscription: str,
        subscription_type: str = "exclusive",
        **options: Any,
    ) -> Consumer:
        """A consumer on ``subscription`` of ``topic``; see :class:`txnq.consumer.sync.Consumer`."""
        self._check_open()
        checked_options(CONSUMER_OPTIONS, options, "subscribe")
        consumer = Consumer(self, topic, subscription, subscription_type, **options)
        self._adopt(consumer)
        return consumer

    # -- transactions -------------------------------------------------------

    @overload
    def new_transaction(self, timeout: Duration | None = None) -> Transaction: ...

    @overload
    def new_transaction(
        self, timeout: Duration | None = None, *, connection: object
    ) -> AttachedTransaction: ...

    def new_transaction(
        self, timeout: Duration | None = None, *, connection: object | None = None
    ) -> Transaction | AttachedTransaction:
        """Open a transaction (``timeout`` default TXN_DEFAULT_TIMEOUT, at most the
        server's TXN_MAX_TIMEOUT); see :class:`txnq.transaction.sync.Transaction`.

        With ``connection`` (a psycopg 3 connection, a SQLAlchemy Connection or
        Session), join the application's transaction on it instead: sends and
        acks commit or roll back with the application's own writes; see
        :class:`txnq.transaction.attached_sync.AttachedTransaction`. It lasts as long as
        the application's PostgreSQL transaction, so ``timeout`` does not apply."""
        if connection is not None:
            self._check_open()
            self._no_attach_timeout(timeout)
            return attach(connection, client=self)
        self._check_open()
        with self._io() as io:
            txn_id, seconds, timeout_at = run(self._open_txn_plan(timeout), io)
        return Transaction(self, txn_id, seconds, timeout_at)

    def _transaction_limits(self) -> tuple[int, float]:
        with self._io() as io:
            return run(self._limits_plan(), io)

    def _init_transactional_id(self, transactional_id: str) -> int:
        """A new session of a transactional id for a producer; its epoch (see
        :meth:`ClientBase._init_transactional_id_plan`)."""
        with self._io() as io:
            return run(self._init_transactional_id_plan(transactional_id), io)

    @contextmanager
    def _io(self) -> Iterator[SyncIO]:
        """A plan's view of the pool (txnq.database.plans): a pooled connection checked
        out on first use, replaced on Reconnect, returned at the end."""
        held: list[Any] = []

        def connection() -> psycopg.Connection[Any]:
            if not held:
                held.append(self._checkout_or_unavailable())
            conn: psycopg.Connection[Any] = held[0].driver_connection
            return conn

        def reconnect() -> None:
            if held:
                with contextlib.suppress(Exception):
                    held.pop().invalidate()

        try:
            yield SyncIO(connection, reconnect)
        finally:
            if held:
                held[0].close()

    def _checkout_or_unavailable(self) -> Any:
        self._check_open()
        try:
            return self._engine.raw_connection()
        except (psycopg.OperationalError, sqlalchemy.exc.OperationalError) as exc:
            cause = getattr(exc, "orig", None) or exc
            raise errors.ServerUnavailableError(
                f"PostgreSQL is unavailable ({str(cause).strip()}); the call changed nothing: "
                "retry it when the server is back"
            ) from exc

    def _adopt(self, child: Closeable) -> None:
        with self._lock:
            self._children.append(child)

    def _forget(self, child: Closeable) -> None:
        with self._lock:
            if child in self._children:
                self._children.remove(child)

    # -- life cycle ---------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise errors.ClosedError("the client is closed: create a new txnq.Client")

    def close(self) -> None:
        """Close every producer (flushing it) and consumer of this client, then the pool."""
        if self._closed:
            return
        with self._lock:
            children = list(self._children)
        for child in reversed(children):
            child.close()
        self._closed = True
        self._engine.dispose()

    def __enter__(self) -> Client:
        self._check_open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _once_more_if_ended(call: Callable[[], T]) -> T:
    """``call()``, once more on a new pooled connection if the server ended
    the first before the statement ran (txnq.database.plans.ended_before_it_ran:
    such a statement had no effect)."""
    try:
        return call()
    except ended_before_it_ran:
        return call()
