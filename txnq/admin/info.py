"""What the Admin API returns: topics, partitions, subscriptions, cursors,
consumers, transactions, backlog quotas and permissions, as frozen dataclasses
whose fields are the columns of the named queries that fill them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from txnq.transaction import TxnId


@dataclass(frozen=True)
class TopicInfo:
    topic_id: int
    name: str
    partitions: int
    retention_seconds: float
    retention_bytes: int
    ttl_seconds: float | None
    max_message_bytes: int
    created_at: datetime
    # Backlog quota (docs/backlog-quota.md): None uses the server default
    # (BACKLOG_QUOTA_DEFAULT_*), -1 is no limit.
    backlog_quota_bytes: int | None = None
    backlog_quota_seconds: float | None = None
    backlog_quota_policy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    high_watermark: int
    max_read_offset: int
    earliest_offset: int
    open_ledger_id: int
    last_publish_time: datetime | None
    ledgers: int
    payload_bytes: int


@dataclass(frozen=True)
class SubscriptionInfo:
    subscription_id: int
    name: str
    subscription_type: str
    isolation: str
    created_at: datetime
    backlog_entries: int
    consumers: int


@dataclass(frozen=True)
class CursorInfo:
    partition: int
    mark_delete_offset: int
    max_read_offset: int
    high_watermark: int
    backlog_entries: int
    individual_acks: int
    generation: int
    updated_at: datetime


@dataclass(frozen=True)
class ConsumerInfo:
    consumer_id: int
    name: str
    priority: int
    connected_at: datetime
    lease_expires_at: datetime


@dataclass(frozen=True)
class BacklogQuotaInfo:
    """A topic's backlog quota in effect (its own values, else the server
    defaults) and whether the last check found it over."""

    limit_bytes: int
    limit_seconds: float
    policy: str
    from_defaults: list[str]  # which of size/age/policy come from the server defaults
    exceeded_since: datetime | None
    exceeded_reason: str | None
    checked_at: datetime | None


@dataclass(frozen=True)
class TopicDescription:
    topic: TopicInfo
    partitions: list[PartitionInfo]
    subscriptions: list[SubscriptionInfo]
    backlog_quota: BacklogQuotaInfo | None = None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class SubscriptionDescription:
    topic: str
    subscription: SubscriptionInfo
    cursors: list[CursorInfo]
    consumers: list[ConsumerInfo]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class TransactionInfo:
    """A transaction as the transaction log holds it (view txnq.transaction_status)."""

    id: str
    tc_id: int
    txn_seq: int
    state: str
    reason: str | None
    opened_at: datetime
    timeout_at: datetime
    decided_at: datetime | None
    completed_at: datetime | None
    timeout_seconds: float
    transactional_id: str | None
    producer_epoch: int | None
    partitions: int
    partitions_marked: int
    subscriptions: int
    subscriptions_done: int
    age_seconds: float
    overdue_seconds: float | None
    #: How long an OPEN transaction has left before the system aborts it
    #: (negative once overdue); None when it is no longer OPEN.
    time_to_timeout_seconds: float | None

    @property
    def txn_id(self) -> TxnId:
        return TxnId(self.tc_id, self.txn_seq)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class TxnPartitionInfo:
    topic: str | None
    partition: int
    first_offset: int
    marker_offset: int | None


@dataclass(frozen=True)
class TxnSubscriptionInfo:
    topic: str | None
    partition: int
    subscription: str | None
    done: bool
    pending_acks: int


@dataclass(frozen=True)
class TxnLogEntry:
    at: datetime
    state: str
    reason: str | None
    detail: str | None


@dataclass(frozen=True)
class TransactionDescription:
    transaction: TransactionInfo
    partitions: list[TxnPartitionInfo]
    subscriptions: list[TxnSubscriptionInfo]
    history: list[TxnLogEntry]

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class HangingTransaction:
    """A transaction that holds a partition's max read offset back, or an open
    one far past its timeout; ``why`` says which."""

    id: str
    topic: str | None
    partition: int | None
    first_offset: int | None
    max_read_offset: int | None
    state: str | None
    opened_at: datetime | None
    timeout_at: datetime | None
    age_seconds: float | None
    why: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class TopicPermission:
    """One grant: ``role`` may ``action`` the topic ``resource`` (``kind``
    "topic") or every topic whose name starts with it (``kind`` "prefix").
    ``role_exists`` is False once the role was dropped (the grant stays until
    revoked, and applies again to a role created with that name)."""

    role: str
    resource: str
    kind: str
    action: str
    granted_by: str
    granted_at: datetime
    role_exists: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
