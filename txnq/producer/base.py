"""The producer: routes messages to partitions, batches them in a client-side
pending queue (one batch per partition becomes one entry), and appends each
batch with one call of ``txnq.append_v6``.

Idempotent by default, as Kafka's producer: the producer has an id and an
epoch, and numbers the messages of each partition in sequence. A batch whose
outcome is unknown (the connection broke) is retried with the same sequence
numbers, and the server returns the original offsets instead of writing it
twice. A newer producer with the same name fences this one (its next write
raises ProducerFencedError); a reconnecting named producer continues its
sequences.

Transactions: ``send(..., txn=txn)`` writes into a transaction (a batch holds
the messages of one transaction only). A producer created with
``transactional_id=`` starts a new session of that id, which fences older
sessions (their next call raises ProducerFencedError) and aborts the
transaction they left open, as Kafka's ``initTransactions``.

Routing: :mod:`txnq.producer.routing`; through a cluster's proxy, a plain
append (no transaction, no delay) goes to its shard directly
(:mod:`txnq.database.routes`).

Backlog quota (docs/backlog-quota.md): while the topic is over its quota, a
send raises BacklogQuotaExceededError (policy producer_error), or blocks up to
BACKLOG_QUOTA_HOLD_TIMEOUT_SECONDS, re-checking the quota, and then raises
(producer_hold). Transactional sends are held or refused like any other.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
import uuid
from concurrent.futures import Future
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg

from txnq import errors
from txnq.database.connections import translate
from txnq.database.plans import Call, Plan, Reconnect, Sleep
from txnq.durations import Duration, Size, parse_duration, parse_size
from txnq.messages import (
    MessageId,
    check_event_time,
    check_time,
    encode_key,
    encode_payload,
    encode_properties,
)
from txnq.names import validate_name
from txnq.producer.append_call import (
    BACKLOG_QUOTA_HOLD,
    HOLD_RECHECK_MAX_SECONDS,
    HOLD_RECHECK_MIN_SECONDS,
    INVALID_ARGUMENT,
    OUT_OF_ORDER_SEQUENCE,
    append_arguments,
)
from txnq.producer.batch import EntryBatch
from txnq.producer.routing import (
    PARTITIONS_REFRESH_SECONDS,
    ROUTING_MODES,
    partition_for_key,
)
from txnq.transaction.base import TransactionBase
from txnq.transaction.pending import PendingSend, SendCallback
from txnq.transaction.protocol import OutgoingMessage

if TYPE_CHECKING:
    from txnq.admin import TopicInfo
    from txnq.settings import Settings

log = logging.getLogger("txnq.producer")


def delivery_time(deliver_after: Duration | None, deliver_at: datetime | None) -> datetime | None:
    """When a delayed message becomes deliverable (None: not delayed); checks the input."""
    if deliver_after is not None and deliver_at is not None:
        raise errors.InvalidArgumentError("give deliver_after or deliver_at, not both")
    if deliver_after is not None:
        delay = parse_duration(deliver_after, what="deliver_after")
        return datetime.now(UTC) + timedelta(seconds=delay)
    if deliver_at is not None:
        return check_time(deliver_at, "deliver_at")
    return None


class ProducerBase:
    """What the sync and asyncio producers share: options, encoding, routing,
    the batch accumulator, and the plans (txnq.database.plans) that register the
    producer and append a batch. A face adds the connection, the locks, the
    waiting and the flushing."""

    _client: Any  # the face's client: whether it is on a cluster's proxy (decided.py)

    def _configure(
        self,
        settings: Settings,
        topic: TopicInfo,
        name: str | None,
        *,
        batching_max_messages: int,
        batching_max_bytes: Size,
        batching_max_delay: Duration,
        max_pending_messages: int,
        send_timeout: Duration,
        routing_mode: str,
        encoding: str,
        transactional_id: str | None,
    ) -> str | None:
        """Check the options; returns the validated transactional id."""
        self._topic = topic
        self.topic = topic.name
        self._transactional: tuple[str, int] | None = None
        # Partitions with transactional appends not flushed yet as far as this
        # producer knows (they committed with synchronous_commit off).
        self._unflushed: set[int] = set()
        if transactional_id is not None:
            transactional_id = validate_name(transactional_id, "transactional id")
            name = transactional_id if name is None else name
        self.name = validate_name(
            name if name is not None else f"producer-{uuid.uuid4().hex[:16]}", "producer"
        )
        for label, value in (
            ("batching_max_messages", batching_max_messages),
            ("max_pending_messages", max_pending_messages),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise errors.InvalidArgumentError(f"{label} must be a positive int, got {value!r}")
        if routing_mode not in ROUTING_MODES:
            raise errors.InvalidArgumentError(
                f"routing_mode must be one of {ROUTING_MODES}, not {routing_mode!r}"
            )
        try:
            "".encode(encoding)
        except (LookupError, TypeError, ValueError):
            raise errors.InvalidArgumentError(f"unknown encoding {encoding!r}") from None
        self._max_messages = batching_max_messages
        self._max_bytes = max(1, parse_size(batching_max_bytes, what="batching_max_bytes"))
        self._max_delay = parse_duration(batching_max_delay, what="batching_max_delay")
        self._max_pending = max_pending_messages
        self._send_timeout = parse_duration(send_timeout, what="send_timeout", allow_zero=False)
        # A send held by a backlog quota (producer_hold) may wait this long on
        # top of send_timeout before its result is given up on.
        self._hold_timeout = settings.backlog_quota_hold_timeout_seconds
        self._result_timeout = self._send_timeout + self._hold_timeout
        self._routing_mode = routing_mode
        self._encoding = encoding
        self._partitions = topic.partitions
        self._partitions_checked = time.monotonic()
        # Round robin starts at a random partition, as Pulsar's router does:
        # producers started together would otherwise write partition 0 first
        # and move in step, each send() waiting on the others' head-row lock
        # (held through their commit; docs/benchmarks.md, 4-client sends).
        self._round_robin = random.randrange(self._partitions)
        self._batches: dict[int, EntryBatch] = {}  # the open batch per partition
        self._sealed: dict[int, list[EntryBatch]] = {}  # full batches waiting, oldest first
        self._pending = 0
        self._last_futures: dict[int, Future[int]] = {}
        self._closed = False
        self._failure: errors.TxnqError | None = None
        # The first error of a batch written since the last flush(), which
        # flush() raises so a failed send_async is never silent.
        self._unreported: errors.TxnqError | None = None
        self._next_sequence: dict[int, int] = {}
        return transactional_id

    # -- public API ---------------------------------------------------------

    @property
    def producer_id(self) -> int:
        return self._producer_id

    @property
    def epoch(self) -> int:
        return self._epoch

    @property
    def transactional(self) -> tuple[str, int] | None:
        """(transactional id, session epoch) of a transactional producer, else None."""
        return self._transactional

    # -- shared logic -------------------------------------------------------

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise errors.ClosedError(
                f"producer {self.name!r} is closed: create a new one with client.producer()"
            )

    def _outgoing(
        self,
        value: object,
        key: object,
        properties: object,
        event_time: object,
        partition: int | None,
        callback: SendCallback | None,
        deliver_after: Duration | None,
        deliver_at: datetime | None,
    ) -> OutgoingMessage:
        """Check and encode one message, in one order for both faces (the
        callback, the message, its delivery time); raises before anything is
        queued. The partition is checked when the message is routed."""
        if callback is not None and not callable(callback):
            raise errors.InvalidArgumentError("callback must be callable(exception, message_id)")
        payload = encode_payload(value, self._encoding)
        if len(payload) > self._topic.max_message_bytes:
            raise errors.MessageTooLargeError(
                f"a payload of {len(payload)} bytes is larger than topic {self.topic!r}'s max "
                f"message size of {self._topic.max_message_bytes} bytes: split it, or raise the "
                "topic's max_message_bytes"
            )
        # Each check runs only for what was given (send_async's hot path).
        key_bytes = None if key is None else encode_key(key)
        props = None if properties is None else encode_properties(properties)
        when = None if event_time is None else check_event_time(event_time)
        if deliver_after is None and deliver_at is None:  # the common case, kept cheap
            return OutgoingMessage(payload, key_bytes, props, when, partition, callback)
        deliver = delivery_time(deliver_after, deliver_at)
        return OutgoingMessage(payload, key_bytes, props, when, partition, callback, deliver)

    @staticmethod
    def _delayed_failed(message: OutgoingMessage, exc: errors.TxnqError) -> None:
        """``send_async`` of a delayed message (written at once) failed: its
        callback has the error, which the caller then raises."""
        if message.callback is not None:
            message.callback(exc, None)

    def _delayed_written(self, message: OutgoingMessage, message_id: MessageId) -> PendingSend:
        """``send_async`` of a delayed message (written at once): a settled PendingSend."""
        future: Future[int] = Future()
        future.set_result(message_id.offset)
        if message.callback is not None:
            message.callback(None, message_id)
        return PendingSend(self.topic, message_id.partition, future, 0)

    def _needs_refresh(self, partition: object) -> bool:
        """Whether to look for partitions added to the topic before routing."""
        if time.monotonic() - self._partitions_checked > PARTITIONS_REFRESH_SECONDS:
            return True
        return (
            partition is not None
            and isinstance(partition, int)
            and not isinstance(partition, bool)
            and partition >= self._partitions
        )

    def _refresh_partitions_plan(self) -> Plan[None]:
        """Follow partitions added to the topic (Pulsar's autoUpdatePartitions):
        key routing then spreads over them too, as Kafka's does."""
        self._partitions_checked = time.monotonic()
        try:
            row = yield Call("topic_partition_count", {"topic_id": self._topic.topic_id})
        except (errors.TxnqError, psycopg.Error):
            return
        if row is not None and row[0] is not None:
            self._partitions = max(self._partitions, int(row[0]))

    def _route(self, key: bytes | None, partition: int | None) -> int:
        if partition is not None:
            if isinstance(partition, bool) or not isinstance(partition, int):
                raise errors.InvalidArgumentError(
                    f"partition must be an int, not {type(partition).__name__}"
                )
            if not 0 <= partition < self._partitions:
                raise errors.InvalidArgumentError(
                    f"topic {self.topic!r} has partitions 0..{self._partitions - 1}, "
                    f"not {partition}"
                )
            return partition
        if key is not None and self._routing_mode == "key_hash":
            return partition_for_key(key, self._partitions)
        return self._round_robin

    def _advance_round_robin(self, key: bytes | None, partition: int | None) -> None:
        if partition is None and key is None:
            self._round_robin = (self._round_robin + 1) % self._partitions

    def _add(
        self,
        target: int,
        payload: bytes,
        message: OutgoingMessage | None,
        txn: TransactionBase | None,
    ) -> tuple[PendingSend, bool]:
        """Queue one message for ``target`` (the face checked the pending
        limit and holds its lock); returns it and whether to wake the flusher.
        ``message`` is None for a plain payload (no key, properties, event
        time or callback: send_async's hot path, which makes no OutgoingMessage)."""
        size = len(payload)
        batch = self._batches.get(target)
        if (
            batch is None
            or batch.txn is not txn
            # _is_full(batch, size), inlined: this runs once per message.
            or len(batch.payloads) >= self._max_messages
            or (batch.payloads and batch.bytes + size > self._max_bytes)
        ):
            if batch is not None:
                # Seal the full batch (written as its own entry) and open a new
                # one, as Kafka's record accumulator; an entry holds one transaction's.
                self._sealed.setdefault(target, []).append(batch)
            batch = self._batches[target] = EntryBatch(txn)
        payloads = batch.payloads
        index = len(payloads)
        payloads.append(payload)
        if message is None:
            if batch.details is not None:
                batch.add_details(index, None)
        else:
            if batch.details is not None or (
                message.key is not None
                or message.properties is not None
                or message.event_time is not None
            ):
                batch.add_details(index, message)
            if message.callback is not None:
                batch.callbacks.append((index, message.callback))
        batch.bytes += size
        self._pending += 1
        # A new batch starts the flusher's delay clock; a full one goes at once
        # (_is_full(batch, 0), inlined).
        pending = PendingSend(self.topic, target, batch.future, index)
        return pending, index == 0 or index + 1 >= self._max_messages or (
            batch.bytes > self._max_bytes
        )

    def _queue_full_error(self) -> errors.TimeoutError:
        """What a send raises when the pending queue did not drain within send_timeout."""
        return errors.TimeoutError(
            f"the producer's pending queue is full ({self._max_pending} messages) "
            "and did not drain in time: PostgreSQL may be unreachable"
        )

    def _is_full(self, batch: EntryBatch, incoming: int) -> bool:
        count = len(batch.payloads)
        return count >= self._max_messages or (
            count > 0 and batch.bytes + incoming > self._max_bytes
        )

    def _ready_partitions(self) -> tuple[list[int], float | None]:
        now = time.monotonic()
        ready: list[int] = [p for p, sealed in self._sealed.items() if sealed]
        wait: float | None = None
        for partition, batch in self._batches.items():
            if partition in ready:
                continue
            due = batch.opened + self._max_delay
            if self._is_full(batch, 0) or due <= now:
                ready.append(partition)
            else:
                wait = due - now if wait is None else min(wait, due - now)
        return ready, wait

    def _take(self, partition: int) -> list[EntryBatch]:
        """The partition's sealed batches and its open batch, in order, to write."""
        batches = self._sealed.pop(partition, [])
        current = self._batches.pop(partition, None)
        if current is not None:
            batches.append(current)
        if batches:
            if partition == self._round_robin:
                self._round_robin = (self._round_robin + 1) % self._partitions
            self._last_futures[partition] = batches[-1].future
        return batches

    def _write_plan(self, partition: int, batch: EntryBatch) -> Plan[BaseException | None]:
        """Append a batch and settle its future; returns its error, if any."""
        try:
            offset = yield from self._append_plan(partition, *batch.columns(), batch.txn)
        except errors.TxnqError as exc:
            if batch.txn is None:
                self._unreported = self._unreported or exc
            else:
                # Recorded before the future settles: a commit that waited for
                # this batch then sees the failure and aborts.
                batch.txn._record_failure(exc)
            batch.future.set_exception(exc)
            return exc
        batch.future.set_result(offset)
        return None

    def _register_plan(self) -> Plan[None]:
        rows = yield Call(
            "register_producer", {"topic_id": self._topic.topic_id, "name": self.name}, "all"
        )
        self._producer_id: int = int(rows[0][0])
        self._epoch: int = int(rows[0][1])
        self._next_sequence = {row[2]: row[3] + 1 for row in rows}

    def _append_plan(
        self,
        partition: int,
        payloads: list[bytes],
        keys: list[bytes | None],
        properties: list[str | None],
        event_times: list[datetime | None],
        txn: TransactionBase | None = None,
        deliver_at: datetime | None = None,
    ) -> Plan[int]:
        """One call of append_v6 (append_delayed_v2 with ``deliver_at``; the
        face holds its I/O lock); the entry offset.

        A broken connection leaves the outcome unknown: reconnect and retry the
        same sequence numbers until ``send_timeout``; the server recognises a
        batch it has already written and returns its original offset.
        """
        if self._failure is not None:
            raise self._failure
        first_sequence = self._next_sequence.get(partition, 0)
        params = append_arguments(
            self._topic.topic_id,
            partition,
            (self._producer_id, self._epoch, first_sequence),
            (payloads, keys, properties, event_times),
            None if txn is None else (txn.txn_id.tc_id, txn.txn_id.seq),
        )
        # In a client transaction the append commits without waiting for the
        # WAL flush: the transaction's decision waits for it (open_txn_v3).
        query = "append_positional" if txn is None else "append_positional_unflushed"
        if deliver_at is not None:
            params = (*params, deliver_at)
            query = "append_delayed_positional"
        key = (self._topic.topic_id, partition) if query == "append_positional" else None
        deadline = time.monotonic() + self._send_timeout
        delay = 0.05
        hold_deadline: float | None = None
        hold_delay = HOLD_RECHECK_MIN_SECONDS
        reregistered = False
        while True:
            try:
                row = yield Call(query, params, raw=True, shard_key=key)
                break
            except (psycopg.OperationalError, errors.ServerUnavailableError) as exc:
                # A lost connection (or the face could not reconnect yet).
                if time.monotonic() + delay > deadline:
                    self._failure = errors.TimeoutError(
                        f"could not write to PostgreSQL for {self._send_timeout}s ({exc}); the "
                        "last batch may or may not be written: create a new producer to go on"
                    )
                    raise self._failure from None
                yield Sleep(delay)
                delay = min(delay * 2, 1.0)
                yield Reconnect()
            except psycopg.Error as exc:
                if not reregistered and (
                    self._expired(exc) or self._lost_unflushed(exc, partition)
                ):
                    # The history purge forgot this producer after it sat idle
                    # for PRODUCER_EXPIRY_SECONDS (Kafka's producer id
                    # expiration), or a crash of PostgreSQL lost unflushed
                    # appends of a transaction (which cannot commit now):
                    # register again and send the batch, never written, from
                    # the sequences the server has.
                    reregistered = True
                    yield from self._register_plan()
                    first_sequence = self._next_sequence.get(partition, 0)
                    params = (
                        *params[:2],
                        self._producer_id,
                        self._epoch,
                        first_sequence,
                        *params[5:],
                    )
                    continue
                if exc.sqlstate == BACKLOG_QUOTA_HOLD:
                    # Policy producer_hold: block (this producer's sends wait
                    # behind the I/O lock), re-check the quota, retry the same
                    # batch; raise once the hold timeout has passed.
                    now = time.monotonic()
                    if hold_deadline is None:
                        hold_deadline = now + self._hold_timeout
                    if now < hold_deadline:
                        yield Sleep(min(hold_delay, hold_deadline - now))
                        hold_delay = min(hold_delay * 2, HOLD_RECHECK_MAX_SECONDS)
                        yield from self._recheck_backlog_quota_plan()
                        continue
                    raise self._hold_expired(exc) from None
                mapped = translate(exc) or errors.TxnqError(f"append failed: {exc}")
                if isinstance(mapped, errors.ProducerFencedError):
                    self._failure = mapped
                raise mapped from None
        assert row is not None
        offset, _publish_time, _duplicate, roll_entry_log = row
        self._next_sequence[partition] = first_sequence + len(payloads)
        if txn is None:
            self._unflushed.clear()  # a durable commit flushed every unflushed append too
        else:
            self._unflushed.add(partition)
            txn._wrote = True  # its commit carries no batch now (txnq.producer.decided)
        if roll_entry_log:
            try:
                yield Call("roll_entry_log", {"force": False}, "none")
            except (errors.TxnqError, psycopg.Error):
                pass  # a hint only: workers roll the entry log too
        # A duplicate older than the five remembered batches has no known offset.
        return -1 if offset is None else int(offset)

    def _lost_unflushed(self, exc: psycopg.Error, partition: int) -> bool:
        """Did the append fail on a sequence gap because a crash of PostgreSQL lost this
        producer's unflushed transactional appends to the partition? Only then is the
        gap no loss of anything that could still be committed."""
        return exc.sqlstate == OUT_OF_ORDER_SEQUENCE and partition in self._unflushed

    def _expired(self, exc: psycopg.Error) -> bool:
        """Did the append fail because this (non-transactional) producer's
        registration was purged? append_v6 says TQ005 "... is not registered
        on topic ..." then, and nothing of the batch was written."""
        return (
            exc.sqlstate == INVALID_ARGUMENT
            and self._transactional is None
            and "is not registered on topic" in (exc.diag.message_primary or "")
        )

    def _recheck_backlog_quota_plan(self) -> Plan[None]:
        """While held: check the topic's backlog quota now (the scheduler checks only
        every BACKLOG_QUOTA_CHECK_INTERVAL_SECONDS): the send goes on once it fits."""
        try:
            yield Call("check_backlog_quota", {"topic_id": self._topic.topic_id}, "all")
        except (errors.TxnqError, psycopg.Error):
            pass  # the retried append reports a lost connection

    def _hold_expired(self, exc: psycopg.Error) -> errors.BacklogQuotaExceededError:
        diag = exc.diag
        reason = diag.message_primary or f"topic {self.topic!r} is over its backlog quota"
        return errors.BacklogQuotaExceededError(
            f"{reason}; the send was held for {self._hold_timeout:g}s "
            "(BACKLOG_QUOTA_HOLD_TIMEOUT_SECONDS) and the backlog did not shrink enough: "
            f"nothing of this batch was written ({diag.message_hint})"
        )

    def _stopped(self, exc: BaseException, taken: list[EntryBatch]) -> errors.TxnqError:
        """Writing stopped on ``exc``, an error that is not a txnq error (those
        settle their batch): the producer fails -- every later call raises
        BackgroundFailureError naming ``exc``, close() still works -- and so do
        ``taken`` (batches taken from the queue, not written) and every batch
        still queued, so nothing waits for them. Returns the failure. The face
        holds its lock (the queue's) and wakes whoever waits for room."""
        if self._failure is None:
            stopped = errors.BackgroundFailureError(
                f"producer {self.name!r} of topic {self.topic!r} stopped writing: "
                f"{type(exc).__name__}: {exc}. The messages it had not written were not sent "
                "(their PendingSend and callbacks have this error): close it and create a "
                "new producer"
            )
            stopped.__cause__ = exc
            log.error("%s", stopped, exc_info=exc)
            self._failure = stopped
        failure = self._failure
        queued = [
            (partition, batch)
            for partition in sorted({*self._sealed, *self._batches})
            for batch in self._take(partition)
        ]
        for batch in [b for b in taken if not b.future.done()] + [b for _, b in queued]:
            if batch.txn is not None:
                with contextlib.suppress(Exception):  # settling the futures comes first
                    batch.txn._record_failure(failure)  # its commit aborts
            if not batch.future.done():
                batch.future.set_exception(failure)
        for partition, batch in queued:
            self._pending -= len(batch.payloads)
            self._run_callbacks(partition, batch)
        return failure

    def _write_failed(
        self, exc: BaseException, batches: list[EntryBatch], index: int
    ) -> errors.TxnqError:
        """Writing ``batches[index]`` (taken from the queue with the ones
        after it) stopped on ``exc``: the producer fails (:meth:`_stopped`),
        and the batches after it leave the pending count (the face's
        ``finally`` takes the failed one off). The face holds its lock."""
        failure = self._stopped(exc, batches[index:])
        self._pending -= sum(len(b.payloads) for b in batches[index + 1 :])
        return failure

    def _raise_unreported(self) -> None:
        """flush(): raise the first error of a batch written since the last
        flush (outside a transaction), once. The face holds its lock."""
        unreported, self._unreported = self._unreported, None
        if unreported is not None:
            raise unreported

    def _run_callbacks(self, partition: int, batch: EntryBatch) -> None:
        if not batch.callbacks:
            return
        exc = batch.future.exception()
        for index, callback in batch.callbacks:
            message_id = (
                None if exc else MessageId(self.topic, partition, batch.future.result(), index)
            )
            with contextlib.suppress(Exception):
                callback(exc, message_id)
