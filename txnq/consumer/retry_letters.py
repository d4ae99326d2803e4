"""The retry-letter topic of ``consumer.reconsume_later`` (Pulsar's
reconsumeLater with ``retry_enable=True``): what both faces decide about it.

A consumer subscribed with ``retry_enable`` (the parent) opens a second
consumer on the retry-letter topic (its retry consumer) with the same
options, which delivers into the parent's receive queue. The application only
sees the parent: its acks and nacks of retry letters go to the retry consumer,
and ``reconsume_later`` sends the copy (:func:`~txnq.consumer.dead_letters.reconsumption`)
and acknowledges the original, through whichever of the two received it, in
one txnq transaction. The faces drive the I/O (open the retry consumer, the
producers and the transaction); this module decides."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self

from txnq import errors
from txnq.consumer.base import ConsumerBase
from txnq.consumer.dead_letters import Reconsumption, reconsumption, retry_letter_topic, topic_of
from txnq.consumer.message_queue import MessageQueue
from txnq.durations import Duration, parse_duration
from txnq.messages import Message


class RetryLettersBase(ConsumerBase):
    """:class:`ConsumerBase` with the retry-letter topic: a parent consumer
    (``retry_enable=True``) and its retry consumer (``_retry_parent`` set)."""

    _retry_parent: Self | None
    _retry_consumer: Self | None
    #: The parent's producers of letter topics (retry and dead letters), by topic.
    _letter_producers: dict[str, Any]

    def _configure_retry(
        self, retry_enable: bool, parent: Self | None, new_cond: Callable[[], Any]
    ) -> None:
        """After ``_configure``: the retry-letter topic a parent also reads,
        and the receive queue: a consumer's own (guarded by ``new_cond()``),
        or for a retry consumer its parent's, which it delivers into."""
        self._retry_parent = parent
        self._retry_consumer = None
        self._letter_producers = {}
        if retry_enable:
            self._retry_topic = retry_letter_topic(
                self._dead_letter_policy, self.topic, self.subscription
            )
        self._cond = new_cond() if parent is None else parent._cond
        self._queue = MessageQueue() if parent is None else parent._queue

    def _retry_consumer_options(self) -> dict[str, Any]:
        """The subscribe options of a parent's retry consumer: the parent's,
        reading the retry-letter topic from its start."""
        return {
            "initial_position": "earliest",
            "isolation": self.isolation,
            "consumer_name": f"{self.name}-retry"[:200],
            "priority": self._priority,
            "receiver_queue_size": self._queue_size,
            "negative_ack_redelivery_delay": self._nack_delay,
            "lease": self._lease,
            "poll_interval": self._poll_interval,
            "ack_timeout": self._ack_timeout,
            "negative_ack_backoff": self._backoff,
            "dead_letter_policy": self._dead_letter_policy,
            "durable_acks": self._durable_acks,
        }

    def _set_retry_consumer(self, retry_consumer: Self) -> None:
        """The parent's retry consumer, once it is open."""
        self._retry_consumer = retry_consumer

    def _ack_owners(self, items: list[object]) -> list[tuple[Self, list[object]]]:
        """Who acknowledges which of ``items``: the retry consumer the retry
        letters, first; this consumer the rest (also when that is nothing and
        no retry letter is among them: the call checks that it is usable)."""
        retry = self._retry_consumer
        if retry is None:
            return [(self, items)]
        letters = [item for item in items if topic_of(item) == self._retry_topic]
        if not letters:
            return [(self, items)]
        rest = [item for item in items if topic_of(item) != self._retry_topic]
        return [(retry, letters)] + ([(self, rest)] if rest else [])

    def _nack_owner(self, message: object) -> Self:
        """Who negatively acknowledges ``message``: the retry consumer a retry letter."""
        if (
            self._retry_consumer is not None
            and isinstance(message, Message)
            and message.message_id.topic == self._retry_topic
        ):
            return self._retry_consumer
        return self

    def _reconsumption(self, message: object, delay: Duration) -> tuple[Self, Self, Reconsumption]:
        """For ``reconsume_later``: the parent (which sends, with its letter
        producers), the consumer that acknowledges ``message`` (the parent, or
        its retry consumer for a retry letter), and the copy to send."""
        parent = self if self._retry_parent is None else self._retry_parent
        parent._check_usable()
        if parent._retry_topic is None:
            raise errors.InvalidArgumentError(
                "reconsume_later needs a consumer subscribed with retry_enable=True"
            )
        if not isinstance(message, Message):
            raise errors.InvalidArgumentError(
                f"reconsume_later takes a received Message, not {type(message).__name__}"
            )
        seconds = parse_duration(delay, what="delay")
        owner = parent
        if message.message_id.topic == parent._retry_topic:
            assert parent._retry_consumer is not None
            owner = parent._retry_consumer
        else:
            parent._check_message_topic(message.message_id)
        letter = reconsumption(
            message,
            seconds,
            topic=parent.topic,
            subscription=parent.subscription,
            retry_topic=parent._retry_topic,
            policy=parent._dead_letter_policy,
        )
        return parent, owner, letter

    def _start_closing(self) -> bool:
        """Mark this consumer closed (False: it already was) and wake its
        waiters. Its queued messages go to the next consumer, never handed out
        here; a retry consumer leaves its parent's queue to the parent."""
        with self._cond:
            if self._closed:
                return False
            self._closed = True
            if self._retry_parent is None:
                self._queue.clear()
            self._cond.notify_all()
        return True
