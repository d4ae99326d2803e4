"""The sync face of client transactions: ``txnq.Transaction``
(``client.new_transaction()``). It runs the plans of
:class:`~txnq.transaction.base.TransactionBase` on the client's pool under a
lock; the decisions are all in the base."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import Future
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import psycopg

from txnq import errors
from txnq.database.plans import Plan, run
from txnq.messages import MessageId
from txnq.transaction.attached_sync import AttachedTransaction
from txnq.transaction.base import FACE_HINTS, TransactionBase, TxnId, refuse_transaction
from txnq.transaction.pending import PendingSend
from txnq.transaction.protocol import OutgoingMessage, SyncTransaction

if TYPE_CHECKING:
    from txnq.client.sync import Client
    from txnq.consumer.sync import Consumer
    from txnq.producer.sync import Producer

T = TypeVar("T")


def checked_transaction(txn: object, client: Any) -> SyncTransaction:
    """``txn`` as given to a sync producer's send or a sync consumer's ack: a
    sync client or application transaction (of ``client``'s database)."""
    if not isinstance(txn, Transaction | AttachedTransaction):
        refuse_transaction(txn, FACE_HINTS["sync"])
    txn._check_client(client)
    return txn


class Transaction(TransactionBase):
    """An open transaction; see :mod:`txnq.transaction.base`. Use as a context
    manager to commit on success and abort on an exception."""

    _face = "sync"

    def __init__(self, client: Client, txn_id: TxnId, timeout: float, timeout_at: datetime) -> None:
        super().__init__(client, txn_id, timeout, timeout_at)
        self._lock = threading.RLock()

    # -- ending -------------------------------------------------------------

    def commit(self, *, wait: bool = True) -> None:
        """Commit: flush this transaction's queued sends, write the decision, and
        (``wait=True``) run the marker phase so the messages are visible and the
        acks applied when this returns. ``wait=False`` returns at the decision;
        coordinator workers finish it.

        Raises :class:`TransactionAbortedError` (a send in the transaction
        failed: it is aborted instead), :class:`TransactionTimedOutError`,
        :class:`ProducerFencedError`, or :class:`TransactionEndedError`.
        """
        with self._lock:
            self._check_commit(wait)
            self._commit_checked(wait, self._flush_but_carrier(wait))

    def _commit_checked(self, wait: bool, carrier: Producer | None) -> None:
        """``commit()`` once checked and the other producers flushed (the
        lock is held): carry the batches of ``carrier`` if it still can,
        else write them and commit the usual way."""
        if carrier is not None:
            with contextlib.suppress(errors.TxnqError):
                # Still nothing written (the others may have flushed some).
                if self._carries_batches(wait) and carrier._commit_with(self):
                    return
                carrier.flush()
        self._run(self._commit_plan(wait=wait))

    def commit_async(self) -> Future[None]:
        """Commit without waiting, as Pulsar's ``txn.commit()`` future: the
        future is done when ``commit()`` would have returned, with its error if
        it would have raised one. Meanwhile the caller can open the next
        transaction and queue its messages: a producer writes nothing of it
        before this commit's messages, so their order holds.

        The commit runs in the background when it can carry its messages
        (the transaction's sends are still queued in its producer, it made no
        acknowledgement, and the client is not on a cluster's proxy:
        docs/transactions.md, "A commit that carries its batches"); otherwise
        it commits here, before returning a future that is already done. Once
        called, the transaction takes no more sends or acks, and neither
        ``commit()`` nor ``abort()`` (its state is COMMITTING until the
        future is done).
        """
        with self._lock:
            self._check_commit(True)
            carrier = self._flush_but_carrier(True)
            if carrier is not None and self._carries_batches(True):
                # COMMITTING before the committer thread can set COMMITTED.
                self._state = "COMMITTING"
                future: Future[None] | None = None
                try:
                    future = carrier._commit_with_async(self)
                finally:
                    if future is None:
                        self._state = "OPEN"
                if future is not None:
                    return future
            done: Future[None] = Future()
            try:
                self._commit_checked(True, carrier)
            except BaseException as exc:
                done.set_exception(exc)
            else:
                done.set_result(None)
            return done

    def _flush_but_carrier(self, wait: bool) -> Producer | None:
        """The producer whose last batches may ride with the decision
        (txnq.producer.decided: the last one that joined), after every
        other producer wrote its batches; None when the commit cannot carry."""
        producers = list(self._producers)
        carrier = producers[-1] if producers and self._carries_batches(wait) else None
        for producer in producers:
            if producer is not carrier:
                with contextlib.suppress(errors.TxnqError):
                    producer.flush()
        return carrier

    def _commit_in_background(self, carry: Callable[[], bool]) -> None:
        """The committer thread's part of ``commit_async()``: ``carry()``
        commits with the batches taken (False: it did not go through, nothing
        of it was written, and the commit goes the usual way, as ``commit()``
        would go on). An error leaves the transaction OPEN, as ``commit()``
        does, and is the future's."""
        try:
            if not carry():
                with self._lock:
                    self._run(self._commit_plan(wait=True))
        except BaseException:
            with self._lock:
                if self._state == "COMMITTING":
                    self._state = "OPEN"
            raise

    def abort(self) -> None:
        """Abort: the messages sent in it are never delivered, its acks are
        released and those messages are delivered again. Aborting a transaction
        the system aborted already (timeout, fencing) is a no-op."""
        with self._lock:
            if self._aborted_already():
                return
            self._run(self._end_plan(commit=False, wait=True))

    def __enter__(self) -> Transaction:
        self._check_open()
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self._state != "OPEN":
            return
        if exc_type is None:
            self.commit()
        else:
            with contextlib.suppress(errors.TxnqError, psycopg.Error):
                self.abort()

    # -- the transaction protocol (txnq.transaction.protocol) ----------------

    def _send(self, producer: Producer, message: OutgoingMessage) -> MessageId:
        self._join_producer(producer)
        return producer._write_now(message, self)

    def _send_async(self, producer: Producer, message: OutgoingMessage) -> PendingSend:
        self._join_producer(producer)
        return producer._write_queued(message, self)

    def _acknowledge(self, consumer: Consumer, items: list[object]) -> None:
        consumer._run_ack(consumer._acknowledge_plan(items, self))

    def _acknowledge_cumulative(
        self, consumer: Consumer, message_id: MessageId, size: int | None
    ) -> None:
        consumer._run_ack(consumer._cumulative_plan(message_id, size, self))

    # -- used by producers and consumers ------------------------------------

    def _join_producer(self, producer: Producer) -> None:
        """Called before a producer's first write in this transaction."""
        with self._lock:
            if not self._joined_already(producer):
                self._run(self._join_producer_plan(producer))

    def _join_consumer(self, consumer: Any) -> None:
        with self._lock:
            super()._join_consumer(consumer)

    def _record_failure(self, exc: BaseException) -> None:
        """A queued send of this transaction failed: commit() will abort.
        Called by a producer's flush thread holding its I/O lock, so it does
        not take the transaction's lock: commit() holds that while it waits
        for the same I/O lock to flush (the two would deadlock)."""
        if self._note_failure(exc):
            self._run(self._refresh_state_plan())

    def _run(self, plan: Plan[T]) -> T:
        with self._client._io() as io:
            return run(plan, io)
