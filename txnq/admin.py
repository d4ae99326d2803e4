"""Administration of topics, subscriptions and transactions: ``client.admin``.

Each call validates its arguments before anything is written, then calls one
txnq SQL function or named query.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from txnq import backlog_quota
from txnq.backlog_quota import BacklogQuotaInfo
from txnq.database.queries import QUERIES
from txnq.durations import Duration, Size, parse_duration, parse_size
from txnq.errors import (
    InvalidArgumentError,
    SubscriptionNotFoundError,
    TopicNotFoundError,
    TransactionError,
    TransactionNotFoundError,
)
from txnq.messages import MAX_OFFSET, check_time
from txnq.names import validate_name
from txnq.permissions import TopicPermission, parse_actions, target, validate_role
from txnq.transaction import TxnId

if TYPE_CHECKING:
    from txnq.client import Client

FOREVER = ("infinite", "forever", "-1")

# set_topic_policy(ttl=...) left out: keep the TTL (None removes it).
_UNCHANGED = object()


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


TXN_STATES = ("OPEN", "COMMITTING", "COMMITTED", "ABORTING", "ABORTED")


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


def parse_retention_time(value: Duration | None) -> float:
    """Seconds; -1 (or "infinite") keeps acknowledged data forever, 0 keeps none."""
    if value is None:
        return 0.0
    if isinstance(value, int | float) and not isinstance(value, bool) and value == -1:
        return -1.0
    if isinstance(value, str) and value.strip().lower() in FOREVER:
        return -1.0
    return parse_duration(value, what="retention")


def parse_retention_size(value: Size | None) -> int:
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value == -1:
        return -1
    if isinstance(value, str) and value.strip().lower() in FOREVER:
        return -1
    return parse_size(value, what="retention_size")


def _quota_params(
    size: object, age: object, policy: object, given: list[bool] | None = None
) -> dict[str, Any]:
    """Parameters of the set_backlog_quota query; ``given`` says which values
    to change (default: those not None). None or "default" -> the server
    default (NULL)."""
    set_bytes, set_seconds, set_policy = given or [v is not None for v in (size, age, policy)]
    return {
        "set_bytes": set_bytes,
        "limit_bytes": backlog_quota.topic_value(
            size, backlog_quota.parse_limit_bytes, "backlog_quota_size"
        ),
        "set_seconds": set_seconds,
        "limit_seconds": backlog_quota.topic_value(
            age, backlog_quota.parse_limit_seconds, "backlog_quota_age"
        ),
        "set_policy": set_policy,
        "policy": backlog_quota.topic_value(
            policy, backlog_quota.parse_policy, "backlog_quota_policy"
        ),
    }


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be True or False, not {value!r}")
    return value


def _check_partitions(partitions: object) -> int:
    if isinstance(partitions, bool) or not isinstance(partitions, int):
        raise InvalidArgumentError(f"partitions must be an int, not {type(partitions).__name__}")
    if not 1 <= partitions <= 4096:
        raise InvalidArgumentError(f"a topic has 1 to 4096 partitions, not {partitions}")
    return partitions


class Admin:
    """Topics, subscriptions and transactions; reached as ``client.admin``."""

    def __init__(self, client: Client) -> None:
        self._client = client

    # -- topics -------------------------------------------------------------

    def create_topic(
        self,
        name: str,
        partitions: int = 1,
        *,
        retention: Duration | None = 0,
        retention_size: Size | None = 0,
        ttl: Duration | None = None,
        max_message_bytes: Size | None = None,
        backlog_quota_size: Size | None = None,
        backlog_quota_age: Duration | None = None,
        backlog_quota_policy: str | None = None,
    ) -> TopicInfo:
        """Create a topic. ``retention`` keeps acknowledged data for that long
        (-1/"infinite": forever), ``retention_size`` caps it by bytes, ``ttl``
        acknowledges unconsumed messages older than that on the subscriptions'
        behalf (None: never). ``backlog_quota_size`` / ``backlog_quota_age`` /
        ``backlog_quota_policy`` limit each subscription's backlog (see
        :meth:`set_topic_policy`); None uses the server default."""
        quota = _quota_params(backlog_quota_size, backlog_quota_age, backlog_quota_policy)
        params = {
            "name": validate_name(name, "topic"),
            "partitions": _check_partitions(partitions),
            "retention_seconds": parse_retention_time(retention),
            "retention_bytes": parse_retention_size(retention_size),
            "ttl_seconds": None
            if ttl is None
            else parse_duration(ttl, what="ttl", allow_zero=False),
            "max_message_bytes": self._max_message_bytes(max_message_bytes),
        }
        if not any(quota[k] for k in ("set_bytes", "set_seconds", "set_policy")):
            self._client.execute("create_topic", params)
        else:
            # The topic and its quota in one PostgreSQL transaction.
            with self._client.connection() as conn, conn.transaction():
                row = conn.execute(QUERIES["create_topic"], params).fetchone()
                assert row is not None
                conn.execute(QUERIES["set_backlog_quota"], {**quota, "topic_id": row[0]})
        return self.get_topic(name)

    def _max_message_bytes(self, value: Size | None) -> int:
        cap = self._client.settings.max_message_bytes
        if value is None:
            return cap
        size = parse_size(value, what="max_message_bytes")
        if not 1 <= size <= cap:
            raise InvalidArgumentError(
                f"max_message_bytes must be between 1 and MAX_MESSAGE_BYTES ({cap}), got {size}"
            )
        return size

    def get_topic(self, name: str) -> TopicInfo:
        rows = self._client.query("topic_by_name", {"name": validate_name(name, "topic")})
        if not rows:
            raise TopicNotFoundError(
                f"topic {name!r} does not exist: create it with client.admin.create_topic "
                f"or `txnq topics create {name}`"
            )
        return TopicInfo(**rows[0])

    def list_topics(self) -> list[TopicInfo]:
        fields = {f.name for f in dataclasses.fields(TopicInfo)}
        return [
            TopicInfo(**{k: v for k, v in row.items() if k in fields})
            for row in self._client.query("list_topics", {})
        ]

    def describe_topic(self, name: str) -> TopicDescription:
        topic = self.get_topic(name)
        partitions = self._client.query("topic_partitions", {"topic_id": topic.topic_id})
        quota = self._client.query("backlog_quota_info", {"topic_id": topic.topic_id})
        return TopicDescription(
            topic=topic,
            partitions=[PartitionInfo(**row) for row in partitions],
            subscriptions=self.list_subscriptions(name),
            backlog_quota=BacklogQuotaInfo(**quota[0]) if quota else None,
        )

    def update_topic(self, name: str, *, partitions: int) -> TopicInfo:
        """Grow a topic to ``partitions`` partitions (never shrink, as Kafka and Pulsar)."""
        topic = self.get_topic(name)
        count = _check_partitions(partitions)
        if count < topic.partitions:
            raise InvalidArgumentError(
                f"topic {name!r} has {topic.partitions} partitions and can only grow "
                "(keys would move to other partitions and lose their order)"
            )
        self._client.execute("add_partitions", {"topic_id": topic.topic_id, "partitions": count})
        return self.get_topic(name)

    def set_topic_policy(
        self,
        name: str,
        *,
        retention: Duration | None = None,
        retention_size: Size | None = None,
        ttl: Duration | object | None = _UNCHANGED,
        backlog_quota_size: Size | object | None = _UNCHANGED,
        backlog_quota_age: Duration | object | None = _UNCHANGED,
        backlog_quota_policy: str | object | None = _UNCHANGED,
    ) -> TopicInfo:
        """Change a topic's lifecycle policies; what is not given stays.

        ``retention`` keeps consumed ledgers for that long (-1/"infinite":
        forever, 0: not by time), ``retention_size`` while they add up to at
        most that (-1: no cap, 0: not by size); both 0 deletes what every
        subscription has consumed at the next retention run. ``ttl``
        acknowledges messages older than that on the subscriptions' behalf;
        ``ttl=None`` removes it. The lifecycle jobs read the new values at
        their next run (docs/lifecycle.md).

        Backlog quota (docs/backlog-quota.md): ``backlog_quota_size`` (bytes
        or "10GiB") and ``backlog_quota_age`` (a duration) limit each
        subscription's backlog, -1 for no limit; ``backlog_quota_policy`` is
        ``producer_hold``, ``producer_error`` or ``consumer_backlog_eviction``.
        None (or "default") for any of them uses the server default
        (BACKLOG_QUOTA_DEFAULT_*). A change clears the topic's over-quota
        state; the next check (scheduler, ``txnq gc run``, a held producer)
        decides anew.
        """
        topic = self.get_topic(name)
        quota_given = [
            v is not _UNCHANGED
            for v in (backlog_quota_size, backlog_quota_age, backlog_quota_policy)
        ]
        if (
            retention is None
            and retention_size is None
            and ttl is _UNCHANGED
            and not any(quota_given)
        ):
            raise InvalidArgumentError(
                "nothing to change: give retention, retention_size, ttl, backlog_quota_size, "
                "backlog_quota_age and/or backlog_quota_policy"
            )
        quota = _quota_params(
            None if backlog_quota_size is _UNCHANGED else backlog_quota_size,
            None if backlog_quota_age is _UNCHANGED else backlog_quota_age,
            None if backlog_quota_policy is _UNCHANGED else backlog_quota_policy,
            given=quota_given,
        )
        params = {
            "topic_id": topic.topic_id,
            "retention_seconds": None if retention is None else parse_retention_time(retention),
            "retention_bytes": None
            if retention_size is None
            else parse_retention_size(retention_size),
            "ttl_seconds": None
            if ttl is None or ttl is _UNCHANGED
            else parse_duration(ttl, what="ttl", allow_zero=False),  # type: ignore[arg-type]
            "clear_ttl": ttl is None,
        }
        if retention is not None or retention_size is not None or ttl is not _UNCHANGED:
            self._client.execute("set_topic_policy", params)
        if any(quota_given):
            self._client.execute("set_backlog_quota", {**quota, "topic_id": topic.topic_id})
        return self.get_topic(name)

    def delete_topic(self, name: str, *, force: bool = False) -> None:
        """Delete a topic; refused while a subscription has a backlog or a
        consumer is connected, unless ``force``."""
        forced = _flag(force, "force")
        topic = self.get_topic(name)
        self._client.execute("delete_topic", {"topic_id": topic.topic_id, "force": forced})

    # -- permissions (docs/security.md) ------------------------------------

    def grant(
        self,
        role: str,
        *,
        topic: str | None = None,
        prefix: str | None = None,
        actions: str | Iterable[str],
    ) -> int:
        """Allow ``role`` to ``actions`` (produce, consume, admin; admin
        includes the other two) the topic ``topic``, or every topic whose name
        starts with ``prefix`` (topics created later included). The topic need
        not exist yet. Returns how many grants were added."""
        resource, is_prefix = target(topic, prefix)
        params = {
            "role": validate_role(role),
            "resource": resource,
            "is_prefix": is_prefix,
            "actions": parse_actions(actions),
        }
        return int(self._client.query("grant_topic_permission", params)[0]["added"])

    def revoke(
        self,
        role: str,
        *,
        topic: str | None = None,
        prefix: str | None = None,
        actions: str | Iterable[str] | None = None,
    ) -> int:
        """Take back grants of :meth:`grant`: those of ``role`` on exactly
        that topic or prefix, for ``actions`` (None: all). Returns how many
        were removed."""
        resource, is_prefix = target(topic, prefix)
        params = {
            "role": validate_role(role),
            "resource": resource,
            "is_prefix": is_prefix,
            "actions": parse_actions(actions, allow_none=True),
        }
        return int(self._client.query("revoke_topic_permission", params)[0]["removed"])

    def permissions(
        self, *, role: str | None = None, topic: str | None = None
    ) -> list[TopicPermission]:
        """The grants the caller may see (admins: all; a role: its own and
        those on topics it administers); only ``role``'s, and only those that
        apply to ``topic`` (its own and every prefix it falls under), when given."""
        params = {
            "role": None if role is None else validate_role(role),
            "topic": None if topic is None else validate_name(topic, "topic"),
        }
        return [TopicPermission(**row) for row in self._client.query("topic_permissions", params)]

    # -- subscriptions ------------------------------------------------------

    def list_subscriptions(self, topic: str) -> list[SubscriptionInfo]:
        info = self.get_topic(topic)
        return [
            SubscriptionInfo(**row)
            for row in self._client.query("list_subscriptions", {"topic_id": info.topic_id})
        ]

    def _subscription(self, topic: TopicInfo, name: str) -> dict[str, Any]:
        rows = self._client.query(
            "subscription_by_name",
            {"topic_id": topic.topic_id, "name": validate_name(name, "subscription")},
        )
        if not rows:
            raise SubscriptionNotFoundError(
                f"topic {topic.name!r} has no subscription {name!r}: "
                "subscribe to create it, or list them with `txnq subscriptions list`"
            )
        return rows[0]

    def describe_subscription(self, topic: str, name: str) -> SubscriptionDescription:
        info = self.get_topic(topic)
        sub = self._subscription(info, name)
        summary = next(s for s in self.list_subscriptions(topic) if s.name == name)
        key = {"topic_id": info.topic_id, "subscription_id": sub["subscription_id"]}
        return SubscriptionDescription(
            topic=info.name,
            subscription=summary,
            cursors=[CursorInfo(**r) for r in self._client.query("subscription_cursors", key)],
            consumers=[
                ConsumerInfo(**r) for r in self._client.query("subscription_consumers", key)
            ],
        )

    def reset_subscription(
        self, topic: str, name: str, to: str | int | datetime = "earliest"
    ) -> list[CursorInfo]:
        """Move the subscription's cursors on every partition: to ``"earliest"``,
        ``"latest"``, an offset (the next message delivered), or a publish time.
        Connected consumers rewind to the new position."""
        info = self.get_topic(topic)
        sub = self._subscription(info, name)
        offset, time = seek_target(to)
        for partition in range(info.partitions):
            self._client.execute(
                "seek",
                {
                    "topic_id": info.topic_id,
                    "partition": partition,
                    "subscription_id": sub["subscription_id"],
                    "offset": offset,
                    "time": time,
                },
            )
        return self.describe_subscription(topic, name).cursors

    def delete_subscription(self, topic: str, name: str, *, force: bool = False) -> None:
        """Delete a subscription; refused while consumers are connected unless ``force``."""
        forced = _flag(force, "force")
        info = self.get_topic(topic)
        sub = self._subscription(info, name)
        params = {"subscription_id": sub["subscription_id"], "except_consumer_id": None}
        self._client.execute("unsubscribe", {**params, "force": forced})

    # -- transactions --------------------------------------------------------

    def list_transactions(
        self,
        *,
        state: str | None = None,
        older_than: Duration | None = None,
        limit: int = 100,
    ) -> list[TransactionInfo]:
        """Transactions of the transaction log, newest first: only those in
        ``state`` (OPEN, COMMITTING, COMMITTED, ABORTING, ABORTED) and opened at
        least ``older_than`` ago, when given; at most ``limit``."""
        wanted = None
        if state is not None:
            if not isinstance(state, str) or state.strip().upper() not in TXN_STATES:
                raise InvalidArgumentError(
                    f"state must be one of {', '.join(TXN_STATES)}, not {state!r}"
                )
            wanted = state.strip().upper()
        age = 0.0 if older_than is None else parse_duration(older_than, what="older_than")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100_000:
            raise InvalidArgumentError(f"limit must be an int from 1 to 100000, not {limit!r}")
        rows = self._client.query("txn_list", {"state": wanted, "older_than": age, "limit": limit})
        return [TransactionInfo(**row) for row in rows]

    def get_transaction(self, txn_id: TxnId | str | int) -> TransactionInfo:
        key = _txn_key(txn_id)
        rows = self._client.query("txn_describe", key)
        if not rows:
            raise TransactionNotFoundError(
                f"transaction {TxnId(key['txn_tc'], key['txn_seq'])} does not exist: "
                "list them with `txnq txn list`"
            )
        return TransactionInfo(**rows[0])

    def describe_transaction(self, txn_id: TxnId | str | int) -> TransactionDescription:
        """A transaction with the partitions it produced to (and their markers),
        the subscriptions it acknowledged on, and its state history."""
        info = self.get_transaction(txn_id)
        key = {"txn_tc": info.tc_id, "txn_seq": info.txn_seq}
        return TransactionDescription(
            transaction=info,
            partitions=[
                TxnPartitionInfo(**r) for r in self._client.query("txn_describe_partitions", key)
            ],
            subscriptions=[
                TxnSubscriptionInfo(**r)
                for r in self._client.query("txn_describe_subscriptions", key)
            ],
            history=[TxnLogEntry(**r) for r in self._client.query("txn_history", key)],
        )

    def abort_transaction(self, txn_id: TxnId | str | int) -> TransactionInfo:
        """Abort a transaction as an operator (reason ``admin``) and finish the
        abort at once: ABORT markers written, pending acks released. The client
        that owns it gets TransactionEndedError on its next use. Aborting an
        aborted transaction finishes what is left of it; a committed (or
        committing) one cannot be aborted."""
        info = self.get_transaction(txn_id)
        key = {"txn_tc": info.tc_id, "txn_seq": info.txn_seq}
        decided = self._client.query("txn_admin_abort", key)[0]
        if decided["state"] in ("COMMITTING", "COMMITTED"):
            raise TransactionError(
                f"transaction {info.id} is {decided['state']}: a committed transaction "
                "cannot be aborted (its commit completes by itself)"
            )
        self._client.query("complete_txn", key)
        return self.get_transaction(info.txn_id)

    def find_hanging_transactions(self, *, grace: Duration = 10.0) -> list[HangingTransaction]:
        """Transactions that hold a partition's max read offset (and so every
        read_committed consumer) back: open more than ``grace`` past their
        timeout (no scheduler aborts them), decided more than ``grace`` ago
        without their marker (no coordinator worker finishes them), or open
        longer than the maximum transaction timeout. Also open transactions past
        their timeout that wrote nothing. The tool of Kafka's KIP-664."""
        seconds = parse_duration(grace, what="grace")
        rows = self._client.query("txn_find_hanging", {"grace_seconds": seconds})
        return [HangingTransaction(**row) for row in rows]


