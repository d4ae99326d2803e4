"""The sync face of the consumer: ``txnq.Consumer`` (``client.subscribe()``).
A fetch thread runs the session's loop on its own connection; acks, nacks
and seeks run on a second one. The retry-letter topic of ``reconsume_later``
is read by a second consumer that delivers into this one's receive queue.
Everything decided is in :mod:`txnq.consumer.retry_letters` and below."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import psycopg
from psycopg import sql

from txnq import errors
from txnq.consumer.dead_letters import Backoff, DeadLetterPolicy, LetterClient, ensure_topic
from txnq.consumer.retry_letters import RetryLettersBase
from txnq.consumer.shard_listeners import SyncShardListeners
from txnq.database.connections import connect
from txnq.database.plans import Plan, SyncIO, run
from txnq.database.routes import SyncRoutes
from txnq.durations import Duration
from txnq.messages import Message, MessageId
from txnq.transaction.attached_sync import process
from txnq.transaction.sync import checked_transaction

if TYPE_CHECKING:
    from txnq.admin import Admin
    from txnq.settings import Settings
    from txnq.transaction.attached_sync import AttachedTransaction
    from txnq.transaction.sync import Transaction

T = TypeVar("T")


class ConsumerClient(LetterClient, Protocol):
    """What a sync consumer needs of its client (``txnq.Client``): settings,
    the Admin API, connections, and (for retry and dead letters) producers
    and transactions."""

    settings: Settings
    admin: Admin
    dsn: str

    def checkout(self) -> Any: ...

    def _cluster_proxy_plan(self) -> Plan[bool]: ...

    def _forget(self, child: Any) -> None: ...


class Consumer(RetryLettersBase):
    """Receives messages from one subscription. Create with ``client.subscribe``.

    Options: ``initial_position`` ("latest" or "earliest"; where a new
    subscription starts), ``isolation`` ("read_committed" or
    "read_uncommitted"), ``consumer_name``, ``priority`` (failover order, lower
    first), ``receiver_queue_size`` (messages prefetched, 1000),
    ``negative_ack_redelivery_delay`` ("1m"), ``lease`` (CONSUMER_LEASE_SECONDS),
    ``poll_interval`` (POLL_INTERVAL_SECONDS). Shared and key_shared only:
    ``ack_timeout`` (None: off; a message not acknowledged this long after it
    was claimed is delivered again), ``negative_ack_backoff`` (a
    :class:`Backoff`; replaces the fixed nack delay), ``dead_letter_policy``
    (a :class:`DeadLetterPolicy`), ``retry_enable`` (read the retry-letter
    topic too, for ``reconsume_later``). ``durable_acks`` (False: an
    acknowledgement outside a transaction is applied when the call returns
    and durable once PostgreSQL flushes its WAL, a fraction of a second later,
    as Pulsar and Kafka persist acknowledgements lazily; True: durable when the
    call returns, at the cost of a WAL flush per call).
    """

    def __init__(
        self,
        client: ConsumerClient,
        topic: str,
        subscription: str,
        subscription_type: str = "exclusive",
        *,
        initial_position: str = "latest",
        isolation: str = "read_committed",
        consumer_name: str | None = None,
        priority: int = 0,
        receiver_queue_size: int = 1000,
        negative_ack_redelivery_delay: Duration = "1m",
        lease: Duration | None = None,
        poll_interval: Duration | None = None,
        ack_timeout: Duration | None = None,
        negative_ack_backoff: Backoff | None = None,
        dead_letter_policy: DeadLetterPolicy | None = None,
        retry_enable: bool = False,
        durable_acks: bool = False,
        _retry_parent: Consumer | None = None,
    ) -> None:
        self._client = client
        self._configure(
            client.settings,
            client.admin.get_topic(topic),
            subscription,
            subscription_type,
            initial_position=initial_position,
            isolation=isolation,
            consumer_name=consumer_name,
            priority=priority,
            receiver_queue_size=receiver_queue_size,
            negative_ack_redelivery_delay=negative_ack_redelivery_delay,
            lease=lease,
            poll_interval=poll_interval,
            ack_timeout=ack_timeout,
            negative_ack_backoff=negative_ack_backoff,
            dead_letter_policy=dead_letter_policy,
            retry_enable=retry_enable,
            durable_acks=durable_acks,
        )
        # State shared by the fetch thread and the caller is guarded by _cond.
        self._configure_retry(retry_enable, _retry_parent, threading.Condition)
        dlq = self._dead_letter_topic()
        if dlq is not None:
            self._dead_letter_topic_id = ensure_topic(client.admin, dlq)
        if self._retry_topic is not None:
            ensure_topic(client.admin, self._retry_topic)

        self._ack_lock = threading.Lock()
        self._ack_proxy: Any = client.checkout()
        # Through a cluster's proxy, the direct connections to the shards of
        # the acks and of the fetches (txnq.database.routes).
        self._ack_routes = SyncRoutes(
            self._direct_owner(client.settings), f"txnq-consumer-{self.name}"
        )
        self._fetch_routes = SyncRoutes(
            self._direct_owner(client.settings), f"txnq-consumer-{self.name}"
        )
        self._ack_io = SyncIO(
            self._ack_connection, self._ack_reconnect, routed=self._ack_routes.connection
        )
        self._fetch_conn = connect(client.dsn, application_name=f"txnq-consumer-{self.name}")
        # Through a cluster's proxy, the shards' LISTEN connections (none on one server).
        self._shard_listeners = SyncShardListeners(self._channel, self.name, self._poll_interval)
        self._fetch_io = SyncIO(
            lambda: self._fetch_conn,
            self._reopen_fetch_conn,
            self._listen,
            self._wait_room,
            self._shard_listeners.listen_on,
            routed=self._fetch_routes.connection,
        )
        try:
            with self._ack_lock:
                run(self._subscribe_plan(), self._ack_io)
                run(
                    self._locate_shards_plan(client._cluster_proxy_plan(), client.dsn),
                    self._ack_io,
                )
            self._fetch_conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))
            run(self._heartbeat_plan(), self._fetch_io)
        except BaseException:
            self._fetch_conn.close()
            self._ack_proxy.close()
            self._ack_routes.close()
            self._fetch_routes.close()
            raise
        self._thread = threading.Thread(
            target=self._fetch_thread,
            name=f"txnq-consumer-{self.name}",
            daemon=True,
        )
        self._thread.start()
        if self._retry_topic is not None:
            try:
                retry_consumer = Consumer(
                    client,
                    self._retry_topic,
                    self.subscription,
                    subscription_type,
                    **self._retry_consumer_options(),
                    _retry_parent=self,
                )
                self._set_retry_consumer(retry_consumer)
            except BaseException:
                self.close()
                raise

    # -- receiving ----------------------------------------------------------

    def receive(self, timeout: Duration | None = None) -> Message | None:
        """The next message, waiting up to ``timeout`` (forever when None); None on timeout."""
        deadline = self._receive_deadline(timeout)
        with self._cond:
            self._check_usable()
            while not self._deliverable():
                self._check_usable()
                wait = self._receive_wait(deadline)
                if wait is None:
                    return None
                self._cond.wait(wait)
            return self._hand_out()

    def batch_receive(self, max_messages: int = 100, timeout: Duration = "100ms") -> list[Message]:
        """Up to ``max_messages`` messages: waits up to ``timeout`` for the first.
        On exclusive and failover subscriptions a batch ends before a producer
        batch (one entry) that it would split, unless that entry alone holds more
        than ``max_messages``: acknowledging up to an entry's end is cheaper."""
        self._check_max_messages(max_messages)
        first = self.receive(timeout)
        if first is None:
            return []
        return self._take_messages(first, max_messages)

    def __iter__(self) -> Consumer:
        return self

    def __next__(self) -> Message:
        message = self.receive()
        assert message is not None
        return message

    # -- acknowledging ------------------------------------------------------

    def acknowledge(
        self,
        message: Message | MessageId | Iterable[Message | MessageId],
        *,
        txn: Transaction | AttachedTransaction | None = None,
    ) -> None:
        """Acknowledge messages individually; in effect when this returns,
        durable a moment later (or at once with ``durable_acks=True``;
        docs/subscriptions.md, "When an acknowledgement is durable"). A list
        spanning partitions is acknowledged atomically. With ``txn``, the acks
        are pending until the transaction commits (an abort releases them and
        the messages are delivered again); a message another open transaction
        holds raises TransactionConflictError."""
        for owner, items in self._ack_owners(self._ack_items(message)):
            if txn is None:
                owner._run_ack(owner._acknowledge_plan(items, None))
            else:
                checked_transaction(txn, self._client)._acknowledge(owner, items)

    def acknowledge_cumulative(
        self,
        message: Message | MessageId,
        *,
        txn: Transaction | AttachedTransaction | None = None,
    ) -> None:
        """Acknowledge this message and every earlier one of its partition (with
        ``txn``: when the transaction commits). Not on shared and key_shared
        subscriptions, where messages are acknowledged one by one (as Pulsar)."""
        self._check_cumulative()
        message_id, size = self._identify(message)
        if txn is None:
            self._run_ack(self._cumulative_plan(message_id, size, None))
        else:
            checked_transaction(txn, self._client)._acknowledge_cumulative(self, message_id, size)

    def negative_acknowledge(self, message: Message) -> None:
        """Have the message delivered again after ``negative_ack_redelivery_delay``
        (or the ``negative_ack_backoff`` delay for its redelivery count). On
        shared and key_shared subscriptions any consumer may get it then."""
        owner = self._nack_owner(message)
        owner._run_ack(owner._nack_plan(message))

    def reconsume_later(self, message: Message, delay: Duration) -> None:
        """Pulsar's reconsumeLater: acknowledge ``message`` and send a copy to the
        retry-letter topic, delivered to this subscription again after
        ``delay`` (properties RECONSUMETIMES, REAL_TOPIC, ORIGIN_MESSAGE_ID,
        DELAY_TIME added). Past ``max_redeliver_count`` reconsumptions the
        copy goes to the dead-letter topic instead. Both happen in one txnq
        transaction: never lost, never twice. Needs ``retry_enable=True``."""
        parent, owner, letter = self._reconsumption(message, delay)
        producer = parent._letter_producers.get(letter.topic)
        if producer is None:
            producer = self._client.producer(letter.topic)
            parent._letter_producers[letter.topic] = producer
        with self._client.new_transaction() as txn:
            producer.send(message.value, txn=txn, **letter.send_options(message))
            owner.acknowledge(message, txn=txn)

    def process(
        self, connection: object, *, batch_size: int = 100, idle_timeout: Duration | None = None
    ) -> Iterator[Message]:
        """Exactly-once processing: ``for msg in consumer.process(conn): ...``
        commits each batch's acks in one PostgreSQL transaction with what the
        loop body wrote on ``conn``; see :func:`txnq.transaction.attached_sync.process`."""
        self._check_process()
        return process(self, connection, batch_size=batch_size, idle_timeout=idle_timeout)

    # -- seeking and unsubscribing -----------------------------------------

    def seek(self, target: MessageId | int | datetime | str, partition: int | None = None) -> None:
        """Move the subscription so that the next message delivered is ``target``:
        a MessageId (its partition), an offset (on ``partition``, or on every
        partition), a publish time (datetime), or "earliest"/"latest".
        Individually acknowledged messages after the position are delivered again."""
        self._run_ack(self._seek_plan(target, partition))
        self._wake_fetcher()

    def unsubscribe(self) -> None:
        """Delete the subscription (refused while other consumers are connected), then close."""
        self._run_ack(self._unsubscribe_plan())
        self.close()

    # -- life cycle ---------------------------------------------------------

    def close(self) -> None:
        """Leave the subscription: unacknowledged messages go to the next consumer."""
        if not self._start_closing():
            return
        self._wake_fetcher()
        self._thread.join(timeout=self._poll_interval + 5)
        if self._retry_consumer is not None:
            self._retry_consumer.close()
        for producer in self._letter_producers.values():
            producer.close()
        self._run_ack(self._leave_plan())
        self._ack_proxy.close()
        self._ack_routes.close()
        self._fetch_conn.close()
        self._fetch_routes.close()
        self._shard_listeners.close()
        self._client._forget(self)

    def __enter__(self) -> Consumer:
        self._check_usable()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the sync face's I/O --------------------------------------------------

    def _fetch_thread(self) -> None:
        try:
            run(self._run_plan(), self._fetch_io)
        except BaseException as exc:  # the plan stops on its own errors: this is the rest
            self._fetch_failed(exc)

    def _run_ack(self, plan: Plan[T]) -> T:
        """Run a plan on the caller-side (ack) connection, one at a time."""
        with self._ack_lock:
            return run(plan, self._ack_io)

    def _ack_connection(self) -> Any:
        """The ack connection; checked out anew when it was invalidated (a lost
        connection) and an earlier reconnect failed, e.g. while PostgreSQL
        restarted. A server still away raises ServerUnavailableError, and the
        next call tries again: the consumer stays usable (found by the chaos
        copier, whose consumers failed with AttributeError after a restart)."""
        conn = self._ack_proxy.driver_connection
        if conn is None:
            # ServerUnavailableError ("the call changed nothing: retry it") while
            # the server is away.
            self._ack_proxy = self._client.checkout()
            conn = self._ack_proxy.driver_connection
        return conn

    def _give_back(self, refused: dict[int, tuple[list[int], list[int]]]) -> None:
        self._run_ack(self._delivery.give_back_plan(refused))

    def _ack_reconnect(self) -> None:
        self._ack_routes.reset()
        self._ack_proxy.invalidate()
        self._ack_connection()

    def _wake_fetcher(self) -> None:
        try:
            with self._ack_lock:
                self._ack_connection().execute("SELECT pg_notify(%s, '')", (self._channel,))
        except (psycopg.Error, errors.ServerUnavailableError):
            pass  # the fetch thread polls anyway

    def _reopen_fetch_conn(self) -> None:
        self._fetch_routes.reset()
        self._fetch_conn.close()
        self._fetch_conn = connect(self._client.dsn, application_name=f"txnq-consumer-{self.name}")
        self._fetch_conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self._channel)))

    def _listen(self, timeout: float) -> None:
        if self._shard_listeners.active:  # through a cluster's proxy
            self._shard_listeners.wait(self._fetch_conn, timeout)
            return
        for _ in self._fetch_conn.notifies(timeout=timeout, stop_after=1):
            pass

    def _wait_room(self, timeout: float) -> None:
        with self._cond:
            self._cond.wait(timeout)
