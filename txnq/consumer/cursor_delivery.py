"""Cursor delivery, for exclusive and failover subscriptions: the consumer
reads each partition it is assigned in order from the cursor's mark-delete
offset (``txnq.fetch_v4``, every partition in one pipelined round trip),
acknowledges into the cursor (``txnq.ack_v3``), and delivers a negatively
acknowledged message again itself, after ``negative_ack_redelivery_delay``.

A failover subscription assigns partition ``p`` to live consumer ``p mod n``
(consumers sorted by priority and name); an exclusive one has one consumer,
which reads every partition. The cursor's generation grows when it is moved
behind the consumer's back (a seek, an aborted transaction's released acks):
the consumer then reads the partition again from the cursor.
"""

from __future__ import annotations

import heapq
import itertools
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from txnq import errors
from txnq.consumer.delivery import Delivery
from txnq.consumer.fetched import EntryMessage, FetchedEntry
from txnq.database.plans import Batch, Call, Plan, retried_once
from txnq.durations import Duration
from txnq.messages import LenientRows, Message, MessageId, checked

if TYPE_CHECKING:
    from txnq.consumer.base import ConsumerBase
    from txnq.consumer.dead_letters import Backoff, DeadLetterPolicy
    from txnq.transaction.base import TransactionBase, TxnId

#: Most payload bytes one fetch_v4 call returns per partition (it stops after
#: the entry that crosses it). fetch_v4 gathers its result in memory up to
#: PostgreSQL's work_mem (4 MiB by default) and spills the rest to a temporary
#: file: with 8 MiB a call of 80 entries of 1,000 messages took 28 ms of server
#: time, four calls of 2 MiB 10 ms (docs/benchmarks.md); and the first messages
#: reach the application sooner.
FETCH_MAX_BYTES = 2 * 1024 * 1024
#: Most entries one fetch_v4 call returns per partition.
FETCH_MAX_ENTRIES = 500


