"""The errors of txnq: one hierarchy under :class:`TxnqError`.

Every message says what went wrong and what to do about it. Bad input is
rejected before anything is written, so a caller that catches one of these can
correct the call and retry without cleaning anything up.
"""

from __future__ import annotations


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
