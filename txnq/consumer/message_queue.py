"""A consumer's receive queue: messages in delivery order, of which the
fetched entries' ones are made only when they are handed out.

A fetch of an exclusive or failover subscription reads whole entries (a
producer batch is one entry, often a thousand messages). Queuing a Message
object per message made the fetch thread's objects live in the queue long
enough for Python's cyclic garbage collector to move them to its oldest
generation, whose collections then walked every object of the process: on
the consume benchmark of docs/benchmarks.md half the client's CPU time. So
an entry is queued as one :class:`EntryRun` (its entry, payloads and the
indexes still to deliver), and its messages are made as they leave the
queue: they are young when the application gets them, and die young.

The queue counts messages (``len``), whatever it holds. Messages made
elsewhere (claims of shared subscriptions, nacked messages due again, the
messages of a result that could not all be decoded) are queued as they are.
Callers hold the consumer's lock (``_cond``) around every call.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from txnq.consumer.fetched import EntryMessage, FetchedEntry
from txnq.messages import Message


class EntryRun:
    """Messages of one fetched entry still in the queue: the payloads at
    ``indexes[position:]``, in order."""

    __slots__ = ("entry", "indexes", "payloads", "position")

    def __init__(
        self, entry: FetchedEntry, payloads: Sequence[bytes], indexes: Sequence[int]
    ) -> None:
        self.entry = entry
        self.payloads = payloads
        self.indexes = indexes
        self.position = 0

    def __len__(self) -> int:
        return len(self.indexes) - self.position

    def take(self, limit: int) -> list[Message]:
        """Up to ``limit`` of its next messages, made now."""
        start = self.position
        stop = min(len(self.indexes), start + limit)
        self.position = stop
        entry, payloads = self.entry, self.payloads
        return [EntryMessage(payloads[i], entry, i) for i in self.indexes[start:stop]]


class MessageQueue:
    """The receive queue (see the module docstring): ``len`` is the number of
    messages queued; the head is always handed out first."""

    __slots__ = ("_count", "_items")

    def __init__(self) -> None:
        self._items: deque[Message | EntryRun] = deque()
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def extend(self, messages: Sequence[Message]) -> None:
        """Queue messages made elsewhere, at the tail."""
        self._items.extend(messages)
        self._count += len(messages)

    def extend_entry(
        self, entry: FetchedEntry, payloads: Sequence[bytes], indexes: Sequence[int]
    ) -> None:
        """Queue the messages ``indexes`` of a fetched entry, at the tail."""
        if indexes:
            self._items.append(EntryRun(entry, payloads, indexes))
            self._count += len(indexes)

    def appendleft(self, message: Message) -> None:
        """Queue a message at the head (a nacked message due again)."""
        self._items.appendleft(message)
        self._count += 1

    def clear(self) -> None:
        self._items.clear()
        self._count = 0

    def head_run(self) -> EntryRun | None:
        """The entry run at the head, if the head is one."""
        head = self._items[0]
        return head if isinstance(head, EntryRun) else None

    def drop_head_run(self, run: EntryRun) -> None:
        """Drop ``run``, the head (every message of it was acknowledged)."""
        self._items.popleft()
        self._count -= len(run)

    def take_from_head_run(self, run: EntryRun, taken: list[Message], limit: int) -> None:
        """Move up to ``limit`` messages of ``run``, the head, to ``taken``."""
        messages = run.take(limit)
        if not len(run):
            self._items.popleft()
        self._count -= len(messages)
        taken += messages

    def peek(self) -> Message:
        """The message at the head, made now if it is an entry's."""
        head = self._items[0]
        if not isinstance(head, EntryRun):
            return head
        run = head
        message = run.take(1)[0]
        if not len(run):
            self._items.popleft()
        self._items.appendleft(message)
        return message

    def popleft(self) -> Message:
        """Remove and return the message at the head."""
        message = self.peek()
        self._items.popleft()
        self._count -= 1
        return message

    def drop_partition(self, topic: str, partition: int) -> None:
        """Drop what is queued of one partition of ``topic`` (kept in place:
        a retry-letter consumer shares its parent's queue)."""
        kept: deque[Message | EntryRun] = deque()
        count = 0
        for item in self._items:
            if isinstance(item, EntryRun):
                if (item.entry.topic, item.entry.partition) == (topic, partition):
                    continue
                count += len(item)
            else:
                if (item.topic, item.partition) == (topic, partition):
                    continue
                count += 1
            kept.append(item)
        self._items = kept
        self._count = count