class CursorDelivery(Delivery):
    """Read positions per partition, cursor acks, and nacks redelivered locally."""

    @staticmethod
    def check_options(
        subscription_type: str,
        ack_timeout: Duration | None,
        negative_ack_backoff: Backoff | None,
        dead_letter_policy: DeadLetterPolicy | None,
        retry_enable: bool,
    ) -> None:
        """The options of claim delivery are refused here."""
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

    def __init__(self, consumer: ConsumerBase) -> None:
        super().__init__(consumer)
        self.read_position: dict[int, int] = {}  # highest offset fetched per partition
        self.generation: dict[int, int] = {}  # the cursor generation we follow
        # partition -> offset of fetched entries -> the cursor generation they
        # were fetched under, in fetch order
        self.fetched_generation: dict[int, dict[int, int]] = {}
        # Negatively acknowledged: (due, order, message), soonest first.
        self.nacked: list[tuple[float, int, Message]] = []
        self.nack_counter = 0
        self.redeliveries: dict[MessageId, int] = {}

    # -- receiving ----------------------------------------------------------

    def may_hand_out(self) -> bool:
        return True

    def before_round(self) -> None:
        """Put nacked messages that came due back at the head of the queue."""
        consumer = self.consumer
        now = time.monotonic()
        with consumer._cond:
            while self.nacked and self.nacked[0][0] <= now:
                _, _, message = heapq.heappop(self.nacked)
                if message.message_id.partition not in consumer._assigned:
                    continue
                count = self.redeliveries.get(message.message_id, 0) + 1
                self.redeliveries[message.message_id] = count
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
                consumer._queue.appendleft(again)
                consumer._cond.notify_all()

    def round_plan(self) -> Plan[int]:
        """Fetch every assigned partition once, in one round trip; returns messages queued."""
        consumer = self.consumer
        with consumer._cond:
            room = consumer._queue_size - len(consumer._queue)
            plan = [
                (p, self.read_position[p], consumer._epoch.get(p, 0))
                for p in sorted(consumer._assigned)
                if p in self.read_position
            ]
        if not plan or room <= 0:
            return 0
        max_entries = max(1, min(FETCH_MAX_ENTRIES, room))
        results = yield Batch(
            [
                Call(
                    "fetch",
                    {
                        "topic_id": consumer._topic_id,
                        "partition": partition,
                        "subscription_id": consumer.subscription_id,
                        "after_offset": after,
                        "max_entries": max_entries,
                        "max_bytes": FETCH_MAX_BYTES,
                    },
                    "all",
                    binary=True,
                    messages=True,
                    shard_key=(consumer._topic_id, partition),
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

    def _enqueue(self, partition: int, epoch: int, rows: Sequence[Any]) -> int:
        """Queue the fetched entries of ``partition`` (``rows``), each as one
        run of messages made when handed out (txnq.consumer.message_queue)."""
        consumer = self.consumer
        topic = consumer.topic
        entries: list[tuple[FetchedEntry, list[bytes], Sequence[int]]] = []
        sizes: dict[int, int] = {}
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
            entry = FetchedEntry(
                topic,
                partition,
                offset,
                publish_time,
                producer_id,
                first_sequence,
                count,
                keys,
                properties,
                event_times,
            )
            if count > 1:
                sizes[offset] = count
            indexes: Sequence[int] = range(len(payloads))
            if acked:
                skip = set(acked)
                indexes = [i for i in indexes if i not in skip]
            entries.append((entry, payloads, indexes))
        undecodable = rows.__class__ is LenientRows  # some values could not be decoded
        queued = 0
        with consumer._cond:
            if consumer._epoch.get(partition, 0) != epoch or partition not in consumer._assigned:
                return 0  # the partition was reset or handed over meanwhile
            for entry, payloads, indexes in entries:
                indexes = consumer._acks.unacknowledged_indexes(partition, entry.offset, indexes)
                if undecodable:
                    messages = [checked(EntryMessage(payloads[i], entry, i)) for i in indexes]
                    consumer._queue.extend(messages)
                else:
                    consumer._queue.extend_entry(entry, payloads, indexes)
                queued += len(indexes)
            self.read_position[partition] = rows[-1][0]
            if sizes:
                consumer._batch_sizes.setdefault(partition, {}).update(sizes)
            generation = self.generation.get(partition)
            if generation is not None:
                fetched = self.fetched_generation.setdefault(partition, {})
                for row in rows:
                    fetched[row[0]] = generation
            consumer._cond.notify_all()
        return queued

    def wait_timeout_plan(self, timeout: float) -> Plan[float | None]:
        """Up to the next nacked message coming due."""
        with self.consumer._cond:
            if self.nacked:
                timeout = min(timeout, max(0.0, self.nacked[0][0] - time.monotonic()))
        return timeout
        yield  # a plan without I/O

    def after_beat_plan(self) -> Plan[None]:
        return
        yield  # a plan without I/O

    def assign(self, member_ids: list[int], cursors: list[Any], partitions: int) -> None:
        """Failover: partition ``p`` is live consumer ``p mod n``'s; exclusive:
        all. A partition newly assigned, or whose cursor generation changed,
        is read again from the cursor's mark-delete offset."""
        consumer = self.consumer
        if consumer.subscription_type == "failover":
            mine = {
                p
                for p in range(partitions)
                if member_ids[p % len(member_ids)] == consumer.consumer_id
            }
        else:
            mine = set(range(partitions))
        with consumer._cond:
            for p in consumer._assigned - mine:
                consumer._forget_partition(p)
            for partition, mark_delete, generation in cursors:
                if partition not in mine:
                    continue
                if (
                    partition not in consumer._assigned
                    or self.generation.get(partition) != generation
                ):
                    consumer._forget_partition(partition)
                    self.read_position[partition] = mark_delete
                    self.generation[partition] = generation
            consumer._assigned = mine & {row[0] for row in cursors}

    def after_reconnect_plan(self) -> Plan[None]:
        return
        yield  # a plan without I/O

    def forget_partition(self, partition: int) -> None:
        self.read_position.pop(partition, None)
        self.generation.pop(partition, None)
        self.nacked = [n for n in self.nacked if n[2].message_id.partition != partition]
        heapq.heapify(self.nacked)

    # -- acknowledging ------------------------------------------------------

    def acknowledge_plan(self, items: list[object], txn: TransactionBase | None) -> Plan[None]:
        consumer = self.consumer
        per_partition = consumer._per_partition(items)
        consumer._join(txn)
        consumer._note_txn_partitions(txn, per_partition)
        yield from self.ack_plan(
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

    def cumulative_plan(
        self, message_id: MessageId, size: int | None, txn: TransactionBase | None
    ) -> Plan[None]:
        consumer = self.consumer
        consumer._join(txn)
        consumer._note_txn_partitions(txn, [message_id.partition])
        with consumer._cond:
            generation = self.fetched_generation.get(message_id.partition, {}).get(
                message_id.offset
            )
        yield from self.ack_plan(
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
            "topic_id": self.consumer._topic_id,
            "partition": partition,
            "subscription_id": self.consumer.subscription_id,
            "cumulative_offset": cumulative,
            "offsets": list(offsets),
            "batch_indexes": list(indexes),
            "batch_sizes": list(sizes),
            "cumulative_batch_index": cumulative_batch[0],
            "cumulative_batch_size": cumulative_batch[1],
            "txn_tc": None if txn is None else txn.txn_id.tc_id,
            "txn_seq": None if txn is None else txn.txn_id.seq,
        }

    def ack_plan(
        self,
        calls: list[dict[str, Any]],
        expected_generation: int | None = None,
        acked: list[tuple[int, int, int]] | None = None,
    ) -> Plan[None]:
        """One ack_v3 call per partition; several run in one PostgreSQL
        transaction (cursor rows locked in partition order), so a list of
        messages is acknowledged all or nothing. ``acked``: the (partition,
        offset, batch index) of individual acks, remembered once they took
        effect (outside a transaction) so they are not handed out again."""
        if not calls:
            return  # an empty list acknowledges nothing
        in_txn = calls[0]["txn_tc"] is not None
        query = self.ack_query("ack", in_txn)
        # Outside a transaction, through a cluster's proxy, on the partition's
        # shard directly (txnq.database.routes); a transaction's acks go
        # through the proxy, which mirrors the transaction onto the shard.
        keys = [None if in_txn else (call["topic_id"], call["partition"]) for call in calls]
        if query == "ack_lazy":
            # Positional, so a sync connection runs it as a prepared statement
            # (txnq.database.prepared: psycopg's cursor cost about 45 us of
            # client CPU per acknowledgement more; docs/benchmarks.md).
            steps = [
                Call("ack_lazy_positional", _positional(call), "value", shard_key=key)
                for call, key in zip(calls, keys, strict=True)
            ]
        else:
            steps = [
                Call(query, call, "value", shard_key=key)
                for call, key in zip(calls, keys, strict=True)
            ]
        if expected_generation is not None:
            steps.append(Call("cursor_generation", calls[0], "value"))
            check = self._generation_check(calls[0], expected_generation)
            marks = (yield from retried_once(Batch(steps, atomic=True, check=check)))[:-1]
        elif len(steps) > 1:
            marks = yield from retried_once(Batch(steps, atomic=True))
        else:
            marks = [(yield from retried_once(steps[0]))]
        consumer = self.consumer
        with consumer._cond:
            if acked and calls[0]["txn_tc"] is None:
                consumer._acks.remember(acked)
            for call, mark_delete in zip(calls, marks, strict=True):
                partition = call["partition"]
                if call["txn_tc"] is None:
                    consumer._acks.passed_mark_delete(partition, mark_delete)
                _drop_passed(consumer._batch_sizes.get(partition), mark_delete)
                _drop_passed(self.fetched_generation.get(partition), mark_delete)

    def _generation_check(self, call: dict[str, Any], expected: int) -> Callable[[list[Any]], None]:
        subscription = self.consumer.subscription

        def check(results: list[Any]) -> None:
            found = results[-1]
            if found is not None and found != expected:
                # Raised inside the PostgreSQL transaction: the ack is rolled back.
                raise errors.TransactionConflictError(
                    f"partition {call['partition']} of subscription {subscription!r} was "
                    "rewound after this message was delivered (a transaction that held earlier "
                    "messages aborted): this cumulative acknowledgement would cover messages "
                    f"this consumer has not processed. Abort transaction {call['txn_tc']}:"
                    f"{call['txn_seq']}; the messages are delivered again"
                )

        return check

    def check_cumulative(self) -> None:
        pass  # the cursor takes cumulative acks

    def check_attachable(self) -> None:
        pass  # application transactions stage cursor acks

    def nack_plan(self, message: Message) -> Plan[None]:
        """Queue ``message`` again after ``negative_ack_redelivery_delay`` (no I/O)."""
        consumer = self.consumer
        with consumer._cond:
            self.nack_counter += 1
            heapq.heappush(
                self.nacked,
                (time.monotonic() + consumer._nack_delay, self.nack_counter, message),
            )
            consumer._cond.notify_all()
        return
        yield  # a plan without I/O

    def take_refused(self, txn_id: TxnId) -> dict[int, tuple[list[int], list[int]]]:
        return {}  # the rewind from the cursor delivers them again

    def give_back_plan(self, refused: dict[int, tuple[list[int], list[int]]]) -> Plan[None]:
        return
        yield  # a plan without I/O

    # -- moving and leaving ---------------------------------------------------

    def after_seek_plan(self) -> Plan[None]:
        return
        yield  # a plan without I/O

    def leave_plan(self) -> Plan[None]:
        return
        yield  # a plan without I/O


def _drop_passed(by_offset: dict[int, Any] | None, mark_delete: int | None) -> None:
    """Forget the entries at or below the cursor's ``mark_delete`` offset. A
    partition's entries are remembered in fetch order, which is offset order
    (after a rewind, refetched offsets below older ones follow those and go
    once the cursor passes the older ones too), so the ones to forget lead:
    an ack costs what it passed, not every entry fetched (scanning them all
    cost each ack a millisecond with 20,000 one-message entries queued)."""
    if not by_offset or mark_delete is None:
        return
    passed = list(itertools.takewhile(lambda offset: offset <= mark_delete, by_offset))
    for offset in passed:
        del by_offset[offset]


#: ack_v3's parameters in its order (ack_lazy_positional).
_ACK_PARAMETERS = (
    "topic_id",
    "partition",
    "subscription_id",
    "cumulative_offset",
    "offsets",
    "batch_indexes",
    "batch_sizes",
    "cumulative_batch_index",
    "cumulative_batch_size",
    "txn_tc",
    "txn_seq",
)


def _positional(call: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(call[name] for name in _ACK_PARAMETERS)
