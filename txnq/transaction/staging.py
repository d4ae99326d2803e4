"""What an application transaction stages: the parameters of
``txnq.stage_send_v2`` and ``txnq.stage_ack_v2``, the messages queued for a
partition (:class:`StagedBatch`), and what ``send_async`` returns for one
(:class:`StagedSend`, resolved when ``txnq.publish_staged_v2`` gives the
offsets). Pure: no I/O, shared by both faces."""

from __future__ import annotations

import asyncio
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from txnq import errors
from txnq.messages import MessageId
from txnq.transaction.pending import PendingSend, SendCallback, result_timeout


def stage_send_params(
    topic_id: int,
    partition: int,
    payloads: list[bytes],
    keys: list[bytes | None],
    properties: list[str | None],
    event_times: list[datetime | None],
) -> dict[str, Any]:
    """The parameters of query ``stage_send`` for one batch."""
    return {
        "topic_id": topic_id,
        "partition": partition,
        "payloads": payloads,
        "keys": keys if any(k is not None for k in keys) else None,
        "properties": properties if any(properties) else None,
        "event_times": event_times if any(event_times) else None,
    }


def stage_ack_params(
    topic_id: int,
    partition: int,
    subscription_id: int,
    offsets: Sequence[int],
    batch_indexes: Sequence[int],
    batch_sizes: Sequence[int | None],
) -> dict[str, Any]:
    """The parameters of query ``stage_ack`` for one partition."""
    return {
        "topic_id": topic_id,
        "partition": partition,
        "subscription_id": subscription_id,
        "offsets": list(offsets),
        "batch_indexes": list(batch_indexes),
        "batch_sizes": list(batch_sizes),
    }


@dataclass
class StagedBatch:
    """Messages staged (or about to be) for one partition by ``send_async``."""

    topic: str
    topic_id: int
    partition: int
    payloads: list[bytes] = field(default_factory=list)
    keys: list[bytes | None] = field(default_factory=list)
    properties: list[str | None] = field(default_factory=list)
    event_times: list[datetime | None] = field(default_factory=list)
    callbacks: list[tuple[int, SendCallback]] = field(default_factory=list)
    # Resolves to (entry offset, index of the batch's first message in the entry).
    future: Future[tuple[int, int]] = field(default_factory=Future)


def settle_published(
    rows: Iterable[Sequence[Any]], staged: dict[int, StagedBatch]
) -> list[StagedBatch]:
    """Resolve the staged batches from the rows of ``publish_staged``
    (stage_id, topic_id, partition, entry_offset, first_batch_index); returns
    the batches settled, whose callbacks are due."""
    settled = []
    for stage_id, _topic_id, _partition, entry_offset, first_index in rows:
        batch = staged.pop(int(stage_id), None)
        if batch is not None and not batch.future.done():
            batch.future.set_result((int(entry_offset), int(first_index)))
            settled.append(batch)
    return settled


class StagedSend(PendingSend):
    """What ``send_async(..., txn=attached)`` returns: ``result()`` gives the
    MessageId once ``txn.commit()`` has published the message. (When the
    caller commits without ``txn.commit()``, the deferred trigger publishes
    it but the offset is not reported back: ``result()`` raises
    TransactionEndedError once the transaction is used again, else it times
    out.)"""

    __slots__ = ("_staged",)

    def __init__(self, batch: StagedBatch, index: int) -> None:
        self._topic = batch.topic
        self._partition = batch.partition
        self._index = index
        self._staged = batch

    def result(self, timeout: float | None = None) -> MessageId:
        try:
            offset, first = self._staged.future.result(result_timeout(timeout))
        except TimeoutError:
            raise errors.TimeoutError(
                "the message is staged in an application transaction: its offset is known once "
                "txn.commit() has published it"
            ) from None
        return MessageId(self._topic, self._partition, offset, first + self._index)

    def done(self) -> bool:
        return self._staged.future.done()

    def __await__(self) -> Generator[Any, None, MessageId]:
        """``await staged`` (txnq.aio): the MessageId once ``txn.commit()`` published it."""
        offset, first = yield from asyncio.wrap_future(self._staged.future).__await__()
        return MessageId(self._topic, self._partition, offset, first + self._index)

    def exception(self, timeout: float | None = None) -> BaseException | None:
        try:
            return self._staged.future.exception(result_timeout(timeout))
        except TimeoutError:
            raise errors.TimeoutError(
                "the message is staged in an application transaction: its outcome is known "
                "once txn.commit() has published it"
            ) from None
