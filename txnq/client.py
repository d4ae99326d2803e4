"""The client: one per process and database, the factory of producers and
consumers, the owner of the connection pool (``txnq.Client(dsn)``)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import psycopg
from psycopg.rows import dict_row

from txnq import errors
from txnq.admin import Admin
from txnq.migrate import check_schema, upgrade
from txnq.queries import QUERIES
from txnq.settings import Settings, load_settings
from txnq.storage import create_engine_for, translated_errors

if TYPE_CHECKING:
    from txnq.consumer import Consumer
    from txnq.embedded import EmbeddedServer
    from txnq.producer import Producer


class _Closeable(Protocol):
    def close(self) -> None: ...


class Client:
    """Connects to PostgreSQL: ``dsn``, else ``TXNQ_DSN``, else an embedded
    PostgreSQL under ``./.txnq`` (started or reused, and migrated).

    A database given by DSN must have been migrated (``txnq migrate``); the
    client refuses one whose schema is behind.
    """

    def __init__(
        self, dsn: str | None = None, *, settings: Settings | None = None, **overrides: Any
    ) -> None:
        if dsn is not None and not isinstance(dsn, str):
            raise errors.InvalidArgumentError(
                f"dsn must be a str such as 'postgresql://user@host/db', not {type(dsn).__name__}"
            )
        self.settings = settings or load_settings(**overrides)
        self.embedded: EmbeddedServer | None = None
        dsn = dsn or self.settings.dsn
        if dsn is None:
            from txnq.embedded import EmbeddedServer

            self.embedded = EmbeddedServer(self.settings.home)
            dsn = self.embedded.start()
            upgrade(dsn, settings=self.settings)
        self.dsn: str = dsn
        self._engine = create_engine_for(dsn)
        self._lock = threading.Lock()
        self._children: list[_Closeable] = []
        self._closed = False
        try:
            with self._engine.connect() as connection:
                check_schema(connection)
        except Exception as exc:
            self._engine.dispose()
            if isinstance(exc, errors.TxnqError):
                raise
            raise errors.ServerUnavailableError(
                f"cannot use PostgreSQL at the given DSN: {exc}; check TXNQ_DSN / --dsn"
            ) from exc
        self.admin = Admin(self)

    # -- connections --------------------------------------------------------

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled autocommit psycopg connection for the duration of the block."""
        self._check_open()
        proxy = self._engine.raw_connection()
        try:
            conn: psycopg.Connection[Any] = proxy.driver_connection  # type: ignore[assignment]
            with translated_errors():
                yield conn
        except psycopg.OperationalError:
            proxy.invalidate()
            raise
        finally:
            proxy.close()

    def checkout(self) -> Any:
        """A pooled connection kept by a producer or consumer for its lifetime
        (``.driver_connection`` is the psycopg connection; ``.close()`` returns it)."""
        self._check_open()
        return self._engine.raw_connection()

    def query(self, name: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run the named query and return its rows as dicts."""
        with self.connection() as conn, conn.cursor(row_factory=dict_row) as cur:
            cur.execute(QUERIES[name], params)
            return cur.fetchall() if cur.description else []

    def execute(self, name: str, params: dict[str, Any]) -> None:
        with self.connection() as conn:
            conn.execute(QUERIES[name], params)

    # -- producers and consumers -------------------------------------------

    def producer(self, topic: str, name: str | None = None, **options: Any) -> Producer:
        """An idempotent producer for ``topic``; see :class:`txnq.producer.Producer`."""
        from txnq.producer import Producer

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
        """A consumer on ``subscription`` of ``topic``; see :class:`txnq.consumer.Consumer`."""
        from txnq.consumer import Consumer

        consumer = Consumer(self, topic, subscription, subscription_type, **options)
        self._adopt(consumer)
        return consumer

    def _adopt(self, child: _Closeable) -> None:
        with self._lock:
            self._children.append(child)

    def _forget(self, child: _Closeable) -> None:
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
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
