"""The consumer: a session on a subscription that fetches entries of its
partitions into a receive queue (prefetch), delivers their messages, and
acknowledges them into the subscription's cursors.

Subscription types (Pulsar's): ``exclusive`` — one consumer; a second one is
refused with ConsumerBusyError. ``failover`` — many consumers, one active per
partition: with consumers sorted by (priority, name), partition ``p`` belongs
to consumer ``p mod n``; when a consumer goes away (close, or its lease runs
out) the next heartbeat of the others hands its partitions over, and what it
had not acknowledged is delivered again. ``shared`` — many consumers, each
message to one of them at a time: consumers claim messages in
``txnq.claims`` (``txnq.claim_v1``, FOR UPDATE SKIP LOCKED), acknowledge them
individually (a cumulative ack is an error, as in Pulsar), and what a consumer
does not acknowledge comes back: after ``negative_acknowledge`` (with an
optional exponential ``negative_ack_backoff``), after ``ack_timeout`` (off by
default), or when the consumer dies (its lease runs out). A
``dead_letter_policy`` moves a message delivered more than
``max_redeliver_count`` + 1 times to ``<topic>-<subscription>-DLQ``;
``reconsume_later`` acknowledges a message and sends a copy to
``<topic>-<subscription>-RETRY``, which the consumer also reads.
``key_shared`` — shared, but the messages of one key go to one consumer (a
consistent hash of the key over the live consumers), in order, also while
consumers come and go. Delayed messages (``send(..., deliver_after=...)``)
wait on shared and key_shared subscriptions. docs/subscriptions.md has the
details and the guarantees.

Liveness is a lease renewed by a heartbeat (every third of ``lease``), not a
guess. New data wakes a waiting consumer through LISTEN/NOTIFY — one NOTIFY
per wait, registered in ``txnq.consumer_waiters`` — and a poll every
``poll_interval`` is the fallback (LISTEN does not pass PgBouncer's
transaction pooling).
"""

from __future__ import annotations

import abc
import dataclasses
import heapq
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

import psycopg
from psycopg import sql

from txnq import errors
from txnq.admin import seek_target
from txnq.app_transaction import _ATTACHED_SHARED_HINT
from txnq.database.connections import connect
from txnq.database.plans import (
    Batch,
    Call,
    Listen,
    Plan,
    Reconnect,
    Sleep,
    SyncIO,
    WaitRoom,
    retried_once,
    run,
)
from txnq.durations import Duration, parse_duration
from txnq.failpoints import raise_if_armed
from txnq.messages import (
    LenientRows,
    Message,
    MessageId,
    UndecodableMessage,
    check_batch_size,
    check_message_id,
    checked,
)
from txnq.names import validate_name

if TYPE_CHECKING:
    from txnq.admin import Admin, TopicInfo
    from txnq.app_transaction import AttachedTransaction
    from txnq.client import Client
    from txnq.producer import Producer
    from txnq.settings import Settings
    from txnq.transaction import Transaction, TransactionBase, TxnId

T = TypeVar("T")

log = logging.getLogger("txnq.consumer")

SUBSCRIPTION_TYPES = ("exclusive", "failover", "shared", "key_shared")
SHARED_TYPES = ("shared", "key_shared")
ISOLATIONS = ("read_committed", "read_uncommitted")
INITIAL_POSITIONS = ("earliest", "latest")
FETCH_MAX_BYTES = 8 * 1024 * 1024
#: Most messages one claim_v1 call takes (shared and key_shared subscriptions).
CLAIM_MAX_MESSAGES = 500


@dataclasses.dataclass(frozen=True)
class Backoff:
    """Exponential redelivery delay for negative acknowledgements (Pulsar's
    MultiplierRedeliveryBackoff): ``min_delay * multiplier ** redelivery_count``,
    at most ``max_delay``."""

    min_delay: Duration = "1s"
    max_delay: Duration = "60s"
    multiplier: float = 2.0

    def __post_init__(self) -> None:
        low = parse_duration(self.min_delay, what="min_delay")
        high = parse_duration(self.max_delay, what="max_delay")
        if high < low:
            raise errors.InvalidArgumentError(
                f"max_delay ({high:g}s) must not be below min_delay ({low:g}s)"
            )
        if (
            isinstance(self.multiplier, bool)
            or not isinstance(self.multiplier, int | float)
            or not 1 <= self.multiplier < float("inf")
        ):
            raise errors.InvalidArgumentError(
                f"multiplier must be a finite number of at least 1, got {self.multiplier!r}"
            )

    def delay(self, redelivery_count: int) -> float:
        """Seconds before a message nacked at this redelivery count comes back."""
        if isinstance(redelivery_count, bool) or not isinstance(redelivery_count, int):
            raise errors.InvalidArgumentError(
                f"redelivery_count must be an int, not {type(redelivery_count).__name__}"
            )
        low = parse_duration(self.min_delay, what="min_delay")
        high = parse_duration(self.max_delay, what="max_delay")
        try:
            grown = low * float(self.multiplier) ** min(max(redelivery_count, 0), 64)
        except OverflowError:  # a large multiplier: the cap applies
            return high
        return float(min(high, grown))


@dataclasses.dataclass(frozen=True)
class DeadLetterPolicy:
    """Pulsar's DeadLetterPolicy, for shared and key_shared subscriptions: a
    message delivered more than ``max_redeliver_count`` + 1 times goes to
    ``dead_letter_topic`` (default ``<topic>-<subscription>-DLQ``, created
    when missing) with its payload, key and properties plus REAL_TOPIC,
    REAL_SUBSCRIPTION, ORIGIN_MESSAGE_ID, REDELIVERY_COUNT and
    DEAD_LETTER_REASON, and is acknowledged on the subscription in the same
    PostgreSQL transaction. ``retry_letter_topic`` (default
    ``<topic>-<subscription>-RETRY``) is where ``reconsume_later`` sends."""

    max_redeliver_count: int
    dead_letter_topic: str | None = None
    retry_letter_topic: str | None = None

    def __post_init__(self) -> None:
        value = self.max_redeliver_count
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 2**31 - 1:
            raise errors.InvalidArgumentError(
                f"max_redeliver_count must be an int from 0 to 2**31 - 1, got {value!r}"
            )
        for label, name in (
            ("dead_letter_topic", self.dead_letter_topic),
            ("retry_letter_topic", self.retry_letter_topic),
        ):
            if name is not None:
                validate_name(name, label.replace("_", " "))


_ATTACHED_TYPE: type | None = None


def _attached(txn: object) -> bool:
    """Whether ``txn`` is an application transaction (txnq.attach)."""
    global _ATTACHED_TYPE
    if _ATTACHED_TYPE is None:
        from txnq.app_transaction import AttachedTransaction

        _ATTACHED_TYPE = AttachedTransaction
    return isinstance(txn, _ATTACHED_TYPE)


