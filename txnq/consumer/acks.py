"""The ack tracker: what a consumer acknowledged outside a transaction, as
Pulsar's ack tracker keeps it for its isDuplicate check.

It holds the (partition, offset, batch index; -1 the whole entry) of
individual acks above the last mark-delete offset seen, and that offset per
partition. A fetch can still bring such a message back (one that ran before
the ack committed, or a refetch after a rewind that the queue already held):
it is never queued or handed out again. The consumer holds its lock
(``_cond``) around every call.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from txnq.messages import Message, UndecodableMessage

if TYPE_CHECKING:
    from txnq.consumer.message_queue import MessageQueue


class AckTracker:
    """Acks outside a transaction, remembered until the cursor passes them."""

    def __init__(self) -> None:
        self._acked: set[tuple[int, int, int]] = set()
        self._mark_delete_seen: dict[int, int] = {}

    def __bool__(self) -> bool:
        """Whether anything was acknowledged outside a transaction (and is remembered)."""
        return bool(self._mark_delete_seen or self._acked)

    def mark_delete_seen(self, partition: int) -> int:
        """The highest mark-delete offset an ack returned for ``partition`` (-1: none)."""
        return self._mark_delete_seen.get(partition, -1)

    def remember(self, acked: Iterable[tuple[int, int, int]]) -> None:
        """Messages acknowledged outside a transaction, remembered so that
        neither a copy still queued (a rewind refetched it before the ack)
        nor one a fetch read before the ack committed is handed out
        (:meth:`drop_acknowledged_head` drops them when they reach the head)."""
        for partition, offset, index in acked:
            if offset > self._mark_delete_seen.get(partition, -1):
                self._acked.add((partition, offset, index))

    def passed_mark_delete(self, partition: int, mark_delete: int) -> None:
        """The cursor of ``partition`` is at ``mark_delete`` (an ack outside a
        transaction returned it): what is queued at or below it is
        acknowledged, and the remembered acks below it are not needed."""
        if mark_delete <= self._mark_delete_seen.get(partition, -1):
            return
        self._mark_delete_seen[partition] = mark_delete
        if self._acked:
            self._acked = {a for a in self._acked if a[0] != partition or a[1] > mark_delete}

    def was_acknowledged(self, partition: int, offset: int, index: int) -> bool:
        """Whether this message was acknowledged outside a transaction."""
        return (
            offset <= self._mark_delete_seen.get(partition, -1)
            or (partition, offset, -1) in self._acked
            or (partition, offset, index) in self._acked
        )

    def forget_partition(self, partition: int) -> None:
        """The partition is fetched again from the cursor: what it fetches
        next reflects every ack of ours that took effect, so the memory of
        them goes (and a seek may well have moved the cursor back)."""
        self._mark_delete_seen.pop(partition, None)
        self._acked = {a for a in self._acked if a[0] != partition}

    def unacknowledged_indexes(
        self, partition: int, offset: int, indexes: Sequence[int]
    ) -> Sequence[int]:
        """The batch ``indexes`` of the entry at ``offset`` not acknowledged
        (read before an ack of ours committed: never handed out again)."""
        if offset <= self.mark_delete_seen(partition):
            return []
        if not self._acked:
            return indexes
        return [i for i in indexes if not self.was_acknowledged(partition, offset, i)]

    def unacknowledged(self, partition: int, messages: list[Message]) -> list[Message]:
        """``messages`` fetched from ``partition`` less those acknowledged
        (read before an ack of ours committed: never handed out again)."""
        if not self._acked and (
            not messages or messages[0].offset > self.mark_delete_seen(partition)
        ):
            return messages
        return [
            m for m in messages if not self.was_acknowledged(partition, m.offset, m.batch_index)
        ]

    def take_into(self, taken: list[Message], queue: MessageQueue, topic: str, limit: int) -> None:
        """Move messages from the head of ``queue`` to ``taken`` until it holds
        ``limit``, dropping the acknowledged ones on the way (as
        :meth:`drop_acknowledged_head`, in one pass: batch_receive's hot
        loop) and stopping before an undecodable message (the next receive
        raises its error in its place). An entry's messages are judged
        together while no individual ack is remembered: they share its offset.

        A batch ends before an entry that it would split (one not started
        yet, with more messages than the batch has room for) rather than
        take part of it: ``max_messages`` is a bound, and an acknowledgement
        up to the end of an entry costs the cursor half of one that stops
        inside it (which records each acknowledged message of the entry;
        docs/benchmarks.md). An entry larger than the whole batch is split."""
        tracking = bool(self)
        while queue and len(taken) < limit:
            run = queue.head_run()
            if run is not None and not self._acked:
                entry = run.entry
                if (
                    tracking
                    and entry.topic == topic
                    and entry.offset <= self.mark_delete_seen(entry.partition)
                ):
                    queue.drop_head_run(run)
                else:
                    room = limit - len(taken)
                    if taken and run.position == 0 and len(run) > room and len(run) <= limit:
                        return  # the next batch takes the entry whole
                    queue.take_from_head_run(run, taken, room)
                continue
            message = queue.peek()
            if (
                tracking
                and message.topic == topic
                and self.was_acknowledged(message.partition, message.offset, message.batch_index)
            ):
                queue.popleft()
                continue
            if message.__class__ is UndecodableMessage:
                return
            taken.append(queue.popleft())

    def drop_acknowledged_head(self, queue: MessageQueue, topic: str) -> None:
        """Drop acknowledged messages from the head of ``queue``. Checked at
        the head, once per message handed out, rather than by scanning the
        queue at every ack (which cost the whole queue per acknowledgement).
        Messages of another topic (a retry-letter consumer shares its
        parent's queue) are left to their own consumer."""
        while queue:
            run = queue.head_run()
            if run is not None and not self._acked:
                entry = run.entry
                if entry.topic != topic or entry.offset > self.mark_delete_seen(entry.partition):
                    return
                queue.drop_head_run(run)
                continue
            message = queue.peek()
            if message.topic != topic or not self.was_acknowledged(
                message.partition, message.offset, message.batch_index
            ):
                return
            queue.popleft()
