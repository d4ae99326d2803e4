"""How messages reach a consumer and how its acknowledgements take effect:
the two deliveries of a subscription, chosen once at subscribe.

- :class:`~txnq.consumer.cursor_delivery.CursorDelivery` (exclusive and
  failover): the consumer reads its partitions in order from the cursor's
  mark-delete offset, acknowledges into the cursor, and redelivers a
  negative acknowledgement itself.
- :class:`~txnq.consumer.claim_delivery.ClaimDelivery` (shared and
  key_shared): the consumer claims messages in ``txnq.claims``; acks delete
  claims, nacks and lease expiries release them to any consumer.

Why a strategy object and not two consumer subclasses: the consumer already
has two faces (sync and asyncio) over one base, and the delivery is a second,
independent axis; subclasses would need four classes (or classes made at
subscribe time), while one delivery object, picked by the subscription type,
serves both faces. It holds the state only its delivery needs; what every
consumer has (the receive queue, the lock, the assignment, the ack tracker)
stays on the consumer it serves.
"""

from __future__ import annotations

import abc
from typing import TYPE_CHECKING, Any

from txnq.database.plans import Plan
from txnq.messages import Message, MessageId

if TYPE_CHECKING:
    from txnq.consumer.base import ConsumerBase
    from txnq.transaction.base import TransactionBase, TxnId


class Delivery(abc.ABC):
    """What differs between cursor and claim delivery; every plan runs on the
    consumer's connections, with the consumer's lock (``_cond``) taken where
    its state changes."""

    def __init__(self, consumer: ConsumerBase) -> None:
        self.consumer = consumer

    def ack_query(self, name: str, in_transaction: bool) -> str:
        """The query of an acknowledgement: ``name`` itself, or outside a
        transaction and without ``durable_acks`` its ``_lazy`` form, which
        commits without waiting for PostgreSQL's WAL flush
        (``synchronous_commit`` off for that one transaction;
        sql/queries/data_path.sql). Waiting for the flush cost a consumer
        of batches of 1,000 two thirds of its time (docs/benchmarks.md).

        What it gives up: after a crash of PostgreSQL itself (not of the
        client), acknowledgements of the last fraction of a second (at most
        three times ``wal_writer_delay``) may be lost, and those messages
        delivered again: at least once, as Pulsar (which persists a cursor's
        position at most once a second) and Kafka (which commits offsets every
        five seconds by default) do.

        An acknowledgement in a (client) transaction takes the lazy form too,
        whatever ``durable_acks`` says, and gives up nothing: only the
        transaction's decision waits for the flush, and WAL is flushed in
        order, so every pending ack before it is durable with it; a crash
        before the decision makes the commit abort (reason crash,
        docs/transactions.md, "One WAL flush per transaction")."""
        if in_transaction or not self.consumer._durable_acks:
            return f"{name}_lazy"
        return name

    # -- receiving ----------------------------------------------------------

    @abc.abstractmethod
    def may_hand_out(self) -> bool:
        """Whether a queued message may be handed out now (the caller holds ``_cond``)."""

    @abc.abstractmethod
    def round_plan(self) -> Plan[int]:
        """Fill the receive queue once (fetch or claim); returns the messages queued."""

    @abc.abstractmethod
    def before_round(self) -> None:
        """Work the fetch loop does before each round (no I/O)."""

    @abc.abstractmethod
    def wait_timeout_plan(self, timeout: float) -> Plan[float | None]:
        """How long the fetch loop may wait for new data, at most ``timeout``
        (None: something is due now, look again at once)."""

    @abc.abstractmethod
    def after_beat_plan(self) -> Plan[None]:
        """After a heartbeat renewed the lease, before the cursors are read."""

    @abc.abstractmethod
    def assign(self, member_ids: list[int], cursors: list[Any], partitions: int) -> None:
        """Follow the assignment: ``member_ids`` are the subscription's live
        consumers in order, ``cursors`` the rows (partition, mark-delete
        offset, generation), ``partitions`` the topic's partition count."""

    @abc.abstractmethod
    def after_reconnect_plan(self) -> Plan[None]:
        """The fetch connection was replaced (the queue is dropped already)."""

    @abc.abstractmethod
    def forget_partition(self, partition: int) -> None:
        """What this delivery keeps of a partition goes (caller holds ``_cond``)."""

    # -- acknowledging ------------------------------------------------------

    @abc.abstractmethod
    def acknowledge_plan(self, items: list[object], txn: TransactionBase | None) -> Plan[None]:
        """Individual acks of ``items`` (Messages or MessageIds)."""

    @abc.abstractmethod
    def check_cumulative(self) -> None:
        """Raise if cumulative acks are not possible here."""

    @abc.abstractmethod
    def cumulative_plan(
        self, message_id: MessageId, size: int | None, txn: TransactionBase | None
    ) -> Plan[None]:
        """Acknowledge ``message_id`` and every earlier message of its partition."""

    @abc.abstractmethod
    def check_attachable(self) -> None:
        """Raise if an application transaction cannot acknowledge here."""

    @abc.abstractmethod
    def nack_plan(self, message: Message) -> Plan[None]:
        """Deliver ``message`` again later."""

    @abc.abstractmethod
    def take_refused(self, txn_id: TxnId) -> dict[int, tuple[list[int], list[int]]]:
        """A transaction ended: the messages (partition -> offsets, batch
        indexes) whose ack in it was refused, forgotten here."""

    @abc.abstractmethod
    def give_back_plan(self, refused: dict[int, tuple[list[int], list[int]]]) -> Plan[None]:
        """The transaction aborted: make ``refused`` deliverable again."""

    # -- moving and leaving ---------------------------------------------------

    @abc.abstractmethod
    def after_seek_plan(self) -> Plan[None]:
        """The subscription was moved and the queue of its partitions dropped."""

    @abc.abstractmethod
    def leave_plan(self) -> Plan[None]:
        """The consumer leaves: give back what it holds."""
