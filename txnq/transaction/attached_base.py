"""Application transactions: produce and acknowledge inside the application's
own PostgreSQL transaction, so the messages, the acks and the application's
own rows commit or roll back together (docs/exactly-once.md).

``txnq.attach(conn)`` or ``client.new_transaction(connection=conn)`` (a
psycopg 3 connection, a SQLAlchemy ``Connection`` or ``Session``) gives an
:class:`AttachedTransaction`. Everything it does runs on ``conn``:

- ``producer.send_async(..., txn=txn)`` and ``txn.send(topic, ...)`` *stage*
  messages (``txnq.stage_send_v2``): no offset is taken, no head row locked;
- ``consumer.acknowledge(msg, txn=txn)`` stages acks (``txnq.stage_ack_v2``),
  checking that nobody acknowledged the messages yet;
- ``txn.commit()`` publishes what was staged (``txnq.publish_staged_v2``): one
  append per partition, the acks applied strictly under the cursor lock. A
  deferred trigger runs the same function inside the caller's COMMIT, so
  whatever was staged is published even when ``txn.commit()`` is not called.

The caller commits (or rolls back) its own transaction: txnq never does.
Until then nothing is visible to anyone; after a rollback nothing is left.

The protocol is kept apart from the waiting: :class:`AttachedBase` holds it as
plans (``txnq.database.plans``), which ``txnq.AttachedTransaction``
(txnq.transaction.attached_sync) runs on the caller's psycopg ``Connection``
and ``txnq.aio.AttachedTransaction`` (txnq.transaction.attached_aio) on an
``AsyncConnection`` (docs/asyncio.md).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import TransactionStatus

from txnq import errors
from txnq.database.connections import libpq_dsn
from txnq.database.plans import Batch, Call, Plan
from txnq.durations import Duration, parse_duration
from txnq.messages import (
    MAX_PARTITION,
    MessageId,
    encode_key,
    encode_payload,
    encode_properties,
)
from txnq.names import validate_name
from txnq.transaction.protocol import OutgoingMessage
from txnq.transaction.staging import (
    StagedBatch,
    StagedSend,
    settle_published,
    stage_ack_params,
    stage_send_params,
)

if TYPE_CHECKING:
    from txnq.messages import Message

AttachedT = TypeVar("AttachedT", bound="AttachedBase")


# -- the application's connection ---------------------------------------------


def _check_joinable(conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any]) -> None:
    if conn.closed:
        raise errors.InvalidArgumentError("the connection is closed: attach an open connection")
    status = conn.info.transaction_status
    if status == TransactionStatus.INERROR:
        raise errors.InvalidArgumentError(
            "the connection's transaction has failed: roll it back, then start again"
        )
    if conn.autocommit and status == TransactionStatus.IDLE:
        raise errors.InvalidArgumentError(
            "the connection is in autocommit mode outside a transaction, so every statement "
            "would commit on its own: open one with `with conn.transaction():` first"
        )


def _same_database(
    conn: psycopg.Connection[Any] | psycopg.AsyncConnection[Any], client: Any
) -> None:
    """A producer or consumer may join only a connection to its own database."""
    dbname, port = _database_of(client.dsn)
    if (dbname is not None and str(dbname) != conn.info.dbname) or (
        port is not None and int(str(port)) != conn.info.port
    ):
        raise errors.InvalidArgumentError(
            f"the attached connection is to database {conn.info.dbname!r} (port "
            f"{conn.info.port}), not the producer's or consumer's database: attach a "
            "connection to the txnq database"
        )


@functools.lru_cache(maxsize=64)
def _database_of(dsn: str) -> tuple[object, object]:
    try:
        params = conninfo_to_dict(libpq_dsn(dsn))
    except (psycopg.Error, errors.TxnqError):
        return None, None
    return params.get("dbname"), params.get("port")


# Application transactions stage acks that publish_staged_v2 applies to the
# cursor at the caller's COMMIT; a shared subscription's acks delete claims
# instead (ack_shared_v4), which staging does not do yet, so the two do not mix.
ATTACHED_SHARED_HINT = (
    "application transactions (attach, consumer.process) acknowledge on exclusive and "
    "failover subscriptions only; on a shared or key_shared subscription acknowledge with a "
    "txnq transaction (client.new_transaction()) instead"
)


# -- the transaction -----------------------------------------------------------


class AttachedBase:
    """What the sync and asyncio application transactions share: state, checks
    and the plans (txnq.database.plans) that stage, publish and discard on the caller's
    connection. A face adds the connection type and the waiting."""

    connection: Any

    def _setup(self, conn: Any, client: Any, current: Callable[[], object] | None = None) -> None:
        _check_joinable(conn)
        self.connection = conn
        self._client = client
        self._state = "OPEN"
        self._queued: dict[tuple[int, int], StagedBatch] = {}
        self._staged: dict[int, StagedBatch] = {}
        self._consumers: dict[int, tuple[Any, set[int]]] = {}
        self._outer: AttachedBase | None = None
        # The caller's transaction this one lives in: begun already (a
        # statement ran in it), or begun by this transaction's first statement
        # on an idle connection outside autocommit (psycopg's implicit BEGIN).
        # Once it has begun, an idle connection means it ended: nothing may run
        # then, or it would open a new implicit transaction that nobody commits
        # (holding head-row locks after a publish).
        self._joined = conn.info.transaction_status != TransactionStatus.IDLE
        self._callers_transaction = current
        self._token = None if current is None else current()
        self._dropped = 0  # messages queued by send_async, never staged: the caller ended first

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._state.lower()})"

    @property
    def state(self) -> str:
        """OPEN; COMMITTED once ``commit()`` published (visible when the caller
        commits); ABORTED after ``abort()``; ENDED once the caller's own
        transaction was committed or rolled back without either (txnq cannot
        tell which; found at the next use)."""
        return self._state

    def _joined_connection(self) -> Any:
        """The caller's connection for a statement of this transaction: running
        it joins (or on an idle connection outside autocommit begins) the
        caller's transaction."""
        self._joined = True
        return self.connection

    def _caller_ended(self) -> bool:
        """Whether the caller's transaction this one joined is over: the
        connection is closed, idle again, or (SQLAlchemy) in another transaction."""
        conn = self.connection
        if conn.closed:
            return True
        current = self._callers_transaction
        if current is not None and current() is not self._token:
            return True
        if conn.info.transaction_status == TransactionStatus.IDLE:
            return bool(self._joined)
        self._joined = True
        return False

    def _end_with_caller(self) -> None:
        """The caller's transaction ended without ``commit()`` or ``abort()``:
        what it staged was published (a commit, by the deferred trigger) or
        discarded (a rollback), unknown which; what ``send_async`` still queued
        was never staged. Their results say so instead of waiting for good."""
        self._state = "ENDED"
        never = errors.TransactionEndedError(
            "the connection's transaction ended before this message was staged, so it was "
            "not sent: call txn.commit() (or txn.flush()) before the connection commits"
        )
        unknown = errors.TransactionEndedError(
            "the connection's transaction ended without txn.commit(): this message was "
            "published if it committed and dropped if it rolled back; its offset is unknown"
        )
        self._dropped = sum(len(batch.payloads) for batch in self._queued.values())
        for failure, batches in ((never, self._queued), (unknown, self._staged)):
            for batch in batches.values():
                if not batch.future.done():
                    batch.future.set_exception(failure)
            batches.clear()

    def _send_plan(
        self,
        topic: str,
        value: object,
        key: str | bytes | None,
        properties: dict[str, str] | None,
        partition: int | None,
        encoding: str,
    ) -> Plan[None]:
        self._check_open()
        validate_name(topic, "topic")
        if partition is not None and (
            isinstance(partition, bool)
            or not isinstance(partition, int)
            or not 0 <= partition <= MAX_PARTITION
        ):
            raise errors.InvalidArgumentError(
                f"partition must be an int of the topic's partitions (0 or more), not {partition!r}"
            )
        payload = encode_payload(value, encoding)
        yield from self._flush_plan()  # messages queued before this one keep their place
        params = {
            "topic": topic,
            "payload": payload,
            "key": encode_key(key),
            "properties": encode_properties(properties),
            "partition": partition,
        }
        yield Call("send_at_commit", params, "none")

    def _commit_plan(self) -> Plan[None]:
        self._check_open()
        yield from self._flush_plan()
        if not self._joined:
            # The caller's transaction has not begun and nothing was staged:
            # nothing to publish, and no implicit transaction to begin for it.
            self._state = "COMMITTED"
            return
        rows = yield Call("publish_staged", {}, "all")
        settled = settle_published(rows, self._staged)
        self._state = "COMMITTED"
        for batch in settled:
            offset, first = batch.future.result()
            for index, callback in batch.callbacks:
                with contextlib.suppress(Exception):
                    callback(None, MessageId(batch.topic, batch.partition, offset, first + index))

    def _abort_plan(self) -> Plan[None]:
        if self._state == "ABORTED":
            return
        # Discarding is only for the caller's transaction this one joined:
        # after it ended, a statement would begin a new one that nobody ends.
        joined = self._state != "ENDED" and not self._caller_ended()
        if self._state == "COMMITTED" and joined:
            raise errors.TransactionEndedError(
                "this application transaction was committed: what it sent and acknowledged "
                "is published in the connection's transaction, so roll that back to undo it "
                "(then abort() has the consumers deliver those messages again)"
            )
        self._state = "ABORTED"
        failure = errors.TransactionAbortedError("the application transaction was aborted")
        for batch in [*self._queued.values(), *self._staged.values()]:
            if not batch.future.done():
                batch.future.set_exception(failure)
        self._queued.clear()
        self._staged.clear()
        conn = self.connection
        if joined and conn.info.transaction_status == TransactionStatus.INTRANS:
            with contextlib.suppress(psycopg.Error, errors.TxnqError):
                yield Call("discard_staged", {}, "none")
        self.rewind_consumers()

    def rewind_consumers(self) -> None:
        """The caller rolled back after acknowledging in this transaction: have
        its consumers deliver the unacknowledged messages again (their read
        position goes back to the cursor)."""
        for consumer, partitions in self._consumers.values():
            consumer._rewind(partitions)

    def _enter(self) -> None:
        self._check_open()
        # Inside the block, attach(conn) returns this transaction.
        with _ACTIVE_LOCK:
            self._outer = _ACTIVE.get(id(self.connection))
            _ACTIVE[id(self.connection)] = self

    def _exit(self, failed: bool) -> bool:
        """Leave the ``with`` block; whether the face is to commit now (or,
        ``failed``, abort). Not when the caller's transaction ended inside the
        block: what was staged went with it; messages ``send_async`` had only
        queued were lost, which raises."""
        with _ACTIVE_LOCK:
            if self._outer is None:
                _ACTIVE.pop(id(self.connection), None)
            else:
                _ACTIVE[id(self.connection)] = self._outer
        if failed:
            return self._state == "OPEN"
        if self._usable():
            return True
        if self._state == "ENDED" and self._dropped:
            raise errors.TransactionEndedError(
                f"the connection's transaction ended inside the `with` block before "
                f"{self._dropped} message(s) queued by send_async were staged, so they were not "
                "sent: commit the connection after the block, or call txn.flush() first"
            )
        return False

    def _flush_plan(self) -> Plan[None]:
        """Stage the messages ``send_async`` queued in this transaction."""
        self._check_open()
        if not self._queued:
            return
        # One round trip for all partitions (a pipeline), in partition order.
        batches = [self._queued.pop(key) for key in sorted(self._queued)]
        rows = yield Batch(
            [
                Call(
                    "stage_send",
                    stage_send_params(
                        b.topic_id, b.partition, b.payloads, b.keys, b.properties, b.event_times
                    ),
                )
                for b in batches
            ],
            pipeline=len(batches) > 1,
        )
        for batch, row in zip(batches, rows, strict=True):
            assert row is not None
            self._staged[int(row[0])] = batch

    def _queue_send(
        self, producer: Any, partition: int, message: OutgoingMessage
    ) -> tuple[StagedSend, StagedBatch | None]:
        """Queue one message routed to ``partition``; returns it and a full
        batch to stage now, if any."""
        self._check_open()
        _same_database(self.connection, producer._client)
        slot = (producer._topic.topic_id, partition)
        batch = self._queued.get(slot)
        if batch is None:
            batch = self._queued[slot] = StagedBatch(producer.topic, slot[0], partition)
        index = len(batch.payloads)
        batch.payloads.append(message.payload)
        batch.keys.append(message.key)
        batch.properties.append(message.properties)
        batch.event_times.append(message.event_time)
        if message.callback is not None:
            batch.callbacks.append((index, message.callback))
        full = self._queued.pop(slot) if len(batch.payloads) >= producer._max_messages else None
        return StagedSend(batch, index), full

    # -- what an application transaction refuses (the transaction protocol) ---

    #: How the face's docs say to get a staged message's MessageId.
    _result_hint = "its result() resolves at txn.commit()"
    #: How the face attaches (for messages).
    _attach_name = "txnq.attach"

    def _check_client(self, client: object) -> None:
        """A producer's or consumer's database is checked against the
        caller's connection where a send or an ack is staged (after this
        transaction's own state), not here."""

    def _refuse_send(self) -> NoReturn:
        """``producer.send(txn=self)`` returns an offset, which a staged message lacks."""
        raise errors.InvalidArgumentError(
            "send() returns the message's offset, which a message of an application "
            "transaction gets only when it commits: use send_async(..., txn=txn) "
            f"({self._result_hint}) or txn.send(topic, value)"
        )

    def _check_not_delayed(self, message: OutgoingMessage) -> None:
        if message.deliver_at is not None:
            raise errors.InvalidArgumentError(
                "deliver_after/deliver_at do not apply to an application transaction "
                f"({self._attach_name}): its messages are appended when the caller commits; "
                "send a delayed message outside it or in a txnq transaction"
            )

    def _refuse_cumulative(self) -> NoReturn:
        raise errors.InvalidArgumentError(
            "a cumulative ack cannot be checked for exactly-once in an application "
            "transaction: acknowledge the messages individually (acknowledge(list))"
        )

    def _stage_plan(self, batch: StagedBatch) -> Plan[None]:
        params = stage_send_params(
            batch.topic_id,
            batch.partition,
            batch.payloads,
            batch.keys,
            batch.properties,
            batch.event_times,
        )
        row = yield Call("stage_send", params)
        assert row is not None
        self._staged[int(row[0])] = batch

    def _stage_acks_plan(
        self,
        consumer: Any,
        per_partition: dict[int, tuple[list[int], list[int], list[int | None]]],
    ) -> Plan[None]:
        self._check_open()
        _same_database(self.connection, consumer._client)
        _, partitions = self._consumers.setdefault(id(consumer), (consumer, set()))
        partitions.update(per_partition)
        yield Batch(
            [
                Call(
                    "stage_ack",
                    stage_ack_params(
                        consumer._topic_id,
                        partition,
                        consumer.subscription_id,
                        offsets,
                        indexes,
                        sizes,
                    ),
                    "none",
                )
                for partition, (offsets, indexes, sizes) in sorted(per_partition.items())
            ],
            pipeline=len(per_partition) > 1,
        )

    def _usable(self) -> bool:
        """Open, and the caller's transaction it joined goes on."""
        if self._state == "OPEN" and self._caller_ended():
            self._end_with_caller()
        return self._state == "OPEN"

    def _check_open(self) -> None:
        if not self._usable():
            how = (
                "the connection's own transaction was committed or rolled back"
                if self._state == "ENDED"
                else self._state.lower()
            )
            raise errors.TransactionEndedError(
                f"this application transaction has ended ({how}): it takes no more sends "
                "or acks; attach the connection again inside the next transaction"
            )
        _check_joinable(self.connection)


