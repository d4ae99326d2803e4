"""Administration of topics, subscriptions and transactions: ``client.admin``.

Each call validates its arguments before anything is written, then calls one
txnq SQL function or named query. The parts, one module per concern:

- ``topics``: topics and their policies (retention, TTL, backlog quota);
- ``subscriptions``: describing, seeking and deleting subscriptions;
- ``transactions``: inspecting and aborting transactions;
- ``permissions``: grants per topic or topic prefix (docs/security.md);
- ``info``: the dataclasses all of them return;
- ``base``: what the Admin needs of a client (:class:`NamedQueryRunner`).

The Admin sits below the client, the producer and the consumer: it imports
none of them.
"""

from __future__ import annotations

from txnq.admin.base import NamedQueryRunner
from txnq.admin.info import (
    BacklogQuotaInfo,
    ConsumerInfo,
    CursorInfo,
    HangingTransaction,
    PartitionInfo,
    SubscriptionDescription,
    SubscriptionInfo,
    TopicDescription,
    TopicInfo,
    TopicPermission,
    TransactionDescription,
    TransactionInfo,
    TxnLogEntry,
    TxnPartitionInfo,
    TxnSubscriptionInfo,
)
from txnq.admin.permissions import PermissionAdmin
from txnq.admin.subscriptions import EARLIEST, LATEST, SubscriptionAdmin, seek_target
from txnq.admin.transactions import TXN_STATES, TransactionAdmin
from txnq.policies import FOREVER, parse_retention_size, parse_retention_time


class Admin(SubscriptionAdmin, TransactionAdmin, PermissionAdmin):
    """Topics, subscriptions and transactions; reached as ``client.admin``."""


__all__ = [
    "EARLIEST",
    "FOREVER",
    "LATEST",
    "TXN_STATES",
    "Admin",
    "BacklogQuotaInfo",
    "ConsumerInfo",
    "CursorInfo",
    "HangingTransaction",
    "NamedQueryRunner",
    "PartitionInfo",
    "SubscriptionDescription",
    "SubscriptionInfo",
    "TopicDescription",
    "TopicInfo",
    "TopicPermission",
    "TransactionDescription",
    "TransactionInfo",
    "TxnLogEntry",
    "TxnPartitionInfo",
    "TxnSubscriptionInfo",
    "parse_retention_size",
    "parse_retention_time",
    "seek_target",
]
