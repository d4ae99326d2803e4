"""The sync face of the producer: ``txnq.Producer`` (``client.producer()``).
A flush thread writes the pending batches; the decisions (routing, batching,
the append and its retries) are in :mod:`txnq.producer.base`."""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from txnq import errors
from txnq.database.plans import SyncIO, run
from txnq.database.routes import SyncRoutes, owners_plan, topic_owner
from txnq.durations import Duration, Size
from txnq.failpoints import raise_if_armed
from txnq.messages import MessageId
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
from txnq.producer.routing import PARTITIONS_REFRESH_SECONDS
from txnq.transaction.base import TransactionBase
from txnq.transaction.pending import PendingSend, SendCallback
from txnq.transaction.protocol import OutgoingMessage, SyncTransaction
from txnq.transaction.sync import Transaction, checked_transaction

if TYPE_CHECKING:
    from txnq.client.sync import Client
    from txnq.transaction.attached_sync import AttachedTransaction


class Producer(ProducerBase):
    """Sends messages to one topic. Create with ``client.producer(topic, name=...)``.

    Options: ``batching_max_messages`` (1000), ``batching_max_bytes`` ("128KiB"),
    ``batching_max_delay`` ("5ms"; how long a batch waits to fill),
    ``max_pending_messages`` (100000; ``send_async`` blocks when reached, up to
    ``send_timeout``), ``send_timeout`` ("30s"; how long a batch is retried while
    PostgreSQL is unreachable), ``routing_mode`` ("key_hash" or "round_robin"),
    ``encoding`` (for ``str`` payloads, "utf-8").
    """

    def __init__(
        self,
        client: Client,
        topic: str,
        name: str | None = None,
        *,
        batching_max_messages: int = 1000,
        batching_max_bytes: Size = 128 * 1024,
        batching_max_delay: Duration = "5ms",
        max_pending_messages: int = 100_000,
        send_timeout: Duration = "30s",
        routing_mode: str = "key_hash",
        encoding: str = "utf-8",
        transactional_id: str | None = None,
    ) -> None:
        self._client = client
        transactional_id = self._configure(
            client.settings,
            client.admin.get_topic(topic),
            name,
            batching_max_messages=batching_max_messages,
            batching_max_bytes=batching_max_bytes,
            batching_max_delay=batching_max_delay,
            max_pending_messages=max_pending_messages,
            send_timeout=send_timeout,
            routing_mode=routing_mode,
            encoding=encoding,
            transactional_id=transactional_id,
        )
        self._proxy: Any = client.checkout()
        self._io_lock = threading.Lock()  # one append at a time on the connection, in order
        # Guards the pending batches. The hot paths take its lock directly
        # (``with self._lock``: the same mutex, without Condition.__enter__'s
        # Python-level call, a tenth of send_async's time).
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        # Through a cluster's proxy, the appends' direct connections to the shards.
        self._owners: dict[int, tuple[int, str]] = {}
        self._routes = SyncRoutes(
            topic_owner(self._topic.topic_id, lambda: self._owners), f"txnq-producer-{self.name}"
        )
        self._io = SyncIO(
            lambda: self._proxy.driver_connection, self._reconnect, routed=self._routes.connection
        )
        try:
            if transactional_id is not None:
                epoch = client._init_transactional_id(transactional_id)
                self._transactional = (transactional_id, epoch)
            run(self._register_plan(), self._io)
            self._owners = run(
                owners_plan(client, self._topic.topic_id, self._topic.partitions), self._io
            )
            # Read once per client: on one database, not a cluster's proxy, a
            # commit may carry its batches (take_for_commit).
            run(client._cluster_proxy_plan(), self._io)
        except BaseException:
            self._proxy.close()
            raise
        # Runs commit_async()'s commits that carry batches; made at the first.
        self._committer: ThreadPoolExecutor | None = None
        self._flusher = threading.Thread(
            target=self._flush_loop, name=f"txnq-producer-{self.name}", daemon=True
        )
        self._flusher.start()

    # -- public API ---------------------------------------------------------

    def send(
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
        """Send one message and wait until it is written; returns its MessageId.

        Messages queued by ``send_async`` for the same partition go in the same
        entry, ahead of this one. With ``txn``, the message is part of that
        transaction: read_committed consumers see it once the transaction commits.
        ``deliver_after`` (a duration) or ``deliver_at`` (a datetime) delays its
        delivery on shared and key_shared subscriptions (exclusive and failover
        ones deliver it in log order at once, as Pulsar does); a delayed message
        is its own entry (docs/subscriptions.md).
        """
        joined = self._joined(txn)
        message = self._outgoing(
            value, key, properties, event_time, partition, None, deliver_after, deliver_at
        )
        if joined is not None:
            return joined._send(self, message)
        return self._write_now(message, None)

    def send_async(
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
        """Queue one message; it is written within ``batching_max_delay`` or when
        its batch is full. ``callback(exception, message_id)`` runs once written.
        With ``txn``, ``txn.commit()`` flushes it first. A delayed message
        (``deliver_after`` / ``deliver_at``, see ``send``) is not batched: it is
        written before this returns."""
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
            return self._enqueue(value, None, txn, partition)
        joined = None if txn is None else self._joined(txn)
        message = self._outgoing(
            value, key, properties, event_time, partition, callback, deliver_after, deliver_at
        )
        if joined is not None:
            return joined._send_async(self, message)
        if message.deliver_at is None:  # the hot path: straight into the batch
            return self._enqueue(message.payload, message, None)
        return self._write_queued(message, None)

    # -- what a transaction calls back (txnq.transaction.protocol) ----------

    def _joined(self, txn: object) -> SyncTransaction | None:
        """The transaction a send names, checked (a sync one of this database)."""
        if txn is None:
            return None
        joined = checked_transaction(txn, self._client)
        self._check_usable()
        return joined

    def _write_now(self, message: OutgoingMessage, txn: TransactionBase | None) -> MessageId:
        """Write one message and wait (``send``), in ``txn`` if given."""
        if message.deliver_at is not None:
            return self._send_delayed(message, txn)
        key_bytes, partition = message.key, message.partition
        with self._io_lock:
            with self._cond:
                self._check_usable()
                target = self._routed(key_bytes, partition)
                direct = target not in self._batches and not self._sealed.get(target)
                if direct:
                    self._advance_round_robin(key_bytes, partition)
            if direct:
                # Nothing queued for this partition: write this message as its own
                # entry now. Holding the I/O lock keeps the partition's order.
                offset = run(self._append_plan(target, *message_columns(message), txn), self._io)
                return MessageId(self.topic, target, offset, 0)
        pending = self._enqueue(message.payload, message, txn)
        self._flush_partition(pending._partition)
        return pending.result(self._result_timeout)

    def _write_queued(self, message: OutgoingMessage, txn: TransactionBase | None) -> PendingSend:
        """Queue one message (``send_async``), in ``txn`` if given; a delayed one is written now."""
        if message.deliver_at is None:
            return self._enqueue(message.payload, message, txn)
        try:
            message_id = self._send_delayed(message, txn)
        except errors.TxnqError as exc:
            self._delayed_failed(message, exc)
            raise
        return self._delayed_written(message, message_id)

    def _route_staged(self, message: OutgoingMessage) -> int:
        """The partition of a message an application transaction stages."""
        with self._cond:
            self._check_usable()
            target = self._routed(message.key, message.partition)
            self._advance_round_robin(message.key, message.partition)
        return target

    # -- internals ----------------------------------------------------------

    def _send_delayed(self, message: OutgoingMessage, txn: TransactionBase | None) -> MessageId:
        """Write a delayed message as its own entry, after what is queued for its partition."""
        with self._cond:
            self._check_usable()
            target = self._routed(message.key, message.partition)
            self._advance_round_robin(message.key, message.partition)
        self._flush_partition(target)
        with self._io_lock:
            offset = run(
                self._append_plan(target, *message_columns(message), txn, message.deliver_at),
                self._io,
            )
        return MessageId(self.topic, target, offset, 0)

    def _routed(self, key: bytes | None, partition: int | None) -> int:
        """The partition of a message (caller holds _cond), following added partitions."""
        if self._needs_refresh(partition):
            with self._client._io() as io:
                run(self._refresh_partitions_plan(), io)
        return self._route(key, partition)

    def _enqueue(
        self,
        payload: bytes,
        message: OutgoingMessage | None,
        txn: TransactionBase | None,
        partition: int | None = None,
    ) -> PendingSend:
        """Queue one message (``message`` None: a plain ``payload`` for
        ``partition`` or round robin, see _add)."""
        with self._lock:
            self._check_usable()
            key = None
            if message is not None:
                key, partition = message.key, message.partition
            if (
                key is None
                and time.monotonic() - self._partitions_checked <= PARTITIONS_REFRESH_SECONDS
            ):
                # _routed's answer, without its calls.
                if partition is None:
                    target = self._round_robin
                elif type(partition) is int and 0 <= partition < self._partitions:
                    target = partition
                else:
                    target = self._routed(None, partition)
            else:
                target = self._routed(key, partition)
            if self._pending >= self._max_pending:
                self._wait_for_room()
            pending, wake = self._add(target, payload, message, txn)
            if wake:
                self._cond.notify_all()
        return pending

    def _wait_for_room(self) -> None:
        """Wait (holding _cond) until the pending queue has room, at most send_timeout."""
        deadline = time.monotonic() + self._send_timeout
        while self._pending >= self._max_pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._queue_full_error()
            self._cond.wait(remaining)
            self._check_usable()

    def flush(self) -> None:
        """Write every queued message and wait until all sent so far are written.

        Raises the first error of a batch written since the previous flush()
        (each of its messages' PendingSend and callback has it too), so a
        failed ``send_async`` is never silent, as Pulsar's flush. Messages sent
        in a transaction report theirs through ``txn.commit()`` instead.
        """
        self._check_usable()
        for partition in range(self._partitions):
            self._flush_partition(partition)
        with self._cond:
            futures = list(self._last_futures.values())
        for future in futures:
            future.exception(self._result_timeout)
        self._check_usable()
        with self._cond:
            self._raise_unreported()

    def close(self) -> None:
        """Flush and release the connection. Safe to call twice."""
        if self._closed:
            return
        try:
            if self._failure is None:
                self.flush()
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
            self._flusher.join(timeout=5)
            if self._committer is not None:
                self._committer.shutdown(wait=True)
            with self._io_lock:
                self._proxy.close()
                self._routes.close()
            self._client._forget(self)

    def __enter__(self) -> Producer:
        self._check_usable()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _flush_loop(self) -> None:
        try:
            while True:
                with self._cond:
                    if self._closed:
                        return
                    ready, wait = self._ready_partitions()
                    if not ready:
                        self._cond.wait(wait)
                        continue
                raise_if_armed("producer_flush")
                for partition in ready:
                    self._flush_partition(partition)
        except BaseException as exc:
            # The thread ends here: without this, send_async would queue for
            # good and flush() wait for batches nobody writes.
            with self._cond:
                self._stopped(exc, [])
                self._cond.notify_all()

    def _flush_partition(self, partition: int) -> None:
        """Write the partition's sealed batches and its open batch, in order."""
        with self._io_lock:
            with self._cond:
                batches = self._take(partition)
            self._write_taken(partition, batches)

    def _commit_with(self, txn: TransactionBase) -> bool:
        """``txn.commit()``: commit it with this producer's last batches of it
        (txnq.producer.decided). False when the commit cannot carry what is
        queued, or did not go through: nothing of it was written then, what it
        took is written here the usual way, and the caller commits."""
        with self._io_lock:
            with self._cond:
                taken = take_for_commit(self, txn)
            if taken is None:
                return False
            carried = self._carry(txn, taken)
        if carried is None:
            return False
        self._carried(txn, taken, carried)
        return True

    def _commit_with_async(self, txn: Transaction) -> Future[None] | None:
        """``txn.commit_async()``: take this producer's last batches of ``txn``
        now, and commit them with it on the producer's committer thread; the
        future of that commit, or None (nothing taken) when it cannot carry
        what is queued. The I/O lock, taken here, is released by the committer
        once the batches are written: until then nothing else of this producer
        is written, so a later transaction's entries come after these."""
        taken: Taken | None = None
        self._io_lock.acquire()
        try:
            with self._cond:
                taken = take_for_commit(self, txn)
            if taken is None:
                self._io_lock.release()
                return None
            committer = self._committer
            if committer is None:
                committer = self._committer = ThreadPoolExecutor(
                    1, thread_name_prefix=f"txnq-committer-{self.name}"
                )
            # Our own future, running from the start: cancelling it cannot
            # keep the committer from releasing the I/O lock.
            outcome: Future[None] = Future()
            outcome.set_running_or_notify_cancel()
            committer.submit(self._commit_taken, txn, taken, outcome)
            return outcome
        except BaseException as exc:
            if taken is not None:
                with self._cond:
                    fail_carried(self, taken, exc)
                    self._cond.notify_all()
            self._io_lock.release()
            raise

    def _commit_taken(self, txn: Transaction, taken: Taken, outcome: Future[None]) -> None:
        """The committer thread's half of ``commit_async()``: ``outcome`` is
        the future the caller holds."""
        try:
            txn._commit_in_background(lambda: self._carry_taken(txn, taken))
        except BaseException as exc:
            outcome.set_exception(exc)
        else:
            outcome.set_result(None)

    def _carry_taken(self, txn: Transaction, taken: Taken) -> bool:
        """Commit ``txn`` with the batches ``_commit_with_async`` took, and
        release the I/O lock it took; False when the commit did not go through
        (the batches are written then, the caller commits the usual way)."""
        try:
            carried = self._carry(txn, taken)
        except errors.TxnqError:
            carried = None  # as commit(): the usual commit after reports it
        finally:
            self._io_lock.release()
        if carried is None:
            return False
        self._carried(txn, taken, carried)
        return True

    def _carry(self, txn: TransactionBase, taken: Taken) -> Carried | None:
        """Commit ``txn`` with the batches ``taken`` (the I/O lock is held);
        None when it did not go through: the batches are written the usual
        way then, and the transaction is committed the usual way."""
        try:
            carried = run(carried_commit_plan(self, txn, taken), self._io)
        except BaseException as exc:
            with self._cond:
                fail_carried(self, taken, exc)
                self._cond.notify_all()
            raise
        if carried is None:
            for partition, batch in taken:
                self._write_taken(partition, [batch])
            return None
        with self._cond:
            settle_carried(self, taken, carried.offsets)
            self._cond.notify_all()
        return carried

    def _carried(self, txn: TransactionBase, taken: Taken, carried: Carried) -> None:
        """After a commit that carried ``taken`` (the I/O lock released)."""
        for partition, batch in taken:
            self._run_callbacks(partition, batch)
        txn._committed_with_batches(carried.state, carried.reason)

    def _write_taken(self, partition: int, batches: list[EntryBatch]) -> None:
        """Write batches taken from the partition's queue, in order (the I/O lock is held)."""
        for index, batch in enumerate(batches):
            try:
                run(self._write_plan(partition, batch), self._io)
            except BaseException as exc:
                with self._cond:
                    failure = self._write_failed(exc, batches, index)
                raise failure from exc
            finally:
                with self._cond:
                    self._pending -= len(batch.payloads)
                    self._cond.notify_all()
            self._run_callbacks(partition, batch)

    def _reconnect(self) -> None:
        self._routes.reset()
        with contextlib.suppress(Exception):
            self._proxy.invalidate()
        try:
            self._proxy = self._client.checkout()
        except Exception:
            self._proxy = _Disconnected()


class _Disconnected:
    """Stands in for a connection while PostgreSQL cannot be reached."""

    @property
    def driver_connection(self) -> Any:
        raise psycopg.OperationalError("not connected")

    def invalidate(self) -> None:
        pass

    def close(self) -> None:
        pass
