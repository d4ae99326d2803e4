"""What a send returns before its message is written: :class:`PendingSend`.

A producer's queued message resolves when its batch is appended; a message
staged in an application transaction (``txnq.transaction.attached_base``)
resolves when that transaction publishes. Both are a ``PendingSend``, so the
type lives here, below the producer and the transactions that settle it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from concurrent.futures import Future
from typing import Any, cast

from txnq import errors
from txnq.durations import Duration, parse_duration
from txnq.messages import MessageId

SendCallback = Callable[[BaseException | None, MessageId | None], None]


def result_timeout(timeout: object) -> float | None:
    """The ``timeout`` of ``PendingSend.result()`` in seconds (None: wait for good)."""
    return None if timeout is None else parse_duration(cast(Duration, timeout), what="timeout")


class PendingSend:
    """What ``send_async`` returns: ``result()`` gives the MessageId once written."""

    __slots__ = ("_future", "_index", "_partition", "_topic")

    def __init__(self, topic: str, partition: int, future: Future[int], index: int) -> None:
        self._topic = topic
        self._partition = partition
        self._future = future  # resolves to the offset of the message's entry
        self._index = index

    def result(self, timeout: float | None = None) -> MessageId:
        try:
            offset = self._future.result(result_timeout(timeout))
        except TimeoutError:
            raise errors.TimeoutError(
                f"message not written within {timeout}s; call producer.flush() or wait longer"
            ) from None
        return MessageId(self._topic, self._partition, offset, self._index)

    def done(self) -> bool:
        return self._future.done()

    def __await__(self) -> Generator[Any, None, MessageId]:
        """``await pending`` (txnq.aio): the MessageId once written."""
        offset = yield from asyncio.wrap_future(self._future).__await__()
        return MessageId(self._topic, self._partition, offset, self._index)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        try:
            return self._future.exception(result_timeout(timeout))
        except TimeoutError:
            raise errors.TimeoutError(
                f"message not written within {timeout}s; call producer.flush() or wait longer"
            ) from None
