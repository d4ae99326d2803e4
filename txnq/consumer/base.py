"""The consumer: a session on a subscription that fetches entries of its
partitions into a receive queue (prefetch), delivers their messages, and
acknowledges them into the subscription's cursors.

Subscription types (Pulsar's): ``exclusive`` — one consumer; a second one is
refused with ConsumerBusyError. ``failover`` — many consumers, one active per
partition: with consumers sorted by (priority, name), partition ``p`` belongs
to consumer ``p mod n``; when a consumer goes away (close, or its lease runs
out) the next heartbeat of the others hands its partitions over, and what it
had not acknowledged is delivered again. ``shared`` — many consumers, each
message to one of them at a time: consumers claim messages
(``txnq.claim_v6``: new ones as a claim range, SKIP LOCKED), acknowledge them
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

The package: this base (options, the receive queue, what every exchange with
PostgreSQL has in common, as plans), the delivery strategy chosen at
subscribe (``cursor_delivery`` for exclusive and failover, ``claim_delivery``
for shared and key_shared, see ``delivery``), the ack tracker (``acks``), the
redelivery policies (``dead_letters``), the retry-letter topic of
``reconsume_later`` above this base (``retry_letters``), and the faces ``sync``
(``txnq.Consumer``, a fetch thread) and ``aio`` (``txnq.aio.Consumer``, a
fetch task).

Liveness is a lease renewed by a heartbeat (every third of ``lease``), not a
guess. New data wakes a waiting consumer through LISTEN/NOTIFY — one NOTIFY
per wait, registered in ``txnq.consumer_waiters`` — and a poll every
``poll_interval`` is the fallback (LISTEN does not pass PgBouncer's
transaction pooling).
"""

from __future__ import annotations

import abc
import time
import uuid
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import psycopg

from txnq import errors
from txnq.admin import seek_target
from txnq.consumer.acks import AckTracker
from txnq.consumer.claim_delivery import ClaimDelivery
from txnq.consumer.cursor_delivery import CursorDelivery
from txnq.consumer.dead_letters import Backoff, DeadLetterPolicy, dead_letter_topic
from txnq.consumer.delivery import Delivery
from txnq.consumer.message_queue import MessageQueue
from txnq.consumer.session import ConsumerSession
from txnq.database.plans import Call, Plan, retried_once
from txnq.durations import Duration, parse_duration
from txnq.messages import (
    Message,
    MessageId,
    UndecodableMessage,
    check_batch_size,
    check_message_id,
)
from txnq.names import validate_name

if TYPE_CHECKING:
    from txnq.admin import TopicInfo
    from txnq.settings import Settings
    from txnq.transaction.base import TransactionBase, TxnId

SUBSCRIPTION_TYPES = ("exclusive", "failover", "shared", "key_shared")
SHARED_TYPES = ("shared", "key_shared")
ISOLATIONS = ("read_committed", "read_uncommitted")
INITIAL_POSITIONS = ("earliest", "latest")


