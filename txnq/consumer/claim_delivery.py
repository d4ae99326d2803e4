"""Claim delivery, for shared and key_shared subscriptions: consumers claim
messages (``txnq.claim_v6``: new messages of a shared subscription as one
``txnq.claim_ranges`` row per partition, redelivered ones and key_shared ones
as ``txnq.claims`` rows, FOR UPDATE SKIP LOCKED; on key_shared the messages
of one key go to one consumer), acknowledge them individually
(``txnq.ack_shared_v5``: the range records them, the claim goes, the cursor
follows),
and what a consumer does not acknowledge comes back to any consumer: after a
negative acknowledgement (``txnq.nack_shared_v3``, with an optional
exponential :class:`~txnq.consumer.dead_letters.Backoff`), after
``ack_timeout``, or when the consumer's lease runs out
(``txnq.release_claims_v3``). A dead-letter policy moves a message
delivered too often to its dead-letter topic inside the claim.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import psycopg

from txnq import errors
from txnq.consumer.delivery import Delivery
from txnq.database.plans import Batch, Call, Plan, retried_once
from txnq.messages import (
    MAX_BATCH_INDEX,
    MAX_OFFSET,
    LenientRows,
    Message,
    MessageId,
    UndecodableMessage,
    checked,
)
from txnq.transaction.attached_base import ATTACHED_SHARED_HINT

if TYPE_CHECKING:
    from txnq.consumer.base import ConsumerBase
    from txnq.transaction.base import TransactionBase, TxnId


def array_literal(values: list[int]) -> str:
    """``values`` (checked ints) as a PostgreSQL array literal, for a
    ``%(name)s::bigint[]`` / ``::int[]`` parameter."""
    return "{" + ",".join(map(str, values)) + "}"


#: Most messages one claim_v6 call takes.
CLAIM_MAX_MESSAGES = 500


class ClaimDelivery(Delivery):
    """Claims, shared acks and nacks, and the lease that guards the claims."""

    def __init__(self, consumer: ConsumerBase) -> None:
        super().__init__(consumer)
        # Messages a transactional ack failed on, per transaction (partition
        # -> offsets, batch indexes): given back if it aborts.
        self.refused: dict[TxnId, dict[int, tuple[list[int], list[int]]]] = {}

    # -- receiving ----------------------------------------------------------

    def may_hand_out(self) -> bool:
        """Not once the lease may have run out: the claims may then be
        released to other consumers (and a key's later messages delivered
        there), so the queue waits for the next heartbeat, which renews the
        lease or, if it ran out, drops the queue."""
        return time.monotonic() < self.consumer._lease_holds_until

    def before_round(self) -> None:
        pass  # nacks and timeouts are the server's (claims become visible again)

    def round_plan(self) -> Plan[int]:
        """Claim messages (one claim_v6 call); returns messages queued."""
        consumer = self.consumer
        with consumer._cond:
            room = consumer._queue_size - len(consumer._queue)
        if room <= 0:
            return 0
        policy = consumer._dead_letter_policy
        seeks = consumer._seeks
        try:
            rows = yield Call(
                "claim",
                {
                    "topic_id": consumer._topic_id,
                    "subscription_id": consumer.subscription_id,
                    "consumer_id": consumer.consumer_id,
                    "max_messages": min(room, CLAIM_MAX_MESSAGES),
                    "ack_timeout_seconds": consumer._ack_timeout,
                    "max_redeliver_count": None if policy is None else policy.max_redeliver_count,
                    "dead_letter_topic_id": consumer._dead_letter_topic_id,
                },
                "all",
                binary=True,
                messages=True,
            )
        except errors.ConsumerExpiredError:
            consumer._heartbeat_due = 0.0  # re-register on the next loop
            return 0
        if not rows:
            return 0
        topic = consumer.topic
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
        with consumer._cond:
            # A seek that ran while this claim was in flight (it counts
            # consumer._seeks under this lock) may have come before or after
            # the claim read the cursor, and its release of this consumer's
            # claims before or after the claim took these: give everything
            # back again and claim afresh from the new position, as Pulsar's
            # client drops what arrives during a seek.
            overtaken = consumer._seeks != seeks
            if not overtaken:
                consumer._queue.extend(messages)
                consumer._cond.notify_all()
        if overtaken:
            yield from retried_once(self._release_mine())
            return 0
        return len(messages)

    def _undecodable_plan(self, messages: list[Message]) -> Plan[list[Message]]:
        """Claimed ``messages`` of which some could not be decoded: with a
        dead-letter policy, move those to the dead-letter topic now
        (txnq.dead_letter_v3, as claim_v6 moves a message past
        max_redeliver_count; the copy is made decodable) and leave them out.
        Without a policy, or when the move fails, they stay: receive() raises
        a MessageDecodeError for each."""
        consumer = self.consumer
        if consumer._dead_letter_topic_id is None:
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
                        "topic_id": consumer._topic_id,
                        "partition": message_id.partition,
                        "subscription_id": consumer.subscription_id,
                        "entry_offset": message_id.offset,
                        "batch_index": message_id.batch_index,
                        "dead_letter_topic_id": consumer._dead_letter_topic_id,
                        "reason": f"cannot be decoded: its {message.field} {message.detail}",
                    },
                    "value",
                )
            except errors.TxnqError as exc:
                message.note = f" (moving it to the dead-letter topic failed: {exc})"
                kept.append(message)
        return kept

    def wait_timeout_plan(self, timeout: float) -> Plan[float | None]:
        """Nacked, timed-out and delayed messages come back without a NOTIFY:
        up to the next claim becoming visible."""
        due = yield Call("next_visible_claim", {"subscription_id": self.consumer.subscription_id})
        if due is not None and due[0] is not None:
            timeout = min(timeout, max(0.0, float(due[0])) + 0.005)
        return None if timeout <= 0 else timeout

    def after_beat_plan(self) -> Plan[None]:
        """Liveness: claims of consumers whose lease ran out go back to waiting."""
        yield Call(
            "release_claims",
            {"subscription_id": self.consumer.subscription_id, "consumer_id": None},
            "none",
        )

    def assign(self, member_ids: list[int], cursors: list[Any], partitions: int) -> None:
        """Claims, not read positions: every partition, no rewinding (a seek
        or an abort is followed in txnq.shared_advance_v1)."""
        consumer = self.consumer
        with consumer._cond:
            consumer._assigned = {row[0] for row in cursors}

    def after_reconnect_plan(self) -> Plan[None]:
        """The session may outlive the connection (its lease held): the
        claims of the queue just dropped, and any a claim_v6 whose reply was
        lost made, are this consumer's; nobody else would ever release them
        while it lives. Give them all back."""
        yield self._release_mine()

    def forget_partition(self, partition: int) -> None:
        pass  # claims stay this consumer's until acknowledged or released

    def _release_mine(self) -> Call:
        consumer = self.consumer
        return Call(
            "release_claims",
            {"subscription_id": consumer.subscription_id, "consumer_id": consumer.consumer_id},
            "none",
        )

    # -- acknowledging ------------------------------------------------------

    def _per_partition(self, items: list[object]) -> dict[int, tuple[list[int], list[int]]]:
        """Offsets and batch indexes of ``items`` per partition, checked as
        ConsumerBase._identify checks them. A shared consumer acknowledges
        message by message, so this runs per message: a Message as received
        (the usual case) is checked inline, anything else by _identify (which
        raises the errors). (bench.peers' shared phase spent ~9 us a message
        in _identify's calls, as much as the ack's whole server time.)"""
        consumer = self.consumer
        topic = consumer.topic
        partitions = consumer._topic.partitions
        per_partition: dict[int, tuple[list[int], list[int]]] = {}
        for item in items:
            if type(item) is Message:
                message_id = item.message_id
                size = item.batch_size
                if type(message_id) is MessageId:
                    name, partition, offset, index = message_id
                    if (
                        name == topic
                        and type(partition) is int
                        and 0 <= partition < partitions
                        and type(offset) is int
                        and 0 <= offset <= MAX_OFFSET
                        and type(index) is int
                        and 0 <= index <= MAX_BATCH_INDEX
                        and (size is None or (type(size) is int and 1 <= size <= MAX_BATCH_INDEX))
                    ):
                        found = per_partition.get(partition)
                        if found is None:
                            found = per_partition[partition] = ([], [])
                        found[0].append(offset)
                        found[1].append(index)
                        continue
            message_id, _ = consumer._identify(item)
            offsets, indexes = per_partition.setdefault(message_id.partition, ([], []))
            offsets.append(message_id.offset)
            indexes.append(message_id.batch_index)
        return per_partition

    def acknowledge_plan(self, items: list[object], txn: TransactionBase | None) -> Plan[None]:
        """ack_shared_v5 per partition; several run in one PostgreSQL transaction."""
        consumer = self.consumer
        per_partition = self._per_partition(items)
        consumer._join(txn)
        query = self.ack_query("ack_shared", txn is not None)
        calls = [
            Call(
                query,
                {
                    "topic_id": consumer._topic_id,
                    "partition": partition,
                    "subscription_id": consumer.subscription_id,
                    # Array literals: psycopg's dump of a list of 1000 ints
                    # took ~3 ms (a type check per element); ints format fast.
                    "offsets": array_literal(offsets),
                    "batch_indexes": array_literal(indexes),
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
                with consumer._cond:
                    refused = self.refused.setdefault(txn.txn_id, {})
                    for partition, (offsets, indexes) in per_partition.items():
                        known = refused.setdefault(partition, ([], []))
                        known[0].extend(offsets)
                        known[1].extend(indexes)
            raise

    def check_cumulative(self) -> None:
        raise errors.InvalidArgumentError(
            f"cumulative acknowledgement is not possible on a "
            f"{self.consumer.subscription_type} subscription (other consumers hold earlier "
            "messages): acknowledge messages individually with acknowledge()"
        )

    def cumulative_plan(
        self, message_id: MessageId, size: int | None, txn: TransactionBase | None
    ) -> Plan[None]:
        self.check_cumulative()
        return
        yield  # never reached

    def check_attachable(self) -> None:
        raise errors.InvalidArgumentError(ATTACHED_SHARED_HINT)

    def nack_plan(self, message: Message) -> Plan[None]:
        """nack_shared_v3: any consumer may get it once the delay (fixed, or
        the backoff's for its redelivery count) has passed."""
        consumer = self.consumer
        backoff = consumer._backoff
        delay = consumer._nack_delay if backoff is None else backoff.delay(message.redelivery_count)
        message_id = message.message_id
        yield from retried_once(
            Call(
                "nack_shared",
                {
                    "topic_id": consumer._topic_id,
                    "partition": message_id.partition,
                    "subscription_id": consumer.subscription_id,
                    "consumer_id": consumer.consumer_id,
                    "offsets": [message_id.offset],
                    "batch_indexes": [message_id.batch_index],
                    "delays": [delay],
                },
            )
        )

    def take_refused(self, txn_id: TxnId) -> dict[int, tuple[list[int], list[int]]]:
        return self.refused.pop(txn_id, {})

    def give_back_plan(self, refused: dict[int, tuple[list[int], list[int]]]) -> Plan[None]:
        """A transaction aborted: the messages its acknowledgement was refused
        for are deliverable again at once (nack_shared_v3 with no delay: only
        the claims this consumer still holds outside a transaction; the ones
        the transaction holds its abort releases). Without this a live
        consumer would keep them for good (found by the chaos copier: a
        copier aborts on a conflict and receives its next batch)."""
        consumer = self.consumer
        for partition, (offsets, indexes) in sorted(refused.items()):
            try:
                yield from retried_once(
                    Call(
                        "nack_shared",
                        {
                            "topic_id": consumer._topic_id,
                            "partition": partition,
                            "subscription_id": consumer.subscription_id,
                            "consumer_id": consumer.consumer_id,
                            "offsets": offsets,
                            "batch_indexes": indexes,
                            "delays": [0.0] * len(offsets),
                        },
                    )
                )
            except (psycopg.Error, errors.TxnqError):
                pass  # closing or a lost server: its lease or close releases them

    # -- moving and leaving ---------------------------------------------------

    def after_seek_plan(self) -> Plan[None]:
        """Claims this consumer made after the seek but dropped from its queue
        just now must not stay held: give everything it holds back."""
        yield from retried_once(self._release_mine())

    def leave_plan(self) -> Plan[None]:
        """What this consumer holds goes to the others now, not after its lease."""
        yield from retried_once(self._release_mine())
