"""The sync face of application transactions: ``txnq.attach(conn)`` gives an
:class:`AttachedTransaction` on a psycopg 3 ``Connection``, a SQLAlchemy
``Connection`` or ``Session``; :func:`process` is the exactly-once loop of
``consumer.process(conn)``. What they do and guarantee is in
:mod:`txnq.transaction.attached_base` (and docs/exactly-once.md); this module
finds the psycopg connection under the caller's object and runs the plans on
it."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.pq import TransactionStatus

from txnq import errors
from txnq.database.plans import SyncIO, run
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
    from txnq.client.sync import Client
    from txnq.consumer.sync import Consumer
    from txnq.producer.sync import Producer


@dataclass
class _Target:
    """What the caller gave: how to reach the psycopg connection underneath
    (joining the caller's transaction: SQLAlchemy begins its own if none is
    open), whether a transaction is open, how to run a new one (for
    ``process``), and, where the wrapper has one, the object of the caller's
    current transaction (a SQLAlchemy transaction; None for psycopg)."""

    original: object
    join: Callable[[], psycopg.Connection[Any]]
    in_transaction: Callable[[], bool]
    transaction: Callable[[], contextlib.AbstractContextManager[Any]]
    current: Callable[[], object] | None = None


def _psycopg_in_transaction(conn: psycopg.Connection[Any]) -> bool:
    return conn.info.transaction_status != TransactionStatus.IDLE


def _target(connection: object) -> _Target:
    if isinstance(connection, psycopg.AsyncConnection):
        raise errors.InvalidArgumentError(
            "an asyncio connection joins with the asyncio client: use txnq.aio.attach(conn) "
            "or `await txnq.aio.Client(...).new_transaction(connection=conn)`"
        )
    if isinstance(connection, psycopg.Connection):
        conn = connection
        return _Target(conn, lambda: conn, lambda: _psycopg_in_transaction(conn), conn.transaction)
    from sqlalchemy.engine import Connection as SAConnection
    from sqlalchemy.orm import Session

    if isinstance(connection, Session):
        session = connection

        def join_session() -> psycopg.Connection[Any]:
            # connection() begins the session's transaction if none is open.
            return _driver(session.connection().connection.driver_connection)

        return _Target(
            session, join_session, session.in_transaction, session.begin, session.get_transaction
        )
    if isinstance(connection, SAConnection):
        sa_conn = connection

        def join_connection() -> psycopg.Connection[Any]:
            if not sa_conn.in_transaction():
                sa_conn.begin()  # SQLAlchemy then commits what txnq runs underneath
            return _driver(sa_conn.connection.driver_connection)

        return _Target(
            sa_conn, join_connection, sa_conn.in_transaction, sa_conn.begin, sa_conn.get_transaction
        )
    raise errors.InvalidArgumentError(
        "connection must be a psycopg 3 Connection, or a SQLAlchemy Connection or Session on "
        f"the psycopg driver, not {type(connection).__name__}"
    )


def _driver(driver: object) -> psycopg.Connection[Any]:
    if not isinstance(driver, psycopg.Connection):
        raise errors.InvalidArgumentError(
            "the SQLAlchemy engine must use the psycopg 3 driver (postgresql+psycopg://), "
            f"not {type(driver).__module__}"
        )
    return driver


class AttachedTransaction(AttachedBase):
    """A txnq transaction that lives in the application's PostgreSQL
    transaction; see the module docstring. Use as a context manager: a normal
    exit publishes (``commit()``), an exception discards what was staged
    (``abort()``); the caller's own transaction is committed by the caller."""

    connection: psycopg.Connection[Any]

    def __init__(self, connection: object, *, client: Client | None = None) -> None:
        target = _target(connection)
        self._setup(target.join(), client, target.current)
        self._io = SyncIO(self._joined_connection)

    # -- the transaction protocol (txnq.transaction.protocol) ----------------

    def _send(self, producer: Producer, message: OutgoingMessage) -> MessageId:
        self._refuse_send()

    def _send_async(self, producer: Producer, message: OutgoingMessage) -> PendingSend:
        """Staged on the caller's connection, appended when the caller commits."""
        self._check_not_delayed(message)
        partition = producer._route_staged(message)
        staged, full = self._queue_send(producer, partition, message)
        if full is not None:
            run(self._stage_plan(full), self._io)
        return staged

    def _acknowledge(self, consumer: Consumer, items: list[object]) -> None:
        """Staged on the caller's connection, applied when the caller commits."""
        run(self._stage_acks_plan(consumer, consumer._staged_acks(items)), self._io)

    def _acknowledge_cumulative(
        self, consumer: Consumer, message_id: MessageId, size: int | None
    ) -> None:
        self._refuse_cumulative()

    # -- the outbox without a producer ------------------------------------

    def send(
        self,
        topic: str,
        value: object,
        *,
        key: str | bytes | None = None,
        properties: dict[str, str] | None = None,
        partition: int | None = None,
        encoding: str = "utf-8",
    ) -> None:
        """Produce one message to ``topic`` when the caller's transaction
        commits (``txnq.send_at_commit_v2``: routed by key as a producer does,
        else to ``partition``, else to a random partition)."""
        run(self._send_plan(topic, value, key, properties, partition, encoding), self._io)

    # -- ending -------------------------------------------------------------

    def commit(self) -> None:
        """Publish what this transaction staged, on the caller's connection:
        the messages get their offsets (``send_async`` results resolve) and the
        acks are applied. Visible to others once the caller commits its
        transaction, which should follow at once: from here until then the
        partitions' head rows and the cursors are locked.

        Raises :class:`TransactionConflictError` when another transaction
        acknowledged one of the messages first: the caller must roll back."""
        run(self._commit_plan(), self._io)

    def abort(self) -> None:
        """Drop what this transaction staged (the caller's own writes stay
        theirs to commit or roll back), and have the consumers that
        acknowledged in it deliver those messages again. Safe to call after
        the caller rolled back, and twice."""
        run(self._abort_plan(), self._io)

    def __enter__(self) -> AttachedTransaction:
        self._enter()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if not self._exit(exc_type is not None):
            return
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def flush(self) -> None:
        """Stage the messages ``send_async`` queued in this transaction."""
        run(self._flush_plan(), self._io)