class ConsumerBase(ConsumerSession):
    """What the sync and asyncio consumers share: options, the receive-queue
    state, and every exchange with PostgreSQL as a plan (txnq.database.plans):
    acks, nacks, seeks and leaving here; subscribing, the heartbeat and the
    fetch loop in :class:`~txnq.consumer.session.ConsumerSession`; fetching or
    claiming in the delivery chosen at subscribe (``self._delivery``). A face
    adds the connections, the fetch thread or task, the waiting, and
    ``_cond`` (a ``threading.Condition`` in the sync face; in the asyncio face
    a lock-free stand-in whose ``notify_all`` wakes waiting receivers)."""

    _cond: Any
    _queue: MessageQueue

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
        durable_acks: bool = False,
    ) -> None:
        """Check the options and set up the state; no I/O."""
        self.subscription = validate_name(subscription, "subscription")
        if subscription_type not in SUBSCRIPTION_TYPES:
            raise errors.InvalidArgumentError(
                f"subscription_type must be one of {SUBSCRIPTION_TYPES}, not {subscription_type!r}"
            )
        if subscription_type not in SHARED_TYPES:
            CursorDelivery.check_options(
                subscription_type,
                ack_timeout,
                negative_ack_backoff,
                dead_letter_policy,
                retry_enable,
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
        if not isinstance(durable_acks, bool):
            raise errors.InvalidArgumentError(f"durable_acks must be a bool, got {durable_acks!r}")
        #: Acks outside a transaction wait for the WAL flush (True) or not
        #: (False, the default): txnq.consumer.delivery.ack_query says why.
        self._durable_acks = durable_acks
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
        self._epoch: dict[int, int] = {}  # local: grows when a partition's position resets
        # Delivered batch entries' sizes: partition -> offset -> size, in fetch order.
        self._batch_sizes: dict[int, dict[int, int]] = {}
        self._acks = AckTracker()
        # Partitions acknowledged in each open transaction: rewound if it aborts.
        self._txn_partitions: dict[TxnId, set[int]] = {}
        self._closed = False
        self._failure: errors.TxnqError | None = None
        self._unsubscribing = False
        self._heartbeat_due = 0.0
        # Until when (monotonic) the lease surely holds -- the send time of
        # the last successful heartbeat plus the lease, never later than the
        # server's deadline. Past it, the claims of a shared subscription may
        # have been released to other consumers (ClaimDelivery.may_hand_out).
        self._lease_holds_until = float("inf")
        # How messages reach this consumer, chosen once by the subscription type.
        self._delivery: Delivery = (
            ClaimDelivery(self) if subscription_type in SHARED_TYPES else CursorDelivery(self)
        )

    def _dead_letter_topic(self) -> str | None:
        """The dead-letter topic this consumer needs, if any."""
        policy = self._dead_letter_policy
        return None if policy is None else dead_letter_topic(policy, self.topic, self.subscription)

    # -- the face's part ----------------------------------------------------

    @abc.abstractmethod
    def _wake_fetcher(self) -> None:
        """Interrupt the fetch loop's wait (each face: a NOTIFY or a task)."""

    # -- receiving ----------------------------------------------------------

    @property
    def assigned_partitions(self) -> list[int]:
        """The partitions this consumer currently reads (all, unless failover)."""
        with self._cond:
            return sorted(self._assigned)

    def _receive_deadline(self, timeout: Duration | None) -> float | None:
        """When a ``receive(timeout)`` gives up (monotonic; None: never)."""
        wait = None if timeout is None else parse_duration(timeout, what="timeout")
        return None if wait is None else time.monotonic() + wait

    def _receive_wait(self, deadline: float | None) -> float | None:
        """How long a receive waits for the queue to change before it looks
        again (None: its deadline passed, it returns None)."""
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            return None
        wait = 1.0 if remaining is None else remaining
        if self._queue:  # the lease may have run out: wait for the heartbeat
            wait = min(wait, max(0.001, self._poll_interval / 4))
        return wait

    def _hand_out(self) -> Message:
        """The message at the head of the queue, which is deliverable (caller holds _cond)."""
        message = self._queue.popleft()
        if len(self._queue) < self._queue_size // 2:
            self._cond.notify_all()  # room for the fetch thread or task
        return self._handed_out(message)

    @staticmethod
    def _check_max_messages(max_messages: object) -> None:
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:
            raise errors.InvalidArgumentError(
                f"max_messages must be a positive int, got {max_messages!r}"
            )

    def _deliverable(self) -> bool:
        """A queued message may be handed out (caller holds _cond): the
        acknowledged ones at the head dropped, and the delivery agrees (claim
        delivery: not once the lease may have run out)."""
        if self._acks:  # it acknowledged outside a transaction
            self._acks.drop_acknowledged_head(self._queue, self.topic)
        if not self._queue:
            return False
        return self._delivery.may_hand_out()

    def _take_messages(self, first: Message, max_messages: int) -> list[Message]:
        """``first`` and what else may be handed out now, up to ``max_messages``."""
        messages = [first]
        with self._cond:
            if self._delivery.may_hand_out():
                self._acks.take_into(messages, self._queue, self.topic, max_messages)
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
        """Individual acks of ``items`` (after the face handled retry-letter
        acks), in ``txn`` if given."""
        yield from self._delivery.acknowledge_plan(items, txn)

    def _staged_acks(
        self, items: list[object]
    ) -> dict[int, tuple[list[int], list[int], list[int | None]]]:
        """``items`` for an application transaction to stage (it calls this
        back: txnq.transaction.protocol): per partition, the offsets, batch
        indexes and batch sizes."""
        self._delivery.check_attachable()
        per_partition = self._per_partition(items)
        self._check_usable()
        return per_partition

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
        self._delivery.check_cumulative()

    def _cumulative_plan(
        self, message_id: MessageId, size: int | None, txn: TransactionBase | None
    ) -> Plan[None]:
        yield from self._delivery.cumulative_plan(message_id, size, txn)

    def _nack_plan(self, message: object) -> Plan[None]:
        """Negative acknowledgement (after the face handled retry-letter messages)."""
        if not isinstance(message, Message):
            raise errors.InvalidArgumentError(
                f"negative_acknowledge takes a received Message, not {type(message).__name__}"
            )
        self._check_message_topic(message.message_id)
        self._check_usable()
        yield from self._delivery.nack_plan(message)

    def _identify(self, item: object) -> tuple[MessageId, int | None]:
        """The message id and its entry's batch size (None: unknown, the server looks it up)."""
        if isinstance(item, Message):
            self._check_message_topic(item.message_id)
            return item.message_id, check_batch_size(item.batch_size)
        if isinstance(item, MessageId):
            self._check_message_topic(item)
            with self._cond:
                size = self._batch_sizes.get(item.partition, {}).get(item.offset)
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
        """Before an ack: the consumer is usable, and joins ``txn`` (checked by the face)."""
        self._check_usable()
        if txn is not None:
            txn._join_consumer(self)

    def _rewind(self, partitions: Iterable[int]) -> None:
        """Deliver again what was not acknowledged on these partitions: the read
        position goes back to the cursor (an application transaction that
        acknowledged here rolled back, txnq.transaction.attached_base; or a txnq
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
            refused = self._delivery.take_refused(txn_id)
            if not rewind or not self._drop_fetched(partitions):
                return
        if refused:
            self._give_back(refused)
        self._wake_fetcher()

    @abc.abstractmethod
    def _give_back(self, refused: dict[int, tuple[list[int], list[int]]]) -> None:
        """Run the delivery's ``give_back_plan`` (each face: at once, or as a task)."""

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
            self._seeks += 1  # a claim in flight now may hold pre-seek messages
            self._heartbeat_due = 0.0  # reload positions before the next fetch
            self._cond.notify_all()
        yield from self._delivery.after_seek_plan()

    def _unsubscribe_plan(self) -> Plan[None]:
        self._check_usable()
        with self._cond:
            # The fetch loop may meet the deleted subscription before close():
            # that is this call's doing, not a failure to report.
            self._unsubscribing = True
        try:
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
        except BaseException:
            with self._cond:
                self._unsubscribing = False
            raise

    def _leave_plan(self) -> Plan[None]:
        """Release what this consumer holds and unregister it (best effort)."""
        try:
            yield from self._delivery.leave_plan()
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
        self._delivery.check_attachable()