# Offsets are clamped by seek_v1 to the retained range, so these stand for the ends.
EARLIEST = -(2**62)
LATEST = 2**62


def seek_target(to: object) -> tuple[int | None, datetime | None]:
    """(offset, time) for seek_v1 from "earliest" / "latest" / an offset / a datetime."""
    if isinstance(to, str):
        if to == "earliest":
            return EARLIEST, None
        if to == "latest":
            return LATEST, None
        raise InvalidArgumentError(
            f"seek target must be 'earliest', 'latest', an offset or a datetime, not {to!r}"
        )
    if isinstance(to, datetime):
        if to.tzinfo is None:
            raise InvalidArgumentError("a seek time must be timezone-aware")
        return None, check_time(to, "a seek time")
    if isinstance(to, int) and not isinstance(to, bool):
        if not 0 <= to <= MAX_OFFSET:
            raise InvalidArgumentError(f"an offset is >= 0 and < 2**63, got {to}")
        return to, None
    raise InvalidArgumentError(
        "seek target must be 'earliest', 'latest', an offset or a datetime, "
        f"not {type(to).__name__}"
    )


def _txn_key(txn_id: TxnId | str | int) -> dict[str, int]:
    parsed = TxnId.parse(txn_id) if not isinstance(txn_id, TxnId) else txn_id
    checked = TxnId._checked(parsed.tc_id, parsed.seq)  # a TxnId made by hand may hold anything
    return {"txn_tc": checked.tc_id, "txn_seq": checked.seq}
