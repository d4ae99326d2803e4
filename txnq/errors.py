"""The errors of txnq: one hierarchy under :class:`TxnqError`.

Every message says what went wrong and what to do about it. Bad input is
rejected before anything is written, so a caller that catches one of these can
correct the call and retry without cleaning anything up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from txnq.messages import MessageId


class TxnqError(Exception):
    """Base class of every error txnq raises on purpose."""


class ConfigurationError(TxnqError):
    """A setting, DSN or option has a value txnq cannot use."""


class InvalidArgumentError(TxnqError, ValueError):
    """A public call got a value of the wrong type or out of range."""


class UnknownOptionError(InvalidArgumentError, TypeError):
    """A call got a keyword option it does not know (``client.producer(...,
    nope=2)``); a TypeError too, as Python's own error for an unknown keyword."""


class InvalidNameError(InvalidArgumentError):
    """A topic, subscription or producer name breaks the naming rules."""


class SchemaOutdatedError(TxnqError):
    """The database's txnq schema is older (or newer) than this library."""


class ServerUnavailableError(TxnqError):
    """PostgreSQL could not be reached or started."""


class TopicNotFoundError(TxnqError):
    """The named topic does not exist."""


class TopicExistsError(TxnqError):
    """A topic of that name exists already."""


class TopicBusyError(TxnqError):
    """The topic cannot be changed while subscriptions still have a backlog."""


class BacklogQuotaExceededError(TopicBusyError):
    """A send was refused because a subscription of the topic is over the
    topic's backlog quota (policy ``producer_error`` at once, ``producer_hold``
    after the hold timeout). Nothing of the refused batch was written; what
    was sent before stays. A subclass of TopicBusyError: in both, the topic's
    subscriptions hold too much backlog for the operation."""


class SubscriptionNotFoundError(TxnqError):
    """The named subscription does not exist on the topic."""


class SubscriptionTypeMismatchError(TxnqError):
    """The subscription exists with another type or isolation."""


class ConsumerBusyError(TxnqError):
    """An exclusive subscription already has a live consumer."""


class MessageTooLargeError(InvalidArgumentError):
    """A payload is larger than the topic's maximum message size."""


class ProducerFencedError(TxnqError):
    """A newer producer with the same name or transactional id took over."""


class OutOfOrderSequenceError(TxnqError):
    """A producer sequence number skipped ahead: messages in between are missing."""


class ClosedError(TxnqError):
    """The client, producer or consumer was closed."""


class MessageDecodeError(TxnqError):
    """A stored message cannot be decoded into a :class:`~txnq.Message`: an
    event or publish time outside what Python's datetime holds (after year
    9999, 'infinity'), or properties that are not an object of strings. Raised
    by ``receive()`` / ``batch_receive()`` in the message's place; the other
    messages keep coming. The message counts as delivered: acknowledge it by
    ``message_id`` to skip it (else it comes back like any unacknowledged
    message), or subscribe with a ``dead_letter_policy`` (shared and
    key_shared subscriptions) to have such messages moved to the dead-letter
    topic. ``field`` names what failed, ``detail`` what it holds; ``value``
    and ``key_bytes`` are the message's payload and key."""

    def __init__(
        self,
        message_id: MessageId,
        field: str,
        detail: str,
        value: bytes | None = None,
        key_bytes: bytes | None = None,
        note: str = "",
    ) -> None:
        self.message_id = message_id
        self.field = field
        self.detail = detail
        self.value = value
        self.key_bytes = key_bytes
        super().__init__(
            f"message {message_id} cannot be decoded: its {field} {detail}{note}. The other "
            "messages keep coming; acknowledge this one by its id to skip it "
            "(consumer.acknowledge(error.message_id)), or, on a shared or key_shared "
            "subscription, subscribe with a dead_letter_policy to have such messages moved "
            "to the dead-letter topic"
        )

    def __reduce__(self) -> tuple[object, ...]:
        return (
            type(self),
            (self.message_id, self.field, self.detail, self.value, self.key_bytes),
        )


class BackgroundFailureError(TxnqError):
    """A consumer's fetch thread (or asyncio task) or a producer's flush thread
    stopped on an unexpected error, named in the message (and its
    ``__cause__``). Every later call of that consumer or producer raises this;
    ``close()`` still works: close it and create a new one (what a consumer
    had not acknowledged is delivered again; a producer's messages that were
    not written have this error in their PendingSend and callbacks)."""


class TimeoutError(TxnqError):
    """An operation did not finish within its timeout."""


class ConsumerExpiredError(TxnqError):
    """A consumer session missed its lease and was removed; it must re-register."""


class TransactionError(TxnqError):
    """Base class of the errors of transactions."""


class TransactionConflictError(TransactionError):
    """A message is pending-acked by another open transaction, or already
    acknowledged: the message is not this transaction's to acknowledge."""


class TransactionEndedError(TransactionError):
    """The transaction was committed or aborted: it takes no more writes or acks."""


class TransactionTimedOutError(TransactionEndedError):
    """The transaction passed its timeout and was aborted by the system."""


class TransactionNotFoundError(TransactionError):
    """No transaction has this id."""


class TransactionAbortedError(TransactionEndedError):
    """``commit()`` could not commit: the transaction was aborted instead (a write
    in it failed, it timed out, or an administrator or a newer producer aborted it)."""


class GcBusyError(TxnqError):
    """Storage GC could not go on now: another GC run holds its lock, or readers
    and appends held ``txnq.entries`` longer than the swap may wait. Nothing was
    lost or changed half-way; the next run (or a retry) picks it up."""


class SparkUnavailableError(TxnqError):
    """Spark cannot run here: no Java 17+, no PostgreSQL JDBC driver, no PySpark,
    or a DSN that JDBC cannot reach (docs/spark.md says what to install)."""


class IngestionBusyError(TxnqError):
    """Another run of the same Spark ingestion is in progress."""


class PreparedTransactionLostError(TransactionError):
    """A two-phase-commit sink's prepared transaction, which the engine's
    checkpoint says was committed, was aborted by txnq (its timeout passed
    before the engine came back): its messages are lost."""


class PermissionDeniedError(TxnqError):
    """The role may not do this: it holds no grant for this action on the
    topic (SQLSTATE TQ018; an admin grants it with ``txnq topics grant``), the
    transaction belongs to another role (TQ018), or the role lacks EXECUTE on
    the function (42501: it is in none of the txnq roles that may call it).
    docs/security.md lists the roles and what each may call."""


class NotSupportedThroughProxyError(TxnqError):
    """A call reached a txnq cluster's proxy database that the proxy does not
    route yet (SQLSTATE TQ030): it spans partitions or needs the whole cluster
    (shared subscriptions, inspection views, lifecycle jobs), or it needs one
    database (application transactions: ``txnq.attach(conn)``).
    docs/cluster.md lists what a proxy routes; nothing was changed."""


class ClusterInconsistentError(TxnqError):
    """The shards of a txnq cluster answered a call that must be alike on all of
    them differently (SQLSTATE TQ031): a metadata change reached some shards
    only. ``txnq cluster status`` shows the shards; docs/cluster.md the repair."""
