"""A consumer's session on its subscription: registering, the lease renewed
by a heartbeat (every third of ``lease``; liveness is a lease, not a guess),
following the assignment and the cursors, and the fetch loop that fills the
receive queue through the consumer's delivery (txnq.consumer.delivery).

New data wakes a waiting consumer through LISTEN/NOTIFY -- one NOTIFY per
wait, registered in ``txnq.consumer_waiters`` -- and a poll every
``poll_interval`` is the fallback (LISTEN does not pass PgBouncer's
transaction pooling). Through a cluster's proxy the appends notify on the
shards, so the wait LISTENs on the shards that own the partitions too
(:class:`~txnq.database.plans.ListenOn`, txnq.consumer.shard_listeners).
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import time
from typing import TYPE_CHECKING, Any

import psycopg

from txnq import errors
from txnq.consumer.message_queue import MessageQueue
from txnq.database.plans import (
    Call,
    Listen,
    ListenOn,
    Plan,
    Reconnect,
    Sleep,
    WaitRoom,
    retried_once,
)
from txnq.database.routes import Owner, topic_owner
from txnq.database.shards import partition_shards
from txnq.failpoints import raise_if_armed

if TYPE_CHECKING:
    from txnq.admin import TopicInfo
    from txnq.consumer.acks import AckTracker
    from txnq.consumer.delivery import Delivery
    from txnq.settings import Settings

log = logging.getLogger("txnq.consumer")


class ConsumerSession(abc.ABC):
    """The session part of :class:`~txnq.consumer.base.ConsumerBase`, which
    sets up the state declared here."""

    _cond: Any
    _queue: MessageQueue
    _queue_size: int
    _closed: bool
    _failure: errors.TxnqError | None
    _unsubscribing: bool
    _heartbeat_due: float
    _lease: float
    _lease_holds_until: float
    _poll_interval: float
    _assigned: set[int]
    _epoch: dict[int, int]
    _acks: AckTracker
    _delivery: Delivery
    _topic: TopicInfo
    _topic_id: int
    _initial_position: str
    _priority: int
    topic: str
    name: str
    subscription: str
    subscription_type: str
    isolation: str
    subscription_id: int
    consumer_id: int
    #: Through a cluster's proxy: each partition's shard and the shard's DSN
    #: (the client's own, relocated), for the wake-ups; None on one server.
    _shards: dict[int, tuple[int, str]] | None = None
    _client_dsn: str = ""
    _shard_map_failed = False  # logged once
    #: Seeks so far (txnq.consumer.claim_delivery drops a claim a seek overtook).
    _seeks = 0

    def _direct_owner(self, settings: Settings) -> Owner:
        """Where the fetches and acks of a partition go directly (txnq.database.routes):
        its shard, through a cluster's proxy with CLUSTER_ROUTE direct; else nowhere."""
        direct = settings.cluster_route == "direct"
        return topic_owner(self._topic_id, lambda: self._shards if direct else None)

    # -- the fetch loop -----------------------------------------------------

    def _subscribe_plan(self) -> Plan[None]:
        """Create or join the subscription and register this consumer."""
        self.subscription_id = yield from retried_once(
            Call(
                "subscribe",
                {
                    "topic_id": self._topic_id,
                    "name": self.subscription,
                    "subscription_type": self.subscription_type,
                    "isolation": self.isolation,
                    "initial_position": self._initial_position,
                },
                "value",
            )
        )
        self.consumer_id = yield from self._register_plan()

    def _locate_shards_plan(self, cluster_proxy: Plan[bool], dsn: str) -> Plan[None]:
        """Through a cluster's proxy (``cluster_proxy``: the client's answer,
        looked up once per client), where each partition's shard is: the wait
        LISTENs there. Nothing on one server."""
        if not (yield from cluster_proxy):
            return
        self._client_dsn = dsn
        yield from self._shard_map_plan()

    def _shard_map_plan(self) -> Plan[None]:
        try:
            rows = yield Call(
                "cluster_partition_shards",
                {"topic_id": self._topic_id, "partitions": self._topic.partitions},
                "all",
            )
            self._shards = partition_shards(self._client_dsn, rows)
        except psycopg.OperationalError:
            raise  # a lost connection: the caller's to handle, as any call's
        except (errors.TxnqError, psycopg.Error) as exc:
            # The wake-ups are an optimisation: without the map the consumer
            # polls the partitions it lacks, as before.
            if self._shard_map_failed:
                return
            self._shard_map_failed = True
            log.warning(
                "consumer %r of topic %r could not look up the cluster's shard map (%s): "
                "partitions it does not know the shard of are polled every %gs",
                self.name,
                self.topic,
                exc,
                self._poll_interval,
            )

    def _register_plan(self) -> Plan[int]:
        consumer_id = yield from retried_once(
            Call(
                "register_consumer",
                {
                    "subscription_id": self.subscription_id,
                    "name": self.name,
                    "priority": self._priority,
                    "lease_seconds": self._lease,
                },
                "value",
            )
        )
        return int(consumer_id)

    def _run_plan(self) -> Plan[None]:
        """The fetch thread's (or task's) loop: heartbeats, fetching or claiming
        into the receive queue, waiting for data; ends when closed or failed."""
        while True:
            with self._cond:
                if self._closed:
                    return
            try:
                raise_if_armed("consumer_fetch")
                if time.monotonic() >= self._heartbeat_due:
                    yield from self._heartbeat_plan()
                self._delivery.before_round()
                if not self._has_room():
                    yield WaitRoom(min(self._poll_interval, self._lease / 3))
                    continue
                queued = yield from self._delivery.round_plan()
                if queued == 0:
                    yield from self._wait_for_data_plan()
            except errors.TxnqError as exc:
                with self._cond:
                    own_unsubscribe = self._unsubscribing and isinstance(
                        exc, errors.SubscriptionNotFoundError
                    )
                    if not own_unsubscribe:
                        self._failure = exc
                        self._cond.notify_all()
                if not own_unsubscribe:
                    return
                # This consumer's own unsubscribe() deleted the subscription:
                # its close() ends the loop; a failed unsubscribe clears the
                # flag and the next round reports whatever is wrong.
                yield Sleep(self._poll_interval)
            except psycopg.OperationalError:
                yield from self._reconnect_fetch_plan()
            except Exception as exc:
                # Anything else would end the loop silently, and receive()
                # would return None forever: stop, and say why at every call.
                self._fetch_failed(exc)
                return

    def _fetch_failed(self, exc: BaseException) -> None:
        """The fetch loop (thread or task) stopped on ``exc``, which is not a
        txnq error or a lost connection: every later call raises
        BackgroundFailureError naming it; close() still works."""
        failure = errors.BackgroundFailureError(
            f"consumer {self.name!r} of subscription {self.subscription!r} on topic "
            f"{self.topic!r} stopped receiving: its fetch loop failed with "
            f"{type(exc).__name__}: {exc}. Close it and subscribe again (what it did not "
            "acknowledge is delivered again)"
        )
        failure.__cause__ = exc
        log.error("%s", failure, exc_info=exc)
        # A retry-letter consumer fails its parent too: they share one queue.
        parent = getattr(self, "_retry_parent", None)
        with self._cond:
            for consumer in (self, parent):
                if consumer is not None and consumer._failure is None:
                    consumer._failure = failure
            self._cond.notify_all()

    def _reconnect_fetch_plan(self) -> Plan[None]:
        """A new fetch connection, until one works (or the consumer closes)."""
        while True:
            with self._cond:
                if self._closed:
                    return
            yield Sleep(min(self._poll_interval, 1.0))
            try:
                yield Reconnect()
                with self._cond:
                    for p in list(self._assigned):
                        self._forget_partition(p)
                    self._assigned.clear()
                yield from self._delivery.after_reconnect_plan()
            except (psycopg.Error, errors.TxnqError):
                continue  # reconnect (and release) again
            self._heartbeat_due = 0.0
            return

    def _has_room(self) -> bool:
        with self._cond:
            return len(self._queue) < self._queue_size

    def _heartbeat_plan(self) -> Plan[None]:
        """Renew the lease; recompute the assignment; follow cursor resets."""
        sent = time.monotonic()
        self._heartbeat_due = sent + self._lease / 3
        beat = {"consumer_id": self.consumer_id, "lease_seconds": self._lease}
        try:
            members = yield Call("heartbeat_consumer", beat, "all")
        except errors.ConsumerExpiredError:
            # The lease ran out (e.g. a long pause): start a new session. For an
            # exclusive subscription somebody else may have taken over meanwhile;
            # on a shared one, what this consumer held goes to the others.
            with self._cond:
                for p in list(self._assigned):
                    self._forget_partition(p)
                self._assigned.clear()
            sent = time.monotonic()
            self.consumer_id = yield from self._register_plan()
            members = yield Call(
                "heartbeat_consumer",
                {"consumer_id": self.consumer_id, "lease_seconds": self._lease},
                "all",
            )
        with self._cond:
            self._lease_holds_until = sent + self._lease
            self._cond.notify_all()
        yield from self._delivery.after_beat_plan()
        ids = [row[0] for row in members]
        cursors = yield Call(
            "cursor_positions",
            {"topic_id": self._topic_id, "subscription_id": self.subscription_id},
            "all",
        )
        # Partitions added to the topic come with cursors: follow them (as Pulsar's
        # autoUpdatePartitions), at the latest one heartbeat after they appear.
        partitions = max([self._topic.partitions, *(row[0] + 1 for row in cursors)])
        if partitions > self._topic.partitions:
            self._topic = dataclasses.replace(self._topic, partitions=partitions)
        if self._shards is not None and partitions > len(self._shards):
            yield from self._shard_map_plan()
        self._delivery.assign(ids, cursors, partitions)

    def _forget_partition(self, partition: int) -> None:
        """Drop what was fetched of a partition (caller holds _cond): it will be
        fetched again from the cursor, by this consumer or the next owner."""
        key = (self.topic, partition)
        # Fetches from before now are discarded (the epoch).
        self._epoch[partition] = self._epoch.get(partition, 0) + 1
        self._acks.forget_partition(partition)
        self._delivery.forget_partition(partition)
        # In place and by topic too: a retry-letter consumer shares its parent's
        # queue (a new queue, or the parent's messages dropped, strands claims).
        self._queue.drop_partition(*key)

    def _wait_for_data_plan(self) -> Plan[None]:
        """Register as a waiter, look once more (no lost wake-up), then wait for a
        NOTIFY, the next heartbeat, a nack coming due, or the poll interval."""
        with self._cond:
            partitions = sorted(self._assigned)
        due = min(self._poll_interval, max(0.0, self._heartbeat_due - time.monotonic()))
        timeout = yield from self._delivery.wait_timeout_plan(due)
        if timeout is None:
            return
        if partitions:
            if self._shards is not None:
                # Through a proxy the appends notify on the partitions' shards:
                # LISTEN there before registering (no lost wake-up).
                yield ListenOn(dict(self._shards[p] for p in partitions if p in self._shards))
            yield Call(
                "register_waiters",
                {
                    "topic_id": self._topic_id,
                    "consumer_id": self.consumer_id,
                    "partitions": partitions,
                },
                "none",
            )
            queued = yield from self._delivery.round_plan()
            if queued > 0:
                return
        yield Listen(timeout)