class ConsumerBase(abc.ABC):
    """What the sync and asyncio consumers share: options, the receive-queue
    state, message decoding, and every exchange with PostgreSQL as a plan
    (txnq.plans): subscribing, the heartbeat, fetching and claiming, acks,
    nacks, seeks and leaving. A face adds the connections, the fetch thread
    or task, the waiting, and ``_cond`` (a ``threading.Condition`` in the sync
    face; in the asyncio face a lock-free stand-in whose ``notify_all`` wakes
    waiting receivers)."""

    _cond: Any
    _queue: deque[Message]

    def _configure(
        self,
        settings: Settings,
        topic: TopicInfo,
        subscription: str,
        subscription_type: str,
        *,
        initial_position: str,
        isolation: str,
        consumer_name: str | None,
        priority: int,
        receiver_queue_size: int,
        negative_ack_redelivery_delay: Duration,
        lease: Duration | None,
        poll_interval: Duration | None,
        ack_timeout: Duration | None,
        negative_ack_backoff: Backoff | None,
        dead_letter_policy: DeadLetterPolicy | None,
        retry_enable: bool,
    ) -> None:
        """Check the options and set up the state; no I/O."""
        self.subscription = validate_name(subscription, "subscription")
        if subscription_type not in SUBSCRIPTION_TYPES:
            raise errors.InvalidArgumentError(
                f"subscription_type must be one of {SUBSCRIPTION_TYPES}, not {subscription_type!r}"
            )
        self._shared = subscription_type in SHARED_TYPES
        if not self._shared:
            for label, option in (
                ("ack_timeout", ack_timeout),
                ("negative_ack_backoff", negative_ack_backoff),
                ("dead_letter_policy", dead_letter_policy),
            ):
                if option is not None:
                    raise errors.InvalidArgumentError(
                        f"{label} is for shared and key_shared subscriptions, "
                        f"not {subscription_type} ones"
                    )
            if retry_enable:
                raise errors.InvalidArgumentError(
                    f"retry_enable is for shared and key_shared subscriptions, "
                    f"not {subscription_type} ones"
                )
        if negative_ack_backoff is not None and not isinstance(negative_ack_backoff, Backoff):
            raise errors.InvalidArgumentError(
                "negative_ack_backoff must be a txnq.Backoff, "
                f"not {type(negative_ack_backoff).__name__}"
            )
        if dead_letter_policy is not None and not isinstance(dead_letter_policy, DeadLetterPolicy):
            raise errors.InvalidArgumentError(
                "dead_letter_policy must be a txnq.DeadLetterPolicy, "
                f"not {type(dead_letter_policy).__name__}"
            )
        if not isinstance(retry_enable, bool):
            raise errors.InvalidArgumentError(f"retry_enable must be a bool, got {retry_enable!r}")
        self._ack_timeout = (
            None
            if ack_timeout is None
            else parse_duration(ack_timeout, what="ack_timeout", allow_zero=False)
        )
        self._backoff = negative_ack_backoff
        if initial_position not in INITIAL_POSITIONS:
            raise errors.InvalidArgumentError(
                f"initial_position must be one of {INITIAL_POSITIONS}, not {initial_position!r}"
            )
        if isolation not in ISOLATIONS:
            raise errors.InvalidArgumentError(
                f"isolation must be one of {ISOLATIONS}, not {isolation!r}"
            )
        for label, value in (("receiver_queue_size", receiver_queue_size), ("priority", priority)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise errors.InvalidArgumentError(f"{label} must be an int, got {value!r}")
        if receiver_queue_size < 1:
            raise errors.InvalidArgumentError("receiver_queue_size must be at least 1")
        if not -(2**31) <= priority <= 2**31 - 1:
            raise errors.InvalidArgumentError(
                f"priority must be an int from -2**31 to 2**31 - 1, got {priority}"
            )
        self.subscription_type = subscription_type
        self.isolation = isolation
        self._initial_position = initial_position
        self.name = validate_name(
            consumer_name if consumer_name is not None else f"consumer-{uuid.uuid4().hex[:12]}",
            "consumer",
        )
        self._priority = priority
        self._queue_size = receiver_queue_size
        self._nack_delay = parse_duration(
            negative_ack_redelivery_delay, what="negative_ack_redelivery_delay"
        )
        self._lease = parse_duration(
            settings.consumer_lease_seconds if lease is None else lease,
            what="lease",
            allow_zero=False,
        )
        self._poll_interval = parse_duration(
            settings.poll_interval_seconds if poll_interval is None else poll_interval,
            what="poll_interval",
            allow_zero=False,
        )
        self._topic = topic
        self.topic = topic.name
        self._topic_id = topic.topic_id
        self._channel = f"txnq_topic_{self._topic_id}"
        self._dead_letter_policy = dead_letter_policy
        self._dead_letter_topic_id: int | None = None
        self._retry_topic: str | None = None
        self._assigned: set[int] = set()
        self._read_position: dict[int, int] = {}  # highest offset fetched per partition
        self._generation: dict[int, int] = {}  # the cursor generation we follow
        self._epoch: dict[int, int] = {}  # local: grows when a partition's position resets
        self._batch_sizes: dict[tuple[int, int], int] = {}  # delivered batch entries
        # (partition, offset) of fetched entries -> the cursor generation they were fetched under
        self._fetched_generation: dict[tuple[int, int], int] = {}
        self._nacked: list[tuple[float, int, Message]] = []
        # Acknowledged outside a transaction, as Pulsar's ack tracker keeps them
        # for its isDuplicate check: (partition, offset, batch index; -1 the
        # whole entry) above the last mark-delete offset seen, and that offset
        # per partition. A fetch can still bring such a message back (one that
        # ran before the ack committed, or a refetch after a rewind that the
        # queue already held): it is never queued or handed out again.
        self._acked: set[tuple[int, int, int]] = set()
        self._mark_delete_seen: dict[int, int] = {}
        # Partitions acknowledged in each open transaction: rewound if it aborts.
        self._txn_partitions: dict[TxnId, set[int]] = {}
        # Shared types: messages a transactional ack failed on, per transaction
        # (partition -> offsets, batch indexes): given back if it aborts.
        self._txn_unacked: dict[TxnId, dict[int, tuple[list[int], list[int]]]] = {}
        self._nack_counter = 0
        self._redeliveries: dict[MessageId, int] = {}
        self._closed = False
        self._failure: errors.TxnqError | None = None
        self._heartbeat_due = 0.0
        # Shared types: until when (monotonic) the lease surely holds -- the
        # send time of the last successful heartbeat plus the lease, never later
        # than the server's deadline. Past it, queued messages may have been
        # released to other consumers, so none is handed out (see _deliverable).
        self._lease_holds_until = float("inf")

    def _letter_topics(self) -> tuple[str | None, str | None]:
        """(dead-letter topic, retry-letter topic) this consumer needs, if any."""
        policy = self._dead_letter_policy
        dlq = None
        if policy is not None:
            dlq = policy.dead_letter_topic or f"{self.topic}-{self.subscription}-DLQ"
        return dlq, self._retry_topic

    # -- the face's part ----------------------------------------------------

    @abc.abstractmethod
    def _wake_fetcher(self) -> None:
        """Interrupt the fetch loop's wait (each face: a NOTIFY or a task)."""

    @abc.abstractmethod
    def _checked_txn(self, txn: object) -> TransactionBase:
        """``txn`` checked as a transaction of this face (sync or asyncio)."""

    # -- receiving ----------------------------------------------------------

    @property
    def assigned_partitions(self) -> list[int]:
        """The partitions this consumer currently reads (all, unless failover)."""
        with self._cond:
            return sorted(self._assigned)

    def _deliverable(self) -> bool:
        """A queued message may be handed out (caller holds _cond). On shared
        and key_shared subscriptions not once the lease may have run out: its
        claims may then be released to other consumers (and a key's later
        messages delivered there), so the queue waits for the next heartbeat,
        which renews the lease or, if it ran out, drops the queue."""
        if self._mark_delete_seen or self._acked:  # it acknowledged outside a transaction
            self._drop_acknowledged_head()
        if not self._queue:
            return False
        return not self._shared or time.monotonic() < self._lease_holds_until

    def _take_messages(self, first: Message, max_messages: int) -> list[Message]:
        """``first`` and what else may be handed out now, up to ``max_messages``."""
        messages = [first]
        with self._cond:
            while self._deliverable() and len(messages) < max_messages:
                if self._queue[0].__class__ is UndecodableMessage:
                    break  # the next receive raises its error, in its place
                messages.append(self._queue.popleft())
            self._cond.notify_all()
        return messages

    @staticmethod
    def _handed_out(message: Message) -> Message:
        """``message``, or, for one that could not be decoded, its
        MessageDecodeError raised in its place (txnq.messages: the other
        messages keep flowing; the application acknowledges it by id)."""
        if message.__class__ is UndecodableMessage:
            raise message.error()
        return message

    # -- acknowledging ------------------------------------------------------

    @staticmethod
    def _ack_items(message: object) -> list[object]:
        if isinstance(message, Message | MessageId):
            return [message]
        if isinstance(message, Iterable) and not isinstance(message, str | bytes):
            return list(message)
        raise errors.InvalidArgumentError(
            "acknowledge takes a Message, a MessageId or a list of them, "
            f"not {type(message).__name__}"
        )

    def _acknowledge_plan(self, items: list[object], txn: TransactionBase | None) -> Plan[None]:
        """Individual acks of ``items`` (after the face handled retry-letter and
        application-transaction acks)."""
        if self._shared:
            yield from self._acknowledge_shared_plan(items, txn)
            return
        per_partition = self._per_partition(items)
        self._join(txn)
        self._note_txn_partitions(txn, per_partition)
        yield from self._ack_plan(
            [
                self._ack_params(partition, txn, offsets=offsets, indexes=indexes, sizes=sizes)
                for partition, (offsets, indexes, sizes) in sorted(per_partition.items())
            ],
            acked=[
                (partition, offset, index)
                for partition, (offsets, indexes, _) in per_partition.items()
                for offset, index in zip(offsets, indexes, strict=True)
            ],
        )

    def _per_partition(
        self, items: list[object]
    ) -> dict[int, tuple[list[int], list[int], list[int | None]]]:
        per_partition: dict[int, tuple[list[int], list[int], list[int | None]]] = {}
        for item in items:
            message_id, size = self._identify(item)
            offsets, indexes, sizes = per_partition.setdefault(message_id.partition, ([], [], []))
            offsets.append(message_id.offset)
            indexes.append(-1 if size == 1 else message_id.batch_index)
            sizes.append(size)
        return per_partition

    def _check_cumulative(self) -> None:
        if self._shared:
            raise errors.InvalidArgumentError(
                f"cumulative acknowledgement is not possible on a {self.subscription_type} "
                "subscription (other consumers hold earlier messages): acknowledge messages "
                "individually with acknowledge()"
            )

    def _cumulative_plan(
        self, message_id: MessageId, size: int | None, txn: TransactionBase | None
    ) -> Plan[None]:
        self._join(txn)
        self._note_txn_partitions(txn, [message_id.partition])
        with self._cond:
            generation = self._fetched_generation.get((message_id.partition, message_id.offset))
        yield from self._ack_plan(
            [
                self._ack_params(
                    message_id.partition,
                    txn,
                    cumulative=message_id.offset,
                    cumulative_batch=(message_id.batch_index, size),
                )
            ],
            # A cumulative ack covers messages this consumer may never have
            # received: those another transaction held pending when it fetched
            # (fetch skips them), released since by that transaction's abort
            # (which bumps the cursor generation). In a transaction that would
            # consume them unprocessed: refuse it if the cursor was rewound
            # since this message was delivered (found by the chaos copier).
            expected_generation=generation if txn is not None else None,
        )

    def _nack_plan(self, message: object) -> Plan[None]:
        """Negative acknowledgement (after the face handled retry-letter messages)."""
        if not isinstance(message, Message):
            raise errors.InvalidArgumentError(
                f"negative_acknowledge takes a received Message, not {type(message).__name__}"
            )
        self._check_message_topic(message.message_id)
        self._check_usable()
        if self._shared:
            delay = (
                self._nack_delay
                if self._backoff is None
                else self._backoff.delay(message.redelivery_count)
            )
            message_id = message.message_id
            yield from retried_once(
                Call(
                    "nack_shared",
                    {
                        "topic_id": self._topic_id,
                        "partition": message_id.partition,
                        "subscription_id": self.subscription_id,
                        "consumer_id": self.consumer_id,
                        "offsets": [message_id.offset],
                        "batch_indexes": [message_id.batch_index],
                        "delays": [delay],
                    },
                )
            )
            return
        with self._cond:
            self._nack_counter += 1
            heapq.heappush(
                self._nacked, (time.monotonic() + self._nack_delay, self._nack_counter, message)
            )
            self._cond.notify_all()

    def _acknowledge_shared_plan(
        self, items: list[object], txn: TransactionBase | None
    ) -> Plan[None]:
        """ack_shared_v1 per partition; several run in one PostgreSQL transaction."""
        per_partition: dict[int, tuple[list[int], list[int]]] = {}
        for item in items:
            message_id, _ = self._identify(item)
            offsets, indexes = per_partition.setdefault(message_id.partition, ([], []))
            offsets.append(message_id.offset)
            indexes.append(message_id.batch_index)
        self._join(txn)
        calls = [
            Call(
                "ack_shared",
                {
                    "topic_id": self._topic_id,
                    "partition": partition,
                    "subscription_id": self.subscription_id,
                    "offsets": offsets,
                    "batch_indexes": indexes,
                    "txn_tc": None if txn is None else txn.txn_id.tc_id,
                    "txn_seq": None if txn is None else txn.txn_id.seq,
                },
                "none",
            )
            for partition, (offsets, indexes) in sorted(per_partition.items())
        ]
        if not calls:
            return  # an empty list acknowledges nothing
        try:
            # Acks are idempotent: on a lost connection, reconnect and try once more.
            yield from retried_once(calls[0] if len(calls) == 1 else Batch(calls, atomic=True))
        except BaseException:
            if txn is not None:
                # Refused (a conflict) or unknown: these claims are not marked
                # with the transaction, so its abort would not give them back.
                with self._cond:
                    unacked = self._txn_unacked.setdefault(txn.txn_id, {})
                    for partition, (offsets, indexes) in per_partition.items():
                        known = unacked.setdefault(partition, ([], []))
                        known[0].extend(offsets)
                        known[1].extend(indexes)
            raise

    def _identify(self, item: object) -> tuple[MessageId, int | None]:
        """The message id and its entry's batch size (None: unknown, the server looks it up)."""
        if isinstance(item, Message):
            self._check_message_topic(item.message_id)
            return item.message_id, check_batch_size(item.batch_size)
        if isinstance(item, MessageId):
            self._check_message_topic(item)
            with self._cond:
                size = self._batch_sizes.get((item.partition, item.offset))
            return item, size
        raise errors.InvalidArgumentError(
            f"acknowledge takes a Message or MessageId, not {type(item).__name__}"
        )

    def _check_message_topic(self, message_id: MessageId) -> None:
        if not isinstance(message_id, MessageId):
            raise errors.InvalidArgumentError(
                f"a Message's message_id must be a MessageId, not {type(message_id).__name__}"
            )
        check_message_id(message_id)
        if message_id.topic != self.topic or not 0 <= message_id.partition < self._topic.partitions:
            raise errors.InvalidArgumentError(
                f"message {message_id} is not from topic {self.topic!r} of this consumer"
            )

    def _join(self, txn: TransactionBase | None) -> None:
        self._check_usable()
        if txn is None:
            return
        self._checked_txn(txn)._join_consumer(self)

    def _ack_params(
        self,
        partition: int,
        txn: TransactionBase | None,
        *,
        cumulative: int | None = None,
        cumulative_batch: tuple[int | None, int | None] = (None, None),
        offsets: Sequence[int] = (),
        indexes: Sequence[int] = (),
        sizes: Sequence[int | None] = (),
    ) -> dict[str, Any]:
        return {
            "topic_id": self._topic_id,
            "partition": partition,
            "subscription_id": self.subscription_id,
            "cumulative_offset": cumulative,
            "offsets": list(offsets),
            "batch_indexes": list(indexes),
            "batch_sizes": list(sizes),
            "cumulative_batch_index": cumulative_batch[0],
            "cumulative_batch_size": cumulative_batch[1],
            "txn_tc": None if txn is None else txn.txn_id.tc_id,
            "txn_seq": None if txn is None else txn.txn_id.seq,
        }

    def _ack_plan(
        self,
        calls: list[dict[str, Any]],
        expected_generation: int | None = None,
        acked: list[tuple[int, int, int]] | None = None,
    ) -> Plan[None]:
        """One ack_v2 call per partition; several run in one PostgreSQL
        transaction (cursor rows locked in partition order), so a list of
        messages is acknowledged all or nothing. ``acked``: the (partition,
        offset, batch index) of individual acks, remembered once they took
        effect (outside a transaction) so they are not handed out again."""
        if not calls:
            return  # an empty list acknowledges nothing
        steps = [Call("ack", call, "value") for call in calls]
        if expected_generation is not None:
            steps.append(Call("cursor_generation", calls[0], "value"))
            check = self._generation_check(calls[0], expected_generation)
            marks = (yield from retried_once(Batch(steps, atomic=True, check=check)))[:-1]
        elif len(steps) > 1:
            marks = yield from retried_once(Batch(steps, atomic=True))
        else:
            marks = [(yield from retried_once(steps[0]))]
        with self._cond:
            if acked and calls[0]["txn_tc"] is None:
                self._remember_acknowledged(acked)
            for call, mark_delete in zip(calls, marks, strict=True):
                partition = call["partition"]
                if call["txn_tc"] is None:
                    self._passed_mark_delete(partition, mark_delete)
                for key in [
                    k for k in self._batch_sizes if k[0] == partition and k[1] <= mark_delete
                ]:
                    del self._batch_sizes[key]
                for key in [
                    k for k in self._fetched_generation if k[0] == partition and k[1] <= mark_delete
                ]:
                    del self._fetched_generation[key]

    def _remember_acknowledged(self, acked: Iterable[tuple[int, int, int]]) -> None:
        """With ``_cond`` held: messages acknowledged outside a transaction,
        remembered so that neither a copy still queued (a rewind refetched it
        before the ack) nor one a fetch read before the ack committed is
        handed out (_deliverable drops them when they reach the head)."""
        for partition, offset, index in acked:
            if offset > self._mark_delete_seen.get(partition, -1):
                self._acked.add((partition, offset, index))

    def _passed_mark_delete(self, partition: int, mark_delete: int) -> None:
        """With ``_cond`` held: the cursor of ``partition`` is at ``mark_delete``
        (an ack outside a transaction returned it): what is queued at or below
        it is acknowledged, and the remembered acks below it are not needed."""
        if mark_delete <= self._mark_delete_seen.get(partition, -1):
            return
        self._mark_delete_seen[partition] = mark_delete
        if self._acked:
            self._acked = {a for a in self._acked if a[0] != partition or a[1] > mark_delete}

    def _was_acknowledged(self, partition: int, offset: int, index: int) -> bool:
        """With ``_cond`` held: this message was acknowledged outside a transaction."""
        return (
            offset <= self._mark_delete_seen.get(partition, -1)
            or (partition, offset, -1) in self._acked
            or (partition, offset, index) in self._acked
        )

    def _drop_acknowledged_head(self) -> None:
        """With ``_cond`` held: drop acknowledged messages from the head of the
        queue. Checked at the head, once per message handed out, rather than
        by scanning the queue at every ack (which cost the whole queue per
        acknowledgement). Messages of another topic (a retry-letter consumer
        shares its parent's queue) are left to their own consumer."""
        queue = self._queue
        topic = self.topic
        while queue:
            message_id = queue[0].message_id
            if message_id.topic != topic or not self._was_acknowledged(
                message_id.partition, message_id.offset, message_id.batch_index
            ):
                return
            queue.popleft()

    def _generation_check(self, call: dict[str, Any], expected: int) -> Callable[[list[Any]], None]:
        def check(results: list[Any]) -> None:
            found = results[-1]
            if found is not None and found != expected:
                # Raised inside the PostgreSQL transaction: the ack is rolled back.
                raise errors.TransactionConflictError(
                    f"partition {call['partition']} of subscription {self.subscription!r} was "
                    "rewound after this message was delivered (a transaction that held earlier "
                    "messages aborted): this cumulative acknowledgement would cover messages "
                    f"this consumer has not processed. Abort transaction {call['txn_tc']}:"
                    f"{call['txn_seq']}; the messages are delivered again"
                )

        return check

    def _rewind(self, partitions: Iterable[int]) -> None:
        """Deliver again what was not acknowledged on these partitions: the read
        position goes back to the cursor (an application transaction that
        acknowledged here rolled back, txnq.app_transaction; or a txnq
        transaction it acknowledged in aborted, _txn_ended)."""
        with self._cond:
            if not self._drop_fetched(partitions):
                return
        self._wake_fetcher()

    def _drop_fetched(self, partitions: Iterable[int]) -> bool:
        """With ``_cond`` held: forget what was fetched of these partitions so
        they are read again from the cursor; False if the consumer is closed
        (the next consumer starts at the cursor anyway). The caller wakes the
        fetch thread after letting go of ``_cond`` (waking takes the ack lock)."""
        if self._closed:
            return False
        for partition in partitions:
            if partition in self._assigned:
                self._forget_partition(partition)
        self._heartbeat_due = 0.0
        self._cond.notify_all()
        return True

    def _note_txn_partitions(self, txn: TransactionBase | None, partitions: Iterable[int]) -> None:
        """Remember the partitions acknowledged (or tried) in ``txn``, before the ack."""
        if txn is None:
            return
        with self._cond:
            self._txn_partitions.setdefault(txn.txn_id, set()).update(partitions)

    def _txn_ended(self, txn_id: TxnId, *, rewind: bool) -> None:
        """A transaction this consumer acknowledged in ended. On abort, forget
        what was fetched of its partitions, now (before the next receive can
        hand out a message past them): they are fetched again from the cursor's
        mark-delete offset. Relying on the abort's cursor-generation bump is
        not enough: an ack refused for a conflict left no pending ack to
        release, and the conflicting transaction may commit, so the messages
        the aborted work received would never come back while this consumer
        lives (and a later cumulative ack would cover them unprocessed)."""
        with self._cond:
            partitions = self._txn_partitions.pop(txn_id, set())
            unacked = self._txn_unacked.pop(txn_id, {})
            if not rewind or not self._drop_fetched(partitions):
                return
        if unacked:
            self._give_back(unacked)
        self._wake_fetcher()

    @abc.abstractmethod
    def _give_back(self, unacked: dict[int, tuple[list[int], list[int]]]) -> None:
        """Run :meth:`_give_back_plan` (each face: at once, or as a task)."""

    def _give_back_plan(self, unacked: dict[int, tuple[list[int], list[int]]]) -> Plan[None]:
        """Shared types, a transaction aborted: the messages its acknowledgement
        was refused for are deliverable again at once (nack_shared_v1 with no
        delay: only the claims this consumer still holds outside a transaction;
        the ones the transaction holds its abort releases). Without this a live
        consumer would keep them for good (found by the chaos copier: a copier
        aborts on a conflict and receives its next batch)."""
        for partition, (offsets, indexes) in sorted(unacked.items()):
            try:
                yield from retried_once(
                    Call(
                        "nack_shared",
                        {
                            "topic_id": self._topic_id,
                            "partition": partition,
                            "subscription_id": self.subscription_id,
                            "consumer_id": self.consumer_id,
                            "offsets": offsets,
                            "batch_indexes": indexes,
                            "delays": [0.0] * len(offsets),
                        },
                    )
                )
            except (psycopg.Error, errors.TxnqError):
                pass  # closing or a lost server: its lease or close releases them

    # -- seeking, unsubscribing, leaving ------------------------------------

    def _seek_plan(
        self, target: MessageId | int | datetime | str, partition: int | None
    ) -> Plan[None]:
        self._check_usable()
        offset: int | None
        when: datetime | None
        if isinstance(target, MessageId):
            self._check_message_topic(target)
            partitions = [target.partition]
            offset, when = target.offset, None
        else:
            offset, when = seek_target(target)
            if partition is not None:
                if (
                    isinstance(partition, bool)
                    or not isinstance(partition, int)
                    or not (0 <= partition < self._topic.partitions)
                ):
                    raise errors.InvalidArgumentError(
                        f"partition must be 0..{self._topic.partitions - 1}, got {partition!r}"
                    )
                partitions = [partition]
            else:
                partitions = list(range(self._topic.partitions))
        for p in partitions:
            yield from retried_once(
                Call(
                    "seek",
                    {
                        "topic_id": self._topic_id,
                        "partition": p,
                        "subscription_id": self.subscription_id,
                        "offset": offset,
                        "time": when,
                    },
                )
            )
        with self._cond:
            for p in partitions:
                self._forget_partition(p)
            self._heartbeat_due = 0.0  # reload positions before the next fetch
            self._cond.notify_all()
        if self._shared:
            # Claims this consumer made after the seek but dropped from its queue
            # just now must not stay held: give everything it holds back.
            yield from retried_once(
                Call(
                    "release_claims",
                    {"subscription_id": self.subscription_id, "consumer_id": self.consumer_id},
                )
            )

    def _unsubscribe_plan(self) -> Plan[None]:
        self._check_usable()
        yield from retried_once(
            Call(
                "unsubscribe",
                {
                    "subscription_id": self.subscription_id,
                    "except_consumer_id": self.consumer_id,
                    "force": False,
                },
            )
        )

    def _leave_plan(self) -> Plan[None]:
        """Release what this consumer holds and unregister it (best effort)."""
        try:
            if self._shared:
                # What this consumer holds goes to the others now, not after its lease.
                yield from retried_once(
                    Call(
                        "release_claims",
                        {"subscription_id": self.subscription_id, "consumer_id": self.consumer_id},
                    )
                )
            yield from retried_once(
                Call(
                    "close_consumer", {"consumer_id": self.consumer_id, "topic_id": self._topic_id}
                )
            )
        except (psycopg.Error, errors.TxnqError):
            pass  # the lease runs out by itself

    def _check_usable(self) -> None:
        if self._failure is not None:
            raise self._failure
        if self._closed:
            raise errors.ClosedError(
                f"consumer {self.name!r} is closed: subscribe again with client.subscribe()"
            )

    def _check_process(self) -> None:
        """``process()`` is possible: an open consumer of an exclusive or failover subscription."""
        self._check_usable()
        if self._shared:
            raise errors.InvalidArgumentError(_ATTACHED_SHARED_HINT)

    # -- the fetch loop -----------------------------------------------------

    def _subscribe_plan(self) -> Plan[None]:
        """Create or join the subscription and register this consumer."""
        self.subscription_id: int = yield from retried_once(
            Call(
                "subscribe",
                {
                    "topic_id": self._topic_id,
                    "name": self.subscription,
                    "subscription_type": self.subscription_type,
                    "isolation": self.isolation,
                    "initial_position": self._initial_position,
                },
                "value",
            )
        )
        self.consumer_id: int = yield from self._register_plan()

    def _register_plan(self) -> Plan[int]:
        consumer_id = yield from retried_once(
            Call(
                "register_consumer",
                {
                    "subscription_id": self.subscription_id,
                    "name": self.name,
                    "priority": self._priority,
                    "lease_seconds": self._lease,
                },
                "value",
            )
        )
        return int(consumer_id)

    def _run_plan(self) -> Plan[None]:
        """The fetch thread's (or task's) loop: heartbeats, fetching or claiming
        into the receive queue, waiting for data; ends when closed or failed."""
        while True:
            with self._cond:
                if self._closed:
                    return
            try:
                raise_if_armed("consumer_fetch")
                if time.monotonic() >= self._heartbeat_due:
                    yield from self._heartbeat_plan()
                if not self._shared:
                    self._release_nacked()
                if not self._has_room():
                    yield WaitRoom(min(self._poll_interval, self._lease / 3))
                    continue
                queued = yield from (
                    self._claim_round_plan() if self._shared else self._fetch_round_plan()
                )
                if queued == 0:
                    yield from self._wait_for_data_plan()
            except errors.TxnqError as exc:
                with self._cond:
                    self._failure = exc
                    self._cond.notify_all()
                return
            except psycopg.OperationalError:
                yield from self._reconnect_fetch_plan()
            except Exception as exc:
                # Anything else would end the loop silently, and receive()
                # would return None forever: stop, and say why at every call.
                self._fetch_failed(exc)
                return

    def _fetch_failed(self, exc: BaseException) -> None:
        """The fetch loop (thread or task) stopped on ``exc``, which is not a
        txnq error or a lost connection: every later call raises
        BackgroundFailureError naming it; close() still works."""
        failure = errors.BackgroundFailureError(
            f"consumer {self.name!r} of subscription {self.subscription!r} on topic "
            f"{self.topic!r} stopped receiving: its fetch loop failed with "
            f"{type(exc).__name__}: {exc}. Close it and subscribe again (what it did not "
            "acknowledge is delivered again)"
        )
        failure.__cause__ = exc
        log.error("%s", failure, exc_info=exc)
        # A retry-letter consumer fails its parent too: they share one queue.
        parent = getattr(self, "_retry_parent", None)
        with self._cond:
            for consumer in (self, parent):
                if consumer is not None and consumer._failure is None:
                    consumer._failure = failure
            self._cond.notify_all()

    def _reconnect_fetch_plan(self) -> Plan[None]:
        """A new fetch connection, until one works (or the consumer closes)."""
        while True:
            with self._cond:
                if self._closed:
                    return
            yield Sleep(min(self._poll_interval, 1.0))
            try:
                yield Reconnect()
                with self._cond:
                    for p in list(self._assigned):
                        self._forget_partition(p)
                    self._assigned.clear()
                if self._shared:
                    # The session may outlive the connection (its lease held):
                    # the claims of the queue just dropped, and any a claim_v1
                    # whose reply was lost made, are this consumer's; nobody
                    # else would ever release them while it lives. Give them
                    # all back.
                    yield Call(
                        "release_claims",
                        {"subscription_id": self.subscription_id, "consumer_id": self.consumer_id},
                        "none",
                    )
            except (psycopg.Error, errors.TxnqError):
                continue  # reconnect (and release) again
            self._heartbeat_due = 0.0
            return

    def _has_room(self) -> bool:
        with self._cond:
            return len(self._queue) < self._queue_size

    def _heartbeat_plan(self) -> Plan[None]:
        """Renew the lease; recompute the assignment; follow cursor resets."""
        sent = time.monotonic()
        self._heartbeat_due = sent + self._lease / 3
        beat = {"consumer_id": self.consumer_id, "lease_seconds": self._lease}
        try:
            members = yield Call("heartbeat_consumer", beat, "all")
        except errors.ConsumerExpiredError:
            # The lease ran out (e.g. a long pause): start a new session. For an
            # exclusive subscription somebody else may have taken over meanwhile;
            # on a shared one, what this consumer held goes to the others.
            with self._cond:
                for p in list(self._assigned):
                    self._forget_partition(p)
                self._assigned.clear()
            sent = time.monotonic()
            self.consumer_id = yield from self._register_plan()
            members = yield Call(
                "heartbeat_consumer",
                {"consumer_id": self.consumer_id, "lease_seconds": self._lease},
                "all",
            )
        with self._cond:
            self._lease_holds_until = sent + self._lease
            self._cond.notify_all()
        if self._shared:
            # Liveness: claims of consumers whose lease ran out go back to waiting.
            yield Call(
                "release_claims",
                {"subscription_id": self.subscription_id, "consumer_id": None},
                "none",
            )
        ids = [row[0] for row in members]
        cursors = yield Call(
            "cursor_positions",
            {"topic_id": self._topic_id, "subscription_id": self.subscription_id},
            "all",
        )
        # Partitions added to the topic come with cursors: follow them (as Pulsar's
        # autoUpdatePartitions), at the latest one heartbeat after they appear.
        partitions = max([self._topic.partitions, *(row[0] + 1 for row in cursors)])
        if partitions > self._topic.partitions:
            self._topic = dataclasses.replace(self._topic, partitions=partitions)
        if self.subscription_type == "failover":
            mine = {p for p in range(partitions) if ids[p % len(ids)] == self.consumer_id}
        else:
            mine = set(range(partitions))
        if self._shared:
            # Claims, not read positions: every partition, no rewinding (a seek
            # or an abort is followed in txnq.shared_advance_v1).
            with self._cond:
                self._assigned = {row[0] for row in cursors}
            return
        with self._cond:
            for p in self._assigned - mine:
                self._forget_partition(p)
            for partition, mark_delete, generation in cursors:
                if partition not in mine:
                    continue
                if partition not in self._assigned or self._generation.get(partition) != generation:
                    self._forget_partition(partition)
                    self._read_position[partition] = mark_delete
                    self._generation[partition] = generation
            self._assigned = mine & {row[0] for row in cursors}

    def _forget_partition(self, partition: int) -> None:
        """Drop what was fetched of a partition (caller holds _cond): it will be
        fetched again from the cursor, by this consumer or the next owner."""
        key = (self.topic, partition)
        self._epoch[partition] = self._epoch.get(partition, 0) + 1
        # Fetches from before now are discarded (the epoch): what it fetches
        # next reflects every ack of ours that took effect, so the memory of
        # them goes (and a seek may well have moved the cursor back).
        self._mark_delete_seen.pop(partition, None)
        self._acked = {a for a in self._acked if a[0] != partition}
        self._read_position.pop(partition, None)
        self._generation.pop(partition, None)
        # In place and by topic too: a retry-letter consumer shares its parent's
        # queue (a new deque, or the parent's messages dropped, strands claims).
        kept = [m for m in self._queue if (m.message_id.topic, m.message_id.partition) != key]
        if len(kept) != len(self._queue):
            self._queue.clear()
            self._queue.extend(kept)
        self._nacked = [n for n in self._nacked if n[2].message_id.partition != partition]
        heapq.heapify(self._nacked)

    def _release_nacked(self) -> None:
        now = time.monotonic()
        with self._cond:
            while self._nacked and self._nacked[0][0] <= now:
                _, _, message = heapq.heappop(self._nacked)
                if message.message_id.partition not in self._assigned:
                    continue
                count = self._redeliveries.get(message.message_id, 0) + 1
                self._redeliveries[message.message_id] = count
                again = Message(
                    message.value,
                    message.key_bytes,
                    message.properties,
                    message.message_id,
                    message.publish_time,
                    message.event_time,
                    count,
                    message.producer_id,
                    message.sequence,
                    message.batch_size,
                )
                self._queue.appendleft(again)
                self._cond.notify_all()

    def _fetch_round_plan(self) -> Plan[int]:
        """Fetch every assigned partition once, in one round trip; returns messages queued."""
        with self._cond:
            room = self._queue_size - len(self._queue)
            plan = [
                (p, self._read_position[p], self._epoch.get(p, 0))
                for p in sorted(self._assigned)
                if p in self._read_position
            ]
        if not plan or room <= 0:
            return 0
        max_entries = max(1, min(500, room))
        results = yield Batch(
            [
                Call(
                    "fetch",
                    {
                        "topic_id": self._topic_id,
                        "partition": partition,
                        "subscription_id": self.subscription_id,
                        "after_offset": after,
                        "max_entries": max_entries,
                        "max_bytes": FETCH_MAX_BYTES,
                    },
                    "all",
                    binary=True,
                    messages=True,
                )
                for partition, after, _ in plan
            ],
            pipeline=True,
        )
        queued = 0
        for (partition, _, epoch), rows in zip(plan, results, strict=True):
            if rows:
                queued += self._enqueue(partition, epoch, rows)
        return queued

    def _claim_round_plan(self) -> Plan[int]:
        """Claim messages for a shared or key_shared subscription (one claim_v1 call)."""
        with self._cond:
            room = self._queue_size - len(self._queue)
        if room <= 0:
            return 0
        policy = self._dead_letter_policy
        try:
            rows = yield Call(
                "claim",
                {
                    "topic_id": self._topic_id,
                    "subscription_id": self.subscription_id,
                    "consumer_id": self.consumer_id,
                    "max_messages": min(room, CLAIM_MAX_MESSAGES),
                    "ack_timeout_seconds": self._ack_timeout,
                    "max_redeliver_count": None if policy is None else policy.max_redeliver_count,
                    "dead_letter_topic_id": self._dead_letter_topic_id,
                },
                "all",
                binary=True,
                messages=True,
            )
        except errors.ConsumerExpiredError:
            self._heartbeat_due = 0.0  # re-register on the next loop
            return 0
        if not rows:
            return 0
        topic = self.topic
        messages = [
            Message(
                payload,
                key,
                properties or {},
                MessageId(topic, partition, offset, index),
                publish_time,
                event_time,
                redelivery_count,
                producer_id,
                sequence,
                size,
            )
            for (
                partition,
                offset,
                index,
                size,
                publish_time,
                producer_id,
                sequence,
                payload,
                key,
                properties,
                event_time,
                redelivery_count,
            ) in rows
        ]
        if rows.__class__ is LenientRows:  # some values could not be decoded
            messages = yield from self._undecodable_plan([checked(m) for m in messages])
        with self._cond:
            # Kept even when a seek happened meanwhile: these claims are this
            # consumer's, whichever side of the seek they were made on (at
            # worst a message is delivered twice; dropping it could strand it).
            self._queue.extend(messages)
            self._cond.notify_all()
        return len(messages)

    def _undecodable_plan(self, messages: list[Message]) -> Plan[list[Message]]:
        """Shared types, claimed ``messages`` of which some could not be
        decoded: with a dead-letter policy, move those to the dead-letter
        topic now (txnq.dead_letter_v2, as claim_v2 moves a message past
        max_redeliver_count; the copy is made decodable) and leave them out.
        Without a policy, or when the move fails, they stay: receive() raises
        a MessageDecodeError for each."""
        if self._dead_letter_topic_id is None:
            return messages
        kept: list[Message] = []
        for message in messages:
            if not isinstance(message, UndecodableMessage):
                kept.append(message)
                continue
            message_id = message.message_id
            try:
                yield Call(
                    "dead_letter",
                    {
                        "topic_id": self._topic_id,
                        "partition": message_id.partition,
                        "subscription_id": self.subscription_id,
                        "entry_offset": message_id.offset,
                        "batch_index": message_id.batch_index,
                        "dead_letter_topic_id": self._dead_letter_topic_id,
                        "reason": f"cannot be decoded: its {message.field} {message.detail}",
                    },
                    "value",
                )
            except errors.TxnqError as exc:
                message.note = f" (moving it to the dead-letter topic failed: {exc})"
                kept.append(message)
        return kept

    def _enqueue(self, partition: int, epoch: int, rows: Sequence[Any]) -> int:
        topic = self.topic
        messages: list[Message] = []
        sizes: dict[tuple[int, int], int] = {}
        for (
            offset,
            publish_time,
            producer_id,
            first_sequence,
            count,
            payloads,
            keys,
            properties,
            event_times,
            acked,
        ) in rows:
            skip = set(acked) if acked else ()
            if count > 1:
                sizes[(partition, offset)] = count
            for index in range(count):
                if index in skip:
                    continue
                messages.append(
                    Message(
                        payloads[index],
                        keys[index] if keys is not None else None,
                        properties[index] or {} if properties is not None else {},
                        MessageId(topic, partition, offset, index),
                        publish_time,
                        event_times[index] if event_times is not None else None,
                        0,
                        producer_id,
                        None if first_sequence is None else first_sequence + index,
                        count,
                    )
                )
        if rows.__class__ is LenientRows:  # some values could not be decoded
            messages = [checked(m) for m in messages]
        with self._cond:
            if self._epoch.get(partition, 0) != epoch or partition not in self._assigned:
                return 0  # the partition was reset or handed over meanwhile
            if self._acked or rows[0][0] <= self._mark_delete_seen.get(partition, -1):
                # Read before an ack of ours committed: never handed out again.
                messages = [
                    m
                    for m in messages
                    if not self._was_acknowledged(
                        partition, m.message_id.offset, m.message_id.batch_index
                    )
                ]
            self._read_position[partition] = rows[-1][0]
            self._batch_sizes.update(sizes)
            generation = self._generation.get(partition)
            if generation is not None:
                for row in rows:
                    self._fetched_generation[(partition, row[0])] = generation
            self._queue.extend(messages)
            self._cond.notify_all()
        return len(messages)

    def _wait_for_data_plan(self) -> Plan[None]:
        """Register as a waiter, look once more (no lost wake-up), then wait for a
        NOTIFY, the next heartbeat, a nack coming due, or the poll interval."""
        with self._cond:
            partitions = sorted(self._assigned)
            timeout = min(self._poll_interval, max(0.0, self._heartbeat_due - time.monotonic()))
            if self._nacked:
                timeout = min(timeout, max(0.0, self._nacked[0][0] - time.monotonic()))
        if self._shared:
            # Nacked, timed-out and delayed messages come back without a NOTIFY.
            due = yield Call("next_visible_claim", {"subscription_id": self.subscription_id})
            if due is not None and due[0] is not None:
                timeout = min(timeout, max(0.0, float(due[0])) + 0.005)
            if timeout <= 0:
                return
        if partitions:
            yield Call(
                "register_waiters",
                {
                    "topic_id": self._topic_id,
                    "consumer_id": self.consumer_id,
                    "partitions": partitions,
                },
                "none",
            )
            queued = yield from (
                self._claim_round_plan() if self._shared else self._fetch_round_plan()
            )
            if queued > 0:
                return
        yield Listen(timeout)


class Consumer(ConsumerBase):
    """Receives messages from one subscription. Create with ``client.subscribe``.

    Options: ``initial_position`` ("latest" or "earliest"; where a new
    subscription starts), ``isolation`` ("read_committed" or
    "read_uncommitted"), ``consumer_name``, ``priority`` (failover order, lower
    first), ``receiver_queue_size`` (messages prefetched, 1000),
    ``negative_ack_redelivery_delay`` ("1m"), ``lease`` (CONSUMER_LEASE_SECONDS),
    ``poll_interval`` (POLL_INTERVAL_SECONDS). Shared and key_shared only:
    ``ack_timeout`` (None: off; a message not acknowledged this long after it
    was claimed is delivered again), ``negative_ack_backoff`` (a
    :class:`Backoff`; replaces the fixed nack delay), ``dead_letter_policy``
    (a :class:`DeadLetterPolicy`), ``retry_enable`` (read the retry-letter
    topic too, for ``reconsume_later``).
    """

    def __init__(
        self,
        client: Client,
        topic: str,
        subscription: str,
        subscription_type: str = "exclusive",
        *,
        initial_position: str = "latest",
        isolation: str = "read_committed",
        consumer_name: str | None = None,
        priority: int = 0,
        receiver_queue_size: int = 1000,
        negative_ack_redelivery_delay: Duration = "1m",
        lease: Duration | None = None,
        poll_interval: Duration | None = None,
        ack_timeout: Duration | None = None,
        negative_ack_backoff: Backoff | None = None,
        dead_letter_policy: DeadLetterPolicy | None = None,
        retry_enable: bool = False,
        _retry_parent: Consumer | None = None,
    ) -> None:
        self._client = client
        self._configure(
            client.settings,
            client.admin.get_topic(topic),
            subscription,
            subscription_type,
            initial_position=initial_position,
            isolation=isolation,
            consumer_name=consumer_name,
            priority=priority,
            receiver_queue_size=receiver_queue_size,
            negative_ack_redelivery_delay=negative_ack_redelivery_delay,
            lease=lease,
            poll_interval=poll_interval,
            ack_timeout=ack_timeout,
            negative_ack_backoff=negative_ack_backoff,
            dead_letter_policy=dead_letter_policy,
            retry_enable=retry_enable,
        )
        self._retry_parent = _retry_parent
        if dead_letter_policy is not None or retry_enable:
            policy = dead_letter_policy or DeadLetterPolicy(max_redeliver_count=16)
            if dead_letter_policy is not None:
                dlq = policy.dead_letter_topic or f"{self.topic}-{self.subscription}-DLQ"
                self._dead_letter_topic_id = _ensure_topic(client.admin, dlq)
            if retry_enable:
                self._retry_topic = (
                    policy.retry_letter_topic or f"{self.topic}-{self.subscription}-RETRY"
                )
                _ensure_topic(client.admin, self._retry_topic)

        # State shared by the fetch thread and the caller, guarded by _cond. A
        # retry-letter consumer delivers into its parent's receive queue.
        self._cond = threading.Condition() if _retry_parent is None else _retry_parent._cond
        self._queue = deque() if _retry_parent is None else _retry_parent._queue

        self._ack_lock = threading.Lock()
        self._ack_proxy: Any = client.checkout()
        self._ack_io = SyncIO(self._ack_connection, self._ack_reconnect)
        self._fetch_conn = connect(client.dsn, application_name=f"txnq-consumer-{self.name}")
        self._fetch_io = SyncIO(
            lambda: self._fetch_conn, self._reopen_fetch_conn, self._listen, self._wait_room
        )
        try:
            with self._ack_lock:
                run(self._subscribe_plan(), self._ack_io)
            self._fetch_conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
            run(self._heartbeat_plan(), self._fetch_io)
        except BaseException:
            self._fetch_conn.close()
            self._ack_proxy.close()
            raise
        self._thread = threading.Thread(
            target=self._fetch_thread,
            name=f"txnq-consumer-{self.name}",
            daemon=True,
        )
        self._thread.start()
        self._retry_consumer: Consumer | None = None
        self._letter_producers: dict[str, Producer] = {}
        if self._retry_topic is not None:
            try:
                self._retry_consumer = Consumer(
                    client,
                    self._retry_topic,
                    self.subscription,
                    subscription_type,
                    initial_position="earliest",
                    isolation=isolation,
                    consumer_name=f"{self.name}-retry"[:200],
                    priority=priority,
                    receiver_queue_size=receiver_queue_size,
                    negative_ack_redelivery_delay=negative_ack_redelivery_delay,
                    lease=self._lease,
                    poll_interval=self._poll_interval,
                    ack_timeout=ack_timeout,
                    negative_ack_backoff=negative_ack_backoff,
                    dead_letter_policy=dead_letter_policy,
                    _retry_parent=self,
                )
            except BaseException:
                self.close()
                raise

    # -- receiving ----------------------------------------------------------

    def receive(self, timeout: Duration | None = None) -> Message | None:
        """The next message, waiting up to ``timeout`` (forever when None); None on timeout."""
        wait = None if timeout is None else parse_duration(timeout, what="timeout")
        deadline = None if wait is None else time.monotonic() + wait
        with self._cond:
            self._check_usable()
            while not self._deliverable():
                self._check_usable()
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return None
                wait = 1.0 if remaining is None else remaining
                if self._queue:  # the lease may have run out: wait for the heartbeat
                    wait = min(wait, max(0.001, self._poll_interval / 4))
                self._cond.wait(wait)
            message = self._queue.popleft()
            if len(self._queue) < self._queue_size // 2:
                self._cond.notify_all()  # room for the fetch thread
            return self._handed_out(message)

    def batch_receive(self, max_messages: int = 100, timeout: Duration = "100ms") -> list[Message]:
        """Up to ``max_messages`` messages: waits up to ``timeout`` for the first."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:
            raise errors.InvalidArgumentError(
                f"max_messages must be a positive int, got {max_messages!r}"
            )
        first = self.receive(timeout)
        if first is None:
            return []
        return self._take_messages(first, max_messages)

    def __iter__(self) -> Consumer:
        return self

    def __next__(self) -> Message:
        message = self.receive()
        assert message is not None
        return message

    # -- acknowledging ------------------------------------------------------

    def acknowledge(
        self,
        message: Message | MessageId | Iterable[Message | MessageId],
        *,
        txn: Transaction | AttachedTransaction | None = None,
    ) -> None:
        """Acknowledge messages individually; durable when this returns. A list
        spanning partitions is acknowledged atomically. With ``txn``, the acks
        are pending until the transaction commits (an abort releases them and
        the messages are delivered again); a message another open transaction
        holds raises TransactionConflictError."""
        items = self._ack_items(message)
        if self._retry_consumer is not None:
            retry_items = [item for item in items if _topic_of(item) == self._retry_topic]
            if retry_items:
                self._retry_consumer.acknowledge(
                    [item for item in retry_items if isinstance(item, Message | MessageId)],
                    txn=txn,
                )
                items = [item for item in items if _topic_of(item) != self._retry_topic]
                if not items:
                    return
        if txn is not None and _attached(txn):
            if self._shared:
                raise errors.InvalidArgumentError(_ATTACHED_SHARED_HINT)
            # An application transaction (txnq.app_transaction): staged on the
            # caller's connection, applied when the caller commits.
            per_partition = self._per_partition(items)
            self._check_usable()
            cast("AttachedTransaction", txn)._acknowledge(self, per_partition)
            return
        self._run_ack(self._acknowledge_plan(items, cast("Transaction | None", txn)))

    def acknowledge_cumulative(
        self,
        message: Message | MessageId,
        *,
        txn: Transaction | AttachedTransaction | None = None,
    ) -> None:
        """Acknowledge this message and every earlier one of its partition (with
        ``txn``: when the transaction commits). Not on shared and key_shared
        subscriptions, where messages are acknowledged one by one (as Pulsar)."""
        self._check_cumulative()
        message_id, size = self._identify(message)
        if txn is not None and _attached(txn):
            raise errors.InvalidArgumentError(
                "a cumulative ack cannot be checked for exactly-once in an application "
                "transaction: acknowledge the messages individually (acknowledge(list))"
            )
        self._run_ack(self._cumulative_plan(message_id, size, cast("Transaction | None", txn)))

    def negative_acknowledge(self, message: Message) -> None:
        """Have the message delivered again after ``negative_ack_redelivery_delay``
        (or the ``negative_ack_backoff`` delay for its redelivery count). On
        shared and key_shared subscriptions any consumer may get it then."""
        if (
            self._retry_consumer is not None
            and isinstance(message, Message)
            and message.message_id.topic == self._retry_topic
        ):
            self._retry_consumer.negative_acknowledge(message)
            return
        self._run_ack(self._nack_plan(message))

    def reconsume_later(self, message: Message, delay: Duration) -> None:
        """Pulsar's reconsumeLater: acknowledge ``message`` and send a copy to the
        retry-letter topic, delivered to this subscription again after
        ``delay`` (properties RECONSUMETIMES, REAL_TOPIC, ORIGIN_MESSAGE_ID,
        DELAY_TIME added). Past ``max_redeliver_count`` reconsumptions the
        copy goes to the dead-letter topic instead. Both happen in one txnq
        transaction: never lost, never twice. Needs ``retry_enable=True``."""
        if self._retry_parent is not None:
            self._retry_parent.reconsume_later(message, delay)
            return
        self._check_usable()
        if self._retry_topic is None:
            raise errors.InvalidArgumentError(
                "reconsume_later needs a consumer subscribed with retry_enable=True"
            )
        if not isinstance(message, Message):
            raise errors.InvalidArgumentError(
                f"reconsume_later takes a received Message, not {type(message).__name__}"
            )
        seconds = parse_duration(delay, what="delay")
        owner = self
        if message.message_id.topic == self._retry_topic:
            assert self._retry_consumer is not None
            owner = self._retry_consumer
        else:
            self._check_message_topic(message.message_id)
        properties = dict(message.properties)
        times = _reconsume_times(properties) + 1
        properties.setdefault("REAL_TOPIC", self.topic)
        properties.setdefault("ORIGIN_MESSAGE_ID", str(message.message_id))
        properties["RECONSUMETIMES"] = str(times)
        properties["DELAY_TIME"] = str(int(seconds * 1000))
        policy = self._dead_letter_policy
        to_dead_letters = policy is not None and times > policy.max_redeliver_count
        target = self._retry_topic
        if to_dead_letters:
            assert policy is not None
            target = policy.dead_letter_topic or f"{self.topic}-{self.subscription}-DLQ"
            properties["DEAD_LETTER_REASON"] = (
                f"reconsumed {times} times, more than max_redeliver_count "
                f"{policy.max_redeliver_count} allows"
            )
        producer = self._letter_producers.get(target)
        if producer is None:
            producer = self._client.producer(target)
            self._letter_producers[target] = producer
        with self._client.new_transaction() as txn:
            producer.send(
                message.value,
                key=message.key_bytes,
                properties=properties,
                event_time=message.event_time,
                txn=txn,
                deliver_after=None if to_dead_letters or seconds == 0 else seconds,
            )
            owner.acknowledge(message, txn=txn)

    def _checked_txn(self, txn: object) -> TransactionBase:
        from txnq.transaction import Transaction

        return cast("TransactionBase", Transaction.checked(txn, self._client))

    def process(
        self, connection: object, *, batch_size: int = 100, idle_timeout: Duration | None = None
    ) -> Iterator[Message]:
        """Exactly-once processing: ``for msg in consumer.process(conn): ...``
        commits each batch's acks in one PostgreSQL transaction with what the
        loop body wrote on ``conn``; see :func:`txnq.app_transaction.process`."""
        from txnq.app_transaction import process

        self._check_process()
        return process(self, connection, batch_size=batch_size, idle_timeout=idle_timeout)

    # -- seeking and unsubscribing -----------------------------------------

    def seek(self, target: MessageId | int | datetime | str, partition: int | None = None) -> None:
        """Move the subscription so that the next message delivered is ``target``:
        a MessageId (its partition), an offset (on ``partition``, or on every
        partition), a publish time (datetime), or "earliest"/"latest".
        Individually acknowledged messages after the position are delivered again."""
        self._run_ack(self._seek_plan(target, partition))
        self._wake_fetcher()

    def unsubscribe(self) -> None:
        """Delete the subscription (refused while other consumers are connected), then close."""
        self._run_ack(self._unsubscribe_plan())
        self.close()

    # -- life cycle ---------------------------------------------------------

    def close(self) -> None:
        """Leave the subscription: unacknowledged messages go to the next consumer."""
        with self._cond:
            if self._closed:
                return
            self._closed = True
            if self._retry_parent is None:
                self._queue.clear()  # redelivered to the next consumer, never handed out here
            self._cond.notify_all()
        self._wake_fetcher()
        self._thread.join(timeout=self._poll_interval + 5)
        retry_consumer = getattr(self, "_retry_consumer", None)
        if retry_consumer is not None:
            retry_consumer.close()
        for producer in getattr(self, "_letter_producers", {}).values():
            producer.close()
        self._run_ack(self._leave_plan())
        self._ack_proxy.close()
        self._fetch_conn.close()
        self._client._forget(self)

    def __enter__(self) -> Consumer:
        self._check_usable()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the sync face's I/O --------------------------------------------------

    def _fetch_thread(self) -> None:
        try:
            run(self._run_plan(), self._fetch_io)
        except BaseException as exc:  # the plan stops on its own errors: this is the rest
            self._fetch_failed(exc)

    def _run_ack(self, plan: Plan[T]) -> T:
        """Run a plan on the caller-side (ack) connection, one at a time."""
        with self._ack_lock:
            return run(plan, self._ack_io)

    def _ack_connection(self) -> Any:
        """The ack connection; checked out anew when it was invalidated (a lost
        connection) and an earlier reconnect failed, e.g. while PostgreSQL
        restarted. A server still away raises ServerUnavailableError, and the
        next call tries again: the consumer stays usable (found by the chaos
        copier, whose consumers failed with AttributeError after a restart)."""
        conn = self._ack_proxy.driver_connection
        if conn is None:
            # ServerUnavailableError ("the call changed nothing: retry it") while
            # the server is away.
            self._ack_proxy = self._client.checkout()
            conn = self._ack_proxy.driver_connection
        return conn

    def _give_back(self, unacked: dict[int, tuple[list[int], list[int]]]) -> None:
        self._run_ack(self._give_back_plan(unacked))

    def _ack_reconnect(self) -> None:
        self._ack_proxy.invalidate()
        self._ack_connection()

    def _wake_fetcher(self) -> None:
        try:
            with self._ack_lock:
                self._ack_connection().execute("SELECT pg_notify(%s, '')", (self._channel,))
        except (psycopg.Error, errors.ServerUnavailableError):
            pass  # the fetch thread polls anyway

    def _reopen_fetch_conn(self) -> None:
        self._fetch_conn.close()
        self._fetch_conn = connect(self._client.dsn, application_name=f"txnq-consumer-{self.name}")
        self._fetch_conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))

    def _listen(self, timeout: float) -> None:
        for _ in self._fetch_conn.notifies(timeout=timeout, stop_after=1):
            pass

    def _wait_room(self, timeout: float) -> None:
        with self._cond:
            self._cond.wait(timeout)


def _ensure_topic(admin: Admin, name: str) -> int:
    """The id of a dead-letter or retry-letter topic, created (1 partition) when missing."""
    try:
        return admin.get_topic(name).topic_id
    except errors.TopicNotFoundError:
        try:
            return admin.create_topic(name).topic_id
        except errors.TopicExistsError:
            return admin.get_topic(name).topic_id


def _reconsume_times(properties: dict[str, str]) -> int:
    """How often a message was reconsumed (its RECONSUMETIMES property, which
    any producer may have set to anything: what is no count is 0)."""
    try:
        return max(0, int(properties.get("RECONSUMETIMES", "0")))
    except (TypeError, ValueError):
        return 0


def _topic_of(item: object) -> str | None:
    if isinstance(item, Message):
        return item.message_id.topic
    if isinstance(item, MessageId):
        return item.topic
    return None