# The transaction of each connection's open `with txnq.attach(conn)` block or
# process() batch, by id of the psycopg connection.
_ACTIVE: dict[int, AttachedBase] = {}
_ACTIVE_LOCK = threading.Lock()


def active_transaction(conn: object, face: type[AttachedT]) -> AttachedT | None:
    """The usable transaction of ``conn``'s open ``with attach(conn)`` block
    or ``process()`` batch, if it is of ``face``: what ``attach(conn)`` returns
    there, so code deep in the application can join it by the connection alone."""
    with _ACTIVE_LOCK:
        active = _ACTIVE.get(id(conn))
    if isinstance(active, face) and active.connection is conn and active._usable():
        return active
    return None


def process_options(batch_size: object, idle_timeout: Duration | None) -> tuple[int, float | None]:
    """``process()``'s ``batch_size`` and ``idle_timeout`` (seconds or None), checked."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise errors.InvalidArgumentError(f"batch_size must be a positive int, got {batch_size!r}")
    idle = None if idle_timeout is None else parse_duration(idle_timeout, what="idle_timeout")
    return batch_size, idle


def check_between_batches(consumer: Any, batch: list[Message], in_transaction: bool) -> None:
    """process() starts each batch's transaction itself: the connection must be
    idle between batches (else the batch goes back and this raises)."""
    if in_transaction:
        consumer._rewind({m.message_id.partition for m in batch})
        raise errors.InvalidArgumentError(
            "process() commits one transaction per batch, so the connection must not be "
            "in a transaction when the loop asks for the next message: commit or roll "
            "back what the loop body began"
        )
