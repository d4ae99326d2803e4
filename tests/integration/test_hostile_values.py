"""Hostile values in every argument of the public API, sync and asyncio: only
TxnqError subclasses escape (never OverflowError, TypeError, ValueError or a
psycopg error), a refused call changes nothing in the database (nor fails the
caller's transaction of an application transaction), and no background
thread or task of a producer or consumer dies of what was accepted.

Values: integers far out of every column's range, negatives, NaN and
infinities, wrong types, unknown keyword options, datetimes at the edges of
Python's range with odd UTC offsets, properties that are no dict[str, str].
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import psycopg
import pytest

import txnq
from tests.fuzz_support import fingerprint, idle_in_transaction
from tests.helpers import receive_messages
from txnq import Message, MessageId, TxnId, errors
from txnq.aio import Client as AsyncClient
from txnq.durations import parse_duration
from txnq.options import CONSUMER_OPTIONS, PRODUCER_OPTIONS

FAST = {"poll_interval": "200ms"}


def _tz(hours: int, minutes: int = 0) -> timezone:
    return timezone(timedelta(hours=hours, minutes=minutes))


EDGE_TIMES = [
    datetime.max.replace(tzinfo=_tz(-23, -59)),  # after year 9999 in UTC
    datetime.max.replace(tzinfo=_tz(23, 59)),  # just inside
    datetime.min.replace(tzinfo=_tz(23, 59)),  # before year 1 in UTC
    datetime.min.replace(tzinfo=_tz(-23, -59)),  # just inside
    datetime(9999, 12, 31, 23, tzinfo=_tz(-5)),  # year 10000 in UTC
    datetime(1, 1, 1, 1, tzinfo=_tz(5)),  # year 0 in UTC
    datetime.max.replace(tzinfo=UTC),
    datetime.min.replace(tzinfo=UTC),
    datetime(2024, 1, 1, tzinfo=timezone(timedelta(seconds=1))),  # an offset of one second
    datetime(2024, 1, 1),  # naive
]
HOSTILE: list[Any] = [
    2**70,
    -(2**70),
    2**63,
    2**31,
    -1,
    float("nan"),
    float("inf"),
    float("-inf"),
    1e300,
    True,
    "x",
    "\x00",
    "\ud800",
    b"x",
    [1],
    {"a": 1},
    object(),
    timedelta(days=-1),
    timedelta.max,
    *EDGE_TIMES,
]


def _is_duration(value: Any) -> bool:
    try:
        parse_duration(value)
    except errors.TxnqError:
        return False
    return True


#: The hostile values that are no duration: a valid one (2**31 seconds is 68
#: years) would rightly make receive() wait that long.
NO_DURATIONS = [v for v in HOSTILE if not _is_duration(v)]
#: Calls that wait as long as their value says.
WAITING = ("receive(timeout)", "batch_receive(timeout)", "reconsume_later(delay)")
PROPERTIES: list[Any] = [
    {"a": 1},
    {1: "a"},
    {"a": None},
    {"a": b"x"},
    {"a": "\x00"},
    {"\x00": "a"},
    {"a": "\ud800"},
    {"\udc00": "a"},
    ["a", "b"],
    "a=b",
]


#: Tables the shared consumer writes in the background (its redeliveries).
BACKGROUND_TABLES = {"claims"}
#: Attempts of a refused call whose window saw only such writes.
BACKGROUND_RETRIES = 4


class Walk:
    """Calls each entry with each value, and checks what escapes and what changed."""

    def __init__(self, watcher: psycopg.Connection[Any]) -> None:
        self.watcher = watcher
        self.leaks: list[str] = []
        self.writes: list[str] = []
        self.accepted = 0

    def call(
        self,
        label: str,
        call: Callable[[], object],
        caller: Any = None,
        cleanup: Callable[[], object] | None = None,
    ) -> None:
        for attempt in range(1, BACKGROUND_RETRIES + 1):
            before = fingerprint(self.watcher)
            try:
                call()
            except errors.TxnqError:
                after = fingerprint(self.watcher)
                changed = [b[0] for b, a in zip(before[1:], after[1:], strict=False) if a != b]
                if (
                    after != before
                    and set(changed) <= BACKGROUND_TABLES
                    and attempt < BACKGROUND_RETRIES
                ):
                    # Maybe the shared consumer's redelivery of a message an
                    # earlier accepted nack or reconsume_later put back (due
                    # after its backoff; on a slow machine inside this
                    # window): a refused call can run again, and one that
                    # writes writes every time.
                    continue
                if after != before:
                    self.writes.append(
                        f"{label} (changed: {', '.join(changed) or 'the table list'})"
                    )
                if caller is not None and caller.info.transaction_status != (
                    psycopg.pq.TransactionStatus.INTRANS
                ):
                    self.writes.append(f"{label}: the caller's transaction failed")
                return
            except Exception as exc:  # the point of this test: nothing else escapes
                self.leaks.append(
                    f"{label}: {type(exc).__module__}.{type(exc).__name__}: {exc}"[:300]
                )
                return
            finally:
                if cleanup is not None:
                    cleanup()
            self.accepted += 1
            return

    def check(self) -> None:
        assert not self.leaks, "raw errors escaped:\n" + "\n".join(self.leaks)
        assert not self.writes, "refused calls changed the database:\n" + "\n".join(self.writes)
        assert idle_in_transaction(self.watcher) == []


@pytest.fixture
def thread_errors() -> Iterator[list[str]]:
    """Exceptions that killed a thread (a producer's flusher, a consumer's fetch thread)."""
    found: list[str] = []
    previous = threading.excepthook

    def hook(args: threading.ExceptHookArgs) -> None:
        found.append(f"{args.thread.name if args.thread else '?'}: {args.exc_value!r}")

    threading.excepthook = hook
    try:
        yield found
    finally:
        threading.excepthook = previous


@pytest.fixture
def world(dsn: str) -> Iterator[dict[str, Any]]:
    with txnq.Client(dsn) as client, psycopg.connect(dsn, autocommit=True) as watcher:
        client.admin.create_topic("t", partitions=2)
        client.admin.create_topic("x")  # "x" is among the values: a topic name that exists
        # The shared consumer reads a topic of its own: one on "t" would claim
        # what the walk's accepted sends write, in the background, while the
        # next (refused) call is being checked for writes.
        client.admin.create_topic("w", partitions=2)
        for topic in ("t", "w"):
            with client.producer(topic, name=f"seed-{topic}") as seed:
                for partition in (0, 1):
                    seed.send(f"m{partition}", partition=partition)
        yield {"client": client, "watcher": watcher, "dsn": dsn}


def sync_entries(
    client: txnq.Client,
    producer: txnq.Producer,
    consumer: txnq.Consumer,
    shared: txnq.Consumer,
    message: Message,
    claimed: Message,
    attached: txnq.AttachedTransaction,
    conn: psycopg.Connection[Any],
) -> dict[str, Callable[[Any], object]]:
    """One call per argument of each public method, the value in that argument."""
    admin = client.admin
    done = producer.send_async(b"done", partition=0)
    done.result(10)

    entries: dict[str, Callable[[Any], object]] = {
        "Client(dsn)": lambda v: txnq.Client(v).close(),
        "Client(settings)": lambda v: txnq.Client(client.dsn, settings=v).close(),
        "Client(setting)": lambda v: txnq.Client(client.dsn, tc_count=v).close(),
        "Client(unknown setting)": lambda v: txnq.Client(client.dsn, bogus=v).close(),
        "producer(topic)": lambda v: client.producer(v).close(),
        "producer(name)": lambda v: client.producer("t", v).close(),
        "producer(unknown option)": lambda v: client.producer("t", nope=v).close(),
        "subscribe(topic)": lambda v: client.subscribe(v, "other", **FAST).close(),
        "subscribe(subscription)": lambda v: client.subscribe("t", v, **FAST).close(),
        "subscribe(type)": lambda v: client.subscribe("t", "other", v, **FAST).close(),
        "subscribe(unknown option)": lambda v: client.subscribe("t", "other", bogus=v).close(),
        "new_transaction(timeout)": lambda v: client.new_transaction(v).abort(),
        "new_transaction(connection)": lambda v: client.new_transaction(connection=v),
        "query(name)": lambda v: client.query(v, {}),
        "attach": lambda v: txnq.attach(v),
        "TxnId.parse": TxnId.parse,
        "send(value)": lambda v: producer.send(v),
        "send(key)": lambda v: producer.send(b"x", key=v),
        "send(properties)": lambda v: producer.send(b"x", properties=v),
        "send(property value)": lambda v: producer.send(b"x", properties={"a": v}),
        "send(event_time)": lambda v: producer.send(b"x", event_time=v),
        "send(partition)": lambda v: producer.send(b"x", partition=v),
        "send(txn)": lambda v: producer.send(b"x", txn=v),
        "send(deliver_after)": lambda v: producer.send(b"x", deliver_after=v),
        "send(deliver_at)": lambda v: producer.send(b"x", deliver_at=v),
        "send_async(value)": lambda v: producer.send_async(v).result(10),
        "send_async(properties)": lambda v: producer.send_async(b"x", properties=v).result(10),
        "send_async(event_time)": lambda v: producer.send_async(b"x", event_time=v).result(10),
        "send_async(partition)": lambda v: producer.send_async(b"x", partition=v).result(10),
        "send_async(callback)": lambda v: producer.send_async(b"x", callback=v).result(10),
        "send_async(txn)": lambda v: producer.send_async(b"x", txn=v).result(10),
        "PendingSend.result(timeout)": lambda v: done.result(v),
        "PendingSend.exception(timeout)": lambda v: done.exception(v),
        "receive(timeout)": lambda v: consumer.receive(timeout=v),
        "batch_receive(max_messages)": lambda v: consumer.batch_receive(v, timeout=0),
        "batch_receive(timeout)": lambda v: consumer.batch_receive(1, timeout=v),
        "acknowledge(message)": lambda v: consumer.acknowledge(v),
        "acknowledge(txn)": lambda v: consumer.acknowledge(message, txn=v),
        "acknowledge(id.topic)": lambda v: consumer.acknowledge(MessageId(v, 0, 0)),
        "acknowledge(id.partition)": lambda v: consumer.acknowledge(MessageId("t", v, 0)),
        "acknowledge(id.offset)": lambda v: consumer.acknowledge(MessageId("t", 0, v)),
        "acknowledge(id.batch_index)": lambda v: consumer.acknowledge(MessageId("t", 0, 0, v)),
        "acknowledge(Message.batch_size)": lambda v: consumer.acknowledge(
            Message(b"", None, {}, MessageId("t", 0, 0), message.publish_time, batch_size=v)
        ),
        "acknowledge_cumulative(id.offset)": lambda v: consumer.acknowledge_cumulative(
            MessageId("t", 0, v)
        ),
        "acknowledge_cumulative(id.batch_index)": lambda v: consumer.acknowledge_cumulative(
            MessageId("t", 0, 0, v)
        ),
        "acknowledge_cumulative(txn)": lambda v: consumer.acknowledge_cumulative(message, txn=v),
        "negative_acknowledge(message)": lambda v: consumer.negative_acknowledge(v),
        "negative_acknowledge(shared, redelivery_count)": lambda v: shared.negative_acknowledge(
            Message(b"", None, {}, claimed.message_id, claimed.publish_time, redelivery_count=v)
        ),
        "reconsume_later(delay)": lambda v: shared.reconsume_later(claimed, v),
        "seek(target)": lambda v: consumer.seek(v),
        "seek(id.offset)": lambda v: consumer.seek(MessageId("t", 0, v)),
        "seek(partition)": lambda v: consumer.seek(0, v),
        "process(connection)": lambda v: consumer.process(v),
        "process(batch_size)": lambda v: consumer.process(conn, batch_size=v),
        "process(idle_timeout)": lambda v: consumer.process(conn, idle_timeout=v),
        "attached.send(topic)": lambda v: attached.send(v, b"x"),
        "attached.send(value)": lambda v: attached.send("t", v),
        "attached.send(key)": lambda v: attached.send("t", b"x", key=v),
        "attached.send(properties)": lambda v: attached.send("t", b"x", properties=v),
        "attached.send(partition)": lambda v: attached.send("t", b"x", partition=v),
        "attached.send(encoding)": lambda v: attached.send("t", "x", encoding=v),
        "send_async(attached, event_time)": lambda v: producer.send_async(
            b"x", txn=attached, event_time=v
        ),
        "send_async(attached, partition)": lambda v: producer.send_async(
            b"x", txn=attached, partition=v
        ),
        "acknowledge(attached, id.batch_index)": lambda v: consumer.acknowledge(
            MessageId("t", 0, 0, v), txn=attached
        ),
        "Backoff(min_delay)": lambda v: txnq.Backoff(min_delay=v),
        "Backoff(max_delay)": lambda v: txnq.Backoff(max_delay=v),
        "Backoff(multiplier)": lambda v: txnq.Backoff(multiplier=v).delay(64),
        "Backoff.delay": lambda v: txnq.Backoff().delay(v),
        "DeadLetterPolicy(max_redeliver_count)": lambda v: txnq.DeadLetterPolicy(v),
        "DeadLetterPolicy(dead_letter_topic)": lambda v: txnq.DeadLetterPolicy(1, v),
        "admin.create_topic(name)": lambda v: admin.create_topic(v),
        "admin.create_topic(partitions)": lambda v: admin.create_topic("new", partitions=v),
        "admin.create_topic(retention)": lambda v: admin.create_topic("new", retention=v),
        "admin.create_topic(retention_size)": lambda v: admin.create_topic("new", retention_size=v),
        "admin.create_topic(ttl)": lambda v: admin.create_topic("new", ttl=v),
        "admin.create_topic(max_message_bytes)": lambda v: admin.create_topic(
            "new", max_message_bytes=v
        ),
        "admin.create_topic(backlog_quota_size)": lambda v: admin.create_topic(
            "new", backlog_quota_size=v
        ),
        "admin.create_topic(backlog_quota_age)": lambda v: admin.create_topic(
            "new", backlog_quota_age=v
        ),
        "admin.create_topic(backlog_quota_policy)": lambda v: admin.create_topic(
            "new", backlog_quota_policy=v
        ),
        "admin.get_topic": lambda v: admin.get_topic(v),
        "admin.describe_topic": lambda v: admin.describe_topic(v),
        "admin.update_topic(partitions)": lambda v: admin.update_topic("t", partitions=v),
        "admin.set_topic_policy(retention)": lambda v: admin.set_topic_policy("t", retention=v),
        "admin.set_topic_policy(retention_size)": lambda v: admin.set_topic_policy(
            "t", retention_size=v
        ),
        "admin.set_topic_policy(ttl)": lambda v: admin.set_topic_policy("t", ttl=v),
        "admin.set_topic_policy(backlog_quota_size)": lambda v: admin.set_topic_policy(
            "t", backlog_quota_size=v
        ),
        "admin.set_topic_policy(backlog_quota_age)": lambda v: admin.set_topic_policy(
            "t", backlog_quota_age=v
        ),
        "admin.delete_topic(name)": lambda v: admin.delete_topic(v),
        "admin.delete_topic(force)": lambda v: admin.delete_topic("absent", force=v),
        "admin.list_subscriptions": lambda v: admin.list_subscriptions(v),
        "admin.describe_subscription": lambda v: admin.describe_subscription("t", v),
        "admin.reset_subscription(to)": lambda v: admin.reset_subscription("t", "s", v),
        "admin.delete_subscription(force)": lambda v: admin.delete_subscription(
            "t", "absent", force=v
        ),
        "admin.list_transactions(state)": lambda v: admin.list_transactions(state=v),
        "admin.list_transactions(older_than)": lambda v: admin.list_transactions(older_than=v),
        "admin.list_transactions(limit)": lambda v: admin.list_transactions(limit=v),
        "admin.get_transaction": lambda v: admin.get_transaction(v),
        "admin.get_transaction(TxnId)": lambda v: admin.get_transaction(TxnId(v, v)),
        "admin.describe_transaction": lambda v: admin.describe_transaction(v),
        "admin.abort_transaction": lambda v: admin.abort_transaction(v),
        "admin.find_hanging_transactions(grace)": lambda v: admin.find_hanging_transactions(
            grace=v
        ),
    }
    for option in PRODUCER_OPTIONS:
        entries[f"producer({option})"] = lambda v, o=option: client.producer("t", **{o: v}).close()
    for option in CONSUMER_OPTIONS:
        if option in ("retry_enable", "dead_letter_policy", "negative_ack_backoff", "ack_timeout"):
            kind = "shared"
        else:
            kind = "exclusive"
        entries[f"subscribe({option})"] = lambda v, o=option, k=kind: client.subscribe(
            "t", "other", k, **{o: v, **({} if o == "poll_interval" else FAST)}
        ).close()
    return entries


def test_hostile_values_in_the_sync_api_raise_only_txnq_errors_and_change_nothing(
    world: dict[str, Any], thread_errors: list[str]
) -> None:
    client, watcher, dsn = world["client"], world["watcher"], world["dsn"]
    walk = Walk(watcher)
    with (
        client.producer("t", name="p") as producer,
        client.subscribe("t", "s", initial_position="earliest", **FAST) as consumer,
        client.subscribe(
            "w",
            "work",
            "shared",
            initial_position="earliest",
            retry_enable=True,
            negative_ack_backoff=txnq.Backoff(),
            **FAST,
        ) as shared,
        psycopg.connect(dsn) as conn,
    ):
        (message, _) = receive_messages(consumer, 2)
        (claimed, _) = receive_messages(shared, 2)
        with psycopg.connect(dsn) as app_conn:
            app_conn.execute("SELECT 1")  # the application's transaction is open
            attached = txnq.attach(app_conn)
            entries = sync_entries(
                client, producer, consumer, shared, message, claimed, attached, conn
            )
            for label, call in entries.items():
                caller = app_conn if "attached" in label else None
                values = NO_DURATIONS if label.startswith(WAITING) else [*HOSTILE, *PROPERTIES]
                for value in values:
                    walk.call(f"{label} <- {value!r}"[:200], lambda c=call, v=value: c(v), caller)
            for value in [*HOSTILE, *PROPERTIES]:  # each on a transaction opened beforehand
                txn = client.new_transaction()
                walk.call(
                    f"Transaction.commit(wait) <- {value!r}"[:200],
                    lambda t=txn, v=value: t.commit(wait=v),
                    cleanup=lambda t=txn: t.abort() if t.state == "OPEN" else None,
                )
            attached.abort()
        walk.check()
        assert walk.accepted > 0  # the edges inside the range are taken
        # The producer, the consumers and their threads live on.
        producer.send(b"still alive", partition=1)
        assert receive_until(consumer, b"still alive")
    assert not thread_errors, f"background threads died: {thread_errors}"


def receive_until(consumer: txnq.Consumer, value: bytes) -> bool:
    """Whether ``value`` arrives (after what seeks sent back again), bounded in time and count."""
    for _ in range(10_000):
        message = consumer.receive(timeout=10)
        if message is None:
            return False
        if message.value == value:
            return True
    return False


def test_hostile_values_in_the_asyncio_api_raise_only_txnq_errors_and_change_nothing(
    world: dict[str, Any], thread_errors: list[str]
) -> None:
    watcher, dsn = world["watcher"], world["dsn"]
    walk = Walk(watcher)

    async def main() -> None:
        loop = asyncio.get_running_loop()
        task_errors: list[str] = []
        loop.set_exception_handler(lambda _, context: task_errors.append(str(context)))
        async with AsyncClient(dsn) as client:
            producer = await client.producer("t", name="ap")
            consumer = await client.subscribe("t", "as", initial_position="earliest", **FAST)
            message = await consumer.receive(timeout=10)
            assert message is not None
            app_conn = await psycopg.AsyncConnection.connect(dsn)
            await app_conn.execute("SELECT 1")
            attached = txnq.aio.attach(app_conn)
            done = await producer.send_async(b"done", partition=0)
            await done

            async def opened(opening: Any) -> None:
                await (await opening).close()

            entries: dict[str, Callable[[Any], Any]] = {
                "Client(dsn)": lambda v: AsyncClient(v),
                "Client(settings)": lambda v: AsyncClient(dsn, settings=v),
                "Client.connect(setting)": lambda v: opened(AsyncClient.connect(dsn, tc_count=v)),
                "producer(topic)": lambda v: opened(client.producer(v)),
                "producer(unknown option)": lambda v: opened(client.producer("t", nope=v)),
                "subscribe(subscription)": lambda v: opened(client.subscribe("t", v)),
                "subscribe(unknown option)": lambda v: opened(client.subscribe("t", "o", bad=v)),
                "new_transaction(timeout)": lambda v: commit_timeout(client, v),
                "new_transaction(connection)": lambda v: client.new_transaction(connection=v),
                "attach": lambda v: txnq.aio.attach(v),
                "send(value)": lambda v: producer.send(v),
                "send(key)": lambda v: producer.send(b"x", key=v),
                "send(properties)": lambda v: producer.send(b"x", properties=v),
                "send(property value)": lambda v: producer.send(b"x", properties={"a": v}),
                "send(event_time)": lambda v: producer.send(b"x", event_time=v),
                "send(partition)": lambda v: producer.send(b"x", partition=v),
                "send(txn)": lambda v: producer.send(b"x", txn=v),
                "send(deliver_after)": lambda v: producer.send(b"x", deliver_after=v),
                "send(deliver_at)": lambda v: producer.send(b"x", deliver_at=v),
                "send_async(event_time)": lambda v: awaited(
                    producer.send_async(b"x", event_time=v)
                ),
                "send_async(partition)": lambda v: awaited(producer.send_async(b"x", partition=v)),
                "send_async(callback)": lambda v: awaited(producer.send_async(b"x", callback=v)),
                "send_async(attached, event_time)": lambda v: producer.send_async(
                    b"x", txn=attached, event_time=v
                ),
                "PendingSend.result(timeout)": lambda v: asyncio.to_thread(done.result, v),
                "receive(timeout)": lambda v: consumer.receive(timeout=v),
                "batch_receive(max_messages)": lambda v: consumer.batch_receive(v, timeout=0),
                "acknowledge(message)": lambda v: consumer.acknowledge(v),
                "acknowledge(id.offset)": lambda v: consumer.acknowledge(MessageId("t", 0, v)),
                "acknowledge(id.batch_index)": lambda v: consumer.acknowledge(
                    MessageId("t", 0, 0, v)
                ),
                "acknowledge(attached, id.batch_index)": lambda v: consumer.acknowledge(
                    MessageId("t", 0, 0, v), txn=attached
                ),
                "acknowledge_cumulative(id.offset)": lambda v: consumer.acknowledge_cumulative(
                    MessageId("t", 0, v)
                ),
                "negative_acknowledge": lambda v: consumer.negative_acknowledge(v),
                "seek(target)": lambda v: consumer.seek(v),
                "seek(partition)": lambda v: consumer.seek(0, v),
                "process(batch_size)": lambda v: consumer.process(app_conn, batch_size=v),
                "attached.send(topic)": lambda v: attached.send(v, b"x"),
                "attached.send(value)": lambda v: attached.send("t", v),
                "attached.send(properties)": lambda v: attached.send("t", b"x", properties=v),
                "attached.send(partition)": lambda v: attached.send("t", b"x", partition=v),
                "attached.send(encoding)": lambda v: attached.send("t", "x", encoding=v),
                "admin.create_topic(retention_size)": lambda v: client.admin.create_topic(
                    "new", retention_size=v
                ),
                "admin.reset_subscription(to)": lambda v: client.admin.reset_subscription(
                    "t", "as", v
                ),
            }
            for label, call in entries.items():
                caller = app_conn if "attached" in label else None
                values = NO_DURATIONS if label.startswith(WAITING) else [*HOSTILE, *PROPERTIES]
                for value in values:
                    await acall(walk, f"{label} <- {value!r}"[:200], call, value, caller)
            for value in [*HOSTILE, *PROPERTIES]:  # each on a transaction opened beforehand
                txn = await client.new_transaction()
                label = f"Transaction.commit(wait) <- {value!r}"[:200]
                await acall(walk, label, lambda v, t=txn: t.commit(wait=v), value, None)
                if txn.state == "OPEN":
                    await txn.abort()
            await attached.abort()
            await app_conn.close()
            await producer.send(b"still alive", partition=1)
            found = False
            for _ in range(10_000):
                received = await consumer.receive(timeout=10)
                if received is None or received.value == b"still alive":
                    found = received is not None
                    break
            assert found
            await producer.close()
            await consumer.close()
        assert not task_errors, f"background tasks died: {task_errors}"

    asyncio.run(asyncio.wait_for(main(), 600))
    walk.check()
    assert not thread_errors, f"background threads died: {thread_errors}"


async def awaited(pending: Any) -> Any:
    """The message id of an asyncio send_async (``pending`` is its coroutine)."""
    return await (await pending)


async def commit_timeout(client: AsyncClient, timeout: Any) -> None:
    txn = await client.new_transaction(timeout)
    await txn.abort()


async def acall(
    walk: Walk, label: str, call: Callable[[Any], Any], value: Any, caller: Any
) -> None:
    """Walk.call for a call that may return an awaitable."""
    before = fingerprint(walk.watcher)
    try:
        result = call(value)
        if inspect.isawaitable(result):
            await result
    except errors.TxnqError:
        if fingerprint(walk.watcher) != before:
            walk.writes.append(label)
        if caller is not None and caller.info.transaction_status != (
            psycopg.pq.TransactionStatus.INTRANS
        ):
            walk.writes.append(f"{label}: the caller's transaction failed")
        return
    except Exception as exc:
        walk.leaks.append(f"{label}: {type(exc).__module__}.{type(exc).__name__}: {exc}"[:300])
        return
    walk.accepted += 1


def test_the_option_tables_match_the_sync_signatures() -> None:
    # One table per kind of option serves both faces: it must say what the
    # sync constructors take, with the same defaults.
    for cls, table in ((txnq.Producer, PRODUCER_OPTIONS), (txnq.Consumer, CONSUMER_OPTIONS)):
        parameters = inspect.signature(cls.__init__).parameters.values()
        keywords = {
            p.name: p.default
            for p in parameters
            if p.kind == p.KEYWORD_ONLY and not p.name.startswith("_")
        }
        assert keywords == table


def test_an_unknown_option_is_a_type_error_and_a_txnq_error(world: dict[str, Any]) -> None:
    client = world["client"]
    before = fingerprint(world["watcher"])
    with pytest.raises(errors.UnknownOptionError, match=r"unknown producer option.*nope"):
        client.producer("t", nope=2)
    with pytest.raises(TypeError, match=r"unknown subscribe option.*bogus"):
        client.subscribe("t", "s", bogus=1)
    with pytest.raises(errors.InvalidArgumentError, match="_retry_parent"):
        client.subscribe("t", "s", _retry_parent=None)
    assert fingerprint(world["watcher"]) == before


@pytest.mark.parametrize(
    ("event_time", "stored"),
    [
        pytest.param(
            datetime.max.replace(tzinfo=_tz(23, 59)),
            datetime(9999, 12, 31, 0, 0, 59, 999999, tzinfo=UTC),
            id="max-east",
        ),
        pytest.param(
            datetime.min.replace(tzinfo=_tz(-23, -59)),
            datetime(1, 1, 1, 23, 59, tzinfo=UTC),
            id="min-west",
        ),
        pytest.param(-62135596800, datetime(1, 1, 1, tzinfo=UTC), id="seconds-year-1"),
    ],
)
def test_event_times_at_the_edges_of_the_range_are_delivered_intact(
    world: dict[str, Any], event_time: Any, stored: datetime
) -> None:
    client = world["client"]
    with (
        client.producer("t") as producer,
        client.subscribe("t", "edges", initial_position="latest", **FAST) as consumer,
    ):
        producer.send(b"edge", partition=0, event_time=event_time)
        (received,) = receive_messages(consumer, 1)
        assert received.event_time == stored


@pytest.mark.parametrize(
    "event_time",
    [
        pytest.param(datetime.max.replace(tzinfo=_tz(-23, -59)), id="after-9999-in-UTC"),
        pytest.param(datetime(1, 1, 1, 1, tzinfo=_tz(5)), id="before-year-1-in-UTC"),
        pytest.param(253402300800, id="seconds-year-10000"),
        pytest.param(float("nan"), id="nan"),
    ],
)
def test_an_event_time_outside_year_1_to_9999_utc_is_refused_before_anything_is_written(
    world: dict[str, Any], event_time: Any
) -> None:
    client = world["client"]
    with client.producer("t") as producer, psycopg.connect(world["dsn"]) as conn:
        before = fingerprint(world["watcher"])
        with pytest.raises(errors.InvalidArgumentError, match="year 1 to 9999 in UTC"):
            producer.send(b"x", event_time=event_time)
        with pytest.raises(errors.InvalidArgumentError, match="year 1 to 9999 in UTC"):
            producer.send_async(b"x", event_time=event_time)
        txn = txnq.attach(conn)
        with pytest.raises(errors.InvalidArgumentError, match="year 1 to 9999 in UTC"):
            producer.send_async(b"x", event_time=event_time, txn=txn)
        txn.commit()
        conn.commit()
        assert fingerprint(world["watcher"]) == before


def test_a_reconsume_count_that_is_no_number_counts_as_none(world: dict[str, Any]) -> None:
    # Any producer may set RECONSUMETIMES; reconsume_later must not fail on it.
    client = world["client"]
    with (
        client.producer("t") as producer,
        client.subscribe(
            "t", "retry", "shared", initial_position="latest", retry_enable=True, **FAST
        ) as consumer,
    ):
        producer.send(b"odd", partition=0, properties={"RECONSUMETIMES": "many"})
        (message,) = receive_messages(consumer, 1)
        consumer.reconsume_later(message, 0)
        (again,) = receive_messages(consumer, 1)
        assert (again.value, again.properties["RECONSUMETIMES"]) == (b"odd", "1")