def attach(connection: object, *, client: Client | None = None) -> AttachedTransaction:
    """Join the application transaction of ``connection`` (psycopg 3
    Connection, SQLAlchemy Connection or Session): see :class:`AttachedTransaction`.

    Inside a ``with txnq.attach(conn)`` block or the body of a
    ``consumer.process(conn)`` loop, this returns that block's transaction, so
    code deep in the application can join it by the connection alone."""
    active = active_transaction(_target(connection).join(), AttachedTransaction)
    return active if active is not None else AttachedTransaction(connection, client=client)


# -- the exactly-once processor ------------------------------------------------


def process(
    consumer: Consumer,
    connection: object,
    *,
    batch_size: int = 100,
    idle_timeout: Duration | None = None,
) -> Iterator[Message]:
    """Yield the consumer's messages, committing their acks in the same
    PostgreSQL transaction as the writes the loop body makes on
    ``connection``: one transaction per batch of up to ``batch_size`` messages.

    The batch's transaction commits when the loop asks for the message after
    the batch's last one. If the body raises (or leaves the loop with
    ``break``), the batch's transaction rolls back, the consumer delivers
    those messages again, and the exception goes on. If another consumer
    committed one of the batch's messages first (a failover handover), the
    batch rolls back and the loop goes on: it was processed there.
    ``idle_timeout`` ends the loop when no message came for that long (None:
    wait forever).
    """
    batch_size, idle = process_options(batch_size, idle_timeout)
    target = _target(connection)
    return _process(consumer, target, batch_size, idle)


def _process(
    consumer: Consumer, target: _Target, batch_size: int, idle: float | None
) -> Iterator[Message]:
    while True:
        batch = consumer.batch_receive(batch_size, timeout=1.0 if idle is None else idle)
        if not batch:
            if idle is not None:
                return
            continue
        check_between_batches(consumer, batch, target.in_transaction())
        done = False
        try:
            with target.transaction(), AttachedTransaction(target.original) as txn:
                yield from batch
                consumer.acknowledge(batch, txn=txn)
            done = True
        except errors.TransactionConflictError:
            pass  # consumed and committed elsewhere: rolled back here, go on
        finally:
            if not done:
                consumer._rewind({m.message_id.partition for m in batch})
