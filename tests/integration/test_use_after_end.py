"""Use after close, commit or abort (DESIGN, Public API): every public method
of a closed client, producer or consumer raises ClosedError, and of an ended
transaction TransactionEndedError -- in the sync and the asyncio face, and for
application transactions whose connection committed or rolled back. Each says
what to do, writes nothing, and leaves no session idle in a transaction (which
would hold a partition's head row and block every other producer of it).

Deliberate exceptions, allowed after the end: ``close()`` (idempotent),
``abort()`` of an aborted or ended transaction (a no-op or a rewind: the
cleanup in an ``except`` must not fail), ``rewind_consumers()``, properties,
reprs, and ``Transaction.checked`` (a check without I/O). Each test lists the
public methods it covers and fails when a class grows one it does not.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterator
from datetime import UTC, datetime
from typing import Any, TypeVar

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

import txnq
from tests.fuzz_support import append_within, fingerprint, idle_in_transaction
from tests.helpers import receive_messages
from txnq import MessageId, errors
from txnq.aio import Client as AsyncClient
from txnq.database.connections import sqlalchemy_url

FAST = {"poll_interval": "200ms"}
T = TypeVar("T")


def public_methods(cls: type) -> set[str]:
    """The public methods of ``cls`` (properties are not methods)."""
    return {
        name
        for name, value in inspect.getmembers(cls)
        if not name.startswith("_")
        and callable(value)
        and not isinstance(inspect.getattr_static(cls, name), property)
    }


def assert_covers(cls: type, calls: dict[str, Any], allowed: set[str]) -> None:
    missing = public_methods(cls) - set(calls) - allowed
    assert not missing, f"{cls.__qualname__} has public methods this test does not call: {missing}"


def arun(main: Callable[[], Awaitable[T]], timeout: float = 60) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(main(), timeout)

    return asyncio.run(bounded())


@pytest.fixture
def watcher(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


def refused(
    watcher: psycopg.Connection[Any],
    calls: dict[str, Callable[[], object]],
    error: type[errors.TxnqError],
    phrase: str,
    callers: tuple[Any, ...] = (),
) -> None:
    """Each call raises ``error`` with ``phrase`` in its message and writes
    nothing; no session is left idle in a transaction but ``callers``' own."""
    for name, call in calls.items():
        before = fingerprint(watcher)
        with pytest.raises(error, match=phrase) as caught:
            call()
        assert fingerprint(watcher) == before, f"{name} wrote after the end"
        assert caught.type is not None, name
    assert not_callers(idle_in_transaction(watcher), callers) == []


def not_callers(sessions: list[tuple[Any, ...]], callers: tuple[Any, ...]) -> list[Any]:
    pids = {conn.info.backend_pid for conn in callers}
    return [session for session in sessions if session[0] not in pids]


async def arefused(
    watcher: psycopg.Connection[Any],
    calls: dict[str, Callable[[], Awaitable[object]]],
    error: type[errors.TxnqError],
    phrase: str,
    callers: tuple[Any, ...] = (),
) -> None:
    for name, call in calls.items():
        before = fingerprint(watcher)
        with pytest.raises(error, match=phrase):
            await call()
        assert fingerprint(watcher) == before, f"{name} wrote after the end"
    assert not_callers(idle_in_transaction(watcher), callers) == []


@pytest.fixture
def world(dsn: str) -> Iterator[dict[str, Any]]:
    """A topic with a message in each partition, and an application table."""
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2)
        with client.producer("orders") as producer:
            for partition in (0, 1):
                producer.send(f"m{partition}", partition=partition)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE public.app_rows (id int PRIMARY KEY)")
        yield {"client": client}


# -- closed: sync -----------------------------------------------------------------


def test_a_closed_client_refuses_every_call_and_writes_nothing(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    client = txnq.Client(dsn)
    admin = client.admin
    client.close()
    client.close()  # twice is fine
    when = datetime(2024, 1, 1, tzinfo=UTC)
    with psycopg.connect(dsn) as conn:
        calls: dict[str, Callable[[], object]] = {
            "producer": lambda: client.producer("orders"),
            "subscribe": lambda: client.subscribe("orders", "billing", **FAST),
            "new_transaction": lambda: client.new_transaction(),
            "new_transaction(connection)": lambda: client.new_transaction(connection=conn),
            "connection": lambda: client.connection().__enter__(),
            "checkout": client.checkout,
            "query": lambda: client.query("list_topics", {}),
            "execute": lambda: client.execute("roll_entry_log", {"force": True}),
            "__enter__": client.__enter__,
        }
        refused(watcher, calls, errors.ClosedError, "client is closed: create a new")
    assert_covers(txnq.Client, calls, {"close"})

    admin_calls: dict[str, Callable[[], object]] = {
        "create_topic": lambda: admin.create_topic("other"),
        "get_topic": lambda: admin.get_topic("orders"),
        "list_topics": admin.list_topics,
        "describe_topic": lambda: admin.describe_topic("orders"),
        "update_topic": lambda: admin.update_topic("orders", partitions=3),
        "set_topic_policy": lambda: admin.set_topic_policy("orders", retention="1h"),
        "delete_topic": lambda: admin.delete_topic("orders", force=True),
        "list_subscriptions": lambda: admin.list_subscriptions("orders"),
        "describe_subscription": lambda: admin.describe_subscription("orders", "s"),
        "reset_subscription": lambda: admin.reset_subscription("orders", "s", when),
        "delete_subscription": lambda: admin.delete_subscription("orders", "s", force=True),
        "list_transactions": admin.list_transactions,
        "get_transaction": lambda: admin.get_transaction("0:1"),
        "describe_transaction": lambda: admin.describe_transaction("0:1"),
        "abort_transaction": lambda: admin.abort_transaction("0:1"),
        "find_hanging_transactions": admin.find_hanging_transactions,
        "grant": lambda: admin.grant("txnq_client", topic="orders", actions="produce"),
        "revoke": lambda: admin.revoke("txnq_client", topic="orders"),
        "permissions": lambda: admin.permissions(topic="orders"),
    }
    refused(watcher, admin_calls, errors.ClosedError, "client is closed")
    assert_covers(txnq.Admin, admin_calls, set())


def test_a_closed_producer_refuses_every_call_and_writes_nothing(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    client = world["client"]
    producer = client.producer("orders", name="p1")
    producer.close()
    producer.close()  # twice is fine
    txn = client.new_transaction()
    with psycopg.connect(dsn) as conn:
        attached = txnq.attach(conn)
        calls: dict[str, Callable[[], object]] = {
            "send": lambda: producer.send(b"x"),
            "send(txn)": lambda: producer.send(b"x", txn=txn),
            "send(deliver_after)": lambda: producer.send(b"x", deliver_after="1m"),
            "send_async": lambda: producer.send_async(b"x"),
            "send_async(txn)": lambda: producer.send_async(b"x", txn=txn),
            "send_async(attached)": lambda: producer.send_async(b"x", txn=attached),
            "flush": producer.flush,
            "__enter__": producer.__enter__,
        }
        refused(watcher, calls, errors.ClosedError, "producer 'p1' is closed: create a new one")
        attached.abort()
    txn.abort()
    assert_covers(txnq.Producer, calls, {"close"})
    assert (producer.name, producer.topic) == ("p1", "orders")  # properties stay readable
    assert producer.producer_id > 0


def test_a_closed_consumer_refuses_every_call_and_writes_nothing(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    client = world["client"]
    consumer = client.subscribe("orders", "billing", initial_position="earliest", **FAST)
    first, second = receive_messages(consumer, 2)
    shared = client.subscribe(
        "orders", "work", "shared", initial_position="earliest", retry_enable=True, **FAST
    )
    (claimed, _) = receive_messages(shared, 2)
    consumer.close()
    shared.close()
    consumer.close()  # twice is fine
    txn = client.new_transaction()
    with psycopg.connect(dsn) as conn:
        attached = txnq.attach(conn)
        calls: dict[str, Callable[[], object]] = {
            "receive": lambda: consumer.receive(timeout=0.1),
            "batch_receive": lambda: consumer.batch_receive(timeout=0.1),
            "__next__": lambda: next(consumer),
            "acknowledge": lambda: consumer.acknowledge(first),
            "acknowledge(list)": lambda: consumer.acknowledge([first, second]),
            "acknowledge([])": lambda: consumer.acknowledge([]),
            "acknowledge(txn)": lambda: consumer.acknowledge(first, txn=txn),
            "acknowledge(attached)": lambda: consumer.acknowledge(first, txn=attached),
            "acknowledge_cumulative": lambda: consumer.acknowledge_cumulative(second),
            "acknowledge_cumulative(txn)": lambda: consumer.acknowledge_cumulative(second, txn=txn),
            "negative_acknowledge": lambda: consumer.negative_acknowledge(first),
            "negative_acknowledge(shared)": lambda: shared.negative_acknowledge(claimed),
            "acknowledge(shared)": lambda: shared.acknowledge(claimed),
            "reconsume_later": lambda: shared.reconsume_later(claimed, "1s"),
            "process": lambda: consumer.process(conn),
            "seek": lambda: consumer.seek("earliest"),
            "seek(time)": lambda: consumer.seek(datetime(2024, 1, 1, tzinfo=UTC)),
            "seek(message id)": lambda: consumer.seek(first.message_id),
            "unsubscribe": consumer.unsubscribe,
            "__enter__": consumer.__enter__,
        }
        refused(watcher, calls, errors.ClosedError, "consumer '.*' is closed: subscribe again")
        attached.abort()
    txn.abort()
    assert_covers(txnq.Consumer, calls, {"close"})
    assert [s.name for s in client.admin.list_subscriptions("orders")] == ["billing", "work"]
    # What the closed consumers had not acknowledged goes to the next ones.
    with client.subscribe("orders", "billing", **FAST) as again:
        assert len(receive_messages(again, 2)) == 2


# -- ended: sync ------------------------------------------------------------------


@pytest.mark.parametrize("ending", ["commit", "abort", "timeout"])
def test_an_ended_transaction_refuses_every_call_and_writes_nothing(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any], ending: str
) -> None:
    client = world["client"]
    with (
        client.producer("orders") as producer,
        client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer,
    ):
        first, second = receive_messages(consumer, 2)
        txn = client.new_transaction(timeout="200ms" if ending == "timeout" else "1m")
        producer.send(b"in the transaction", txn=txn)
        if ending == "commit":
            txn.commit()
        elif ending == "abort":
            txn.abort()
        else:
            deadline = datetime.now(UTC).timestamp() + 5
            while datetime.now(UTC) <= txn.timeout_at and datetime.now(UTC).timestamp() < deadline:
                consumer.receive(timeout=0.05)  # wait past the timeout, bounded
            # What the scheduler and a coordinator worker do: abort it, finish the abort.
            assert client.query("abort_timed_out", {"max_count": 100})
            client.query("complete_txn", txn.params)
        calls: dict[str, Callable[[], object]] = {
            "send": lambda: producer.send(b"x", txn=txn),
            "send_async": lambda: producer.send_async(b"x", txn=txn).result(5),
            "send(deliver_after)": lambda: producer.send(b"x", txn=txn, deliver_after="1m"),
            "acknowledge": lambda: consumer.acknowledge(first, txn=txn),
            "acknowledge_cumulative": lambda: consumer.acknowledge_cumulative(second, txn=txn),
            "commit": txn.commit,
            "commit_async": txn.commit_async,
            "__enter__": txn.__enter__,
        }
        if ending == "commit":
            calls["abort"] = txn.abort
        phrase = "passed its timeout|has ended|was aborted|was committed"
        refused(watcher, calls, errors.TransactionEndedError, phrase)
        if ending != "commit":
            txn.abort()  # aborting an aborted transaction is a no-op
        assert_covers(txnq.Transaction, {**calls, "abort": txn.abort}, {"checked"})
    append_within(dsn, "orders", 0)


# -- application transactions: sync ---------------------------------------------


ENDINGS = ["connection commit", "connection rollback", "connection close", "txn.commit"]


@pytest.mark.parametrize("ending", ENDINGS)
def test_an_application_transaction_whose_connection_ended_refuses_every_call(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any], ending: str
) -> None:
    client = world["client"]
    with (
        client.producer("orders") as producer,
        client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer,
    ):
        first, _ = receive_messages(consumer, 2)
        conn = psycopg.connect(dsn)  # autocommit off: the application's own transactions
        txn = client.new_transaction(connection=conn)
        conn.execute("INSERT INTO app_rows VALUES (1)")
        staged = producer.send_async(b"staged", partition=0, txn=txn)
        txn.flush()
        queued = producer.send_async(b"queued", partition=1, txn=txn)  # not staged yet
        if ending == "connection commit":
            conn.commit()
        elif ending == "connection rollback":
            conn.rollback()
        elif ending == "connection close":
            conn.close()
        else:
            txn.commit()
            conn.commit()
        calls: dict[str, Callable[[], object]] = {
            "send": lambda: txn.send("orders", b"late", partition=0),
            "producer.send_async": lambda: producer.send_async(b"late", partition=0, txn=txn),
            "consumer.acknowledge": lambda: consumer.acknowledge(first, txn=txn),
            "flush": txn.flush,
            "commit": txn.commit,
            "__enter__": txn.__enter__,
        }
        refused(watcher, calls, errors.TransactionEndedError, "ended .*attach the connection again")
        if ending != "txn.commit":
            assert txn.state == "ENDED"
            # What send_async had queued was never staged; what was staged
            # went with the connection's transaction, unknown to txnq which way.
            with pytest.raises(errors.TransactionEndedError, match="was not sent"):
                queued.result(1)
            with pytest.raises(errors.TransactionEndedError, match="offset is unknown"):
                staged.result(1)
        txn.abort()  # allowed: the cleanup after a rollback (no SQL after the end)
        txn.abort()
        txn.rewind_consumers()
        assert_covers(txnq.AttachedTransaction, calls, {"abort", "rewind_consumers"})
        assert idle_in_transaction(watcher) == []
        append_within(dsn, "orders", 0)
        append_within(dsn, "orders", 1)
        conn.close()
        published = 2 if ending == "txn.commit" else int(ending == "connection commit")
        with client.subscribe("orders", "reader", initial_position="earliest", **FAST) as reader:
            values = [m.value for m in receive_messages(reader, 4 + published)]
            assert reader.receive(timeout=0.3) is None
        assert b"late" not in values


def test_a_send_after_the_callers_commit_leaves_no_session_idle_in_transaction(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    # The reported case: the caller committed, then send_async(txn=...) and
    # txn.commit() ran in a new implicit transaction that nobody committed,
    # holding the partition's head row and blocking every other producer.
    client = world["client"]
    with client.producer("orders") as producer, psycopg.connect(dsn) as conn:
        txn = client.new_transaction(connection=conn)
        conn.execute("INSERT INTO app_rows VALUES (1)")
        producer.send_async(b"in time", partition=0, txn=txn)
        txn.flush()  # staged; the connection's commit publishes it (the deferred trigger)
        conn.commit()
        with pytest.raises(errors.TransactionEndedError, match="attach the connection again"):
            producer.send_async(b"too late", partition=0, txn=txn)
        with pytest.raises(errors.TransactionEndedError):
            txn.commit()
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        assert idle_in_transaction(watcher) == []
        assert append_within(dsn, "orders", 0, seconds=2) == 2  # m0, "in time", this one


def test_abort_after_commit_is_refused_while_the_callers_transaction_is_open(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    client = world["client"]
    with (
        client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer,
        psycopg.connect(dsn) as conn,
    ):
        first, second = receive_messages(consumer, 2)
        txn = txnq.attach(conn)
        consumer.acknowledge([first, second], txn=txn)
        txn.commit()
        with pytest.raises(errors.TransactionEndedError, match="roll that back to undo it"):
            txn.abort()
        assert txn.state == "COMMITTED"
        conn.rollback()
        txn.abort()  # after the rollback: the consumer delivers the messages again
        assert {m.message_id for m in receive_messages(consumer, 2)} == {
            first.message_id,
            second.message_id,
        }
    assert idle_in_transaction(watcher) == []


def test_an_autocommit_connections_transaction_block_ends_the_application_transaction(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        with conn.transaction():
            txn = txnq.attach(conn)
            txn.send("orders", b"inside", partition=0)
        with pytest.raises(errors.TransactionEndedError, match="committed or rolled back"):
            txn.send("orders", b"outside", partition=0)
        with conn.transaction(), pytest.raises(errors.TransactionEndedError):
            txn.commit()  # not even inside the caller's next transaction block
    assert idle_in_transaction(watcher) == []
    assert append_within(dsn, "orders", 0) == 2  # m0, "inside", this one


def test_a_sqlalchemy_session_that_committed_ends_the_application_transaction(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    engine = create_engine(sqlalchemy_url(dsn))
    try:
        with Session(engine) as session:
            txn = txnq.attach(session)
            session.execute(text("INSERT INTO app_rows VALUES (1)"))
            txn.send("orders", b"with the row", partition=0)
            session.commit()
            session.execute(text("INSERT INTO app_rows VALUES (2)"))  # the session's next one
            before = fingerprint(watcher)
            with pytest.raises(errors.TransactionEndedError):
                txn.send("orders", b"stale", partition=0)
            with pytest.raises(errors.TransactionEndedError):
                txn.commit()
            session.commit()
            assert fingerprint(watcher) == before
    finally:
        engine.dispose()
    assert idle_in_transaction(watcher) == []


# -- the asyncio face ---------------------------------------------------------------


def test_closed_asyncio_objects_refuse_every_call_and_write_nothing(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    async def main() -> None:
        client = await AsyncClient.connect(dsn)
        producer = await client.producer("orders", name="p1")
        consumer = await client.subscribe("orders", "billing", initial_position="earliest", **FAST)
        first = await consumer.receive(timeout=5)
        assert first is not None
        await producer.close()
        await consumer.close()
        txn = await client.new_transaction()
        conn = await psycopg.AsyncConnection.connect(dsn)
        async with conn.transaction():
            attached = txnq.aio.attach(conn)

            async def processed() -> None:
                async for _ in consumer.process(conn):
                    pass

            producer_calls: dict[str, Callable[[], Awaitable[object]]] = {
                "send": lambda: producer.send(b"x"),
                "send(txn)": lambda: producer.send(b"x", txn=txn),
                "send_async": lambda: producer.send_async(b"x"),
                "send_async(attached)": lambda: producer.send_async(b"x", txn=attached),
                "flush": producer.flush,
                "__aenter__": producer.__aenter__,
            }
            await arefused(
                watcher, producer_calls, errors.ClosedError, "producer 'p1' is closed", (conn,)
            )
            consumer_calls: dict[str, Callable[[], Awaitable[object]]] = {
                "receive": lambda: consumer.receive(timeout=0.1),
                "batch_receive": lambda: consumer.batch_receive(timeout=0.1),
                "__anext__": consumer.__anext__,
                "acknowledge": lambda: consumer.acknowledge(first),
                "acknowledge(txn)": lambda: consumer.acknowledge(first, txn=txn),
                "acknowledge(attached)": lambda: consumer.acknowledge(first, txn=attached),
                "acknowledge_cumulative": lambda: consumer.acknowledge_cumulative(first),
                "negative_acknowledge": lambda: consumer.negative_acknowledge(first),
                "reconsume_later": lambda: consumer.reconsume_later(first, "1s"),
                "process": processed,
                "seek": lambda: consumer.seek("earliest"),
                "unsubscribe": consumer.unsubscribe,
                "__aenter__": consumer.__aenter__,
            }
            await arefused(
                watcher, consumer_calls, errors.ClosedError, "is closed: subscribe", (conn,)
            )
            await attached.abort()
        await conn.close()
        await txn.abort()
        await client.close()
        await client.close()  # twice is fine

        async def opened(opening: Awaitable[object]) -> object:
            return await opening

        client_calls: dict[str, Callable[[], Awaitable[object]]] = {
            "open": client.open,
            "producer": lambda: opened(client.producer("orders")),
            "subscribe": lambda: opened(client.subscribe("orders", "s")),
            "new_transaction": lambda: opened(client.new_transaction()),
            "admin": lambda: client.admin.list_topics(),
            "__aenter__": client.__aenter__,
        }
        await arefused(watcher, client_calls, errors.ClosedError, "client is closed")
        with pytest.raises(errors.ClosedError):
            client.new_transaction(connection=conn)
        assert_covers(txnq.aio.Producer, producer_calls, {"close"})
        assert_covers(txnq.aio.Consumer, consumer_calls, {"close"})
        assert_covers(AsyncClient, client_calls, {"close", "connect"})  # connect: a new one

    arun(main)


def test_ended_asyncio_transactions_refuse_every_call_and_leave_no_session_idle(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    async def main() -> None:
        async with AsyncClient(dsn) as client:
            producer = await client.producer("orders")
            consumer = await client.subscribe(
                "orders", "billing", initial_position="earliest", **FAST
            )
            first = await consumer.receive(timeout=5)
            assert first is not None
            txn = await client.new_transaction()
            await txn.commit()
            txn_calls: dict[str, Callable[[], Awaitable[object]]] = {
                "send": lambda: producer.send(b"x", txn=txn),
                "send_async": lambda: producer.send_async(b"x", txn=txn),
                "acknowledge": lambda: consumer.acknowledge(first, txn=txn),
                "acknowledge_cumulative": lambda: consumer.acknowledge_cumulative(first, txn=txn),
                "commit": txn.commit,
                "commit_async": txn.commit_async,
                "abort": txn.abort,
                "__aenter__": txn.__aenter__,
            }
            await arefused(watcher, txn_calls, errors.TransactionEndedError, "has ended|committed")
            assert_covers(txnq.aio.Transaction, txn_calls, {"checked"})

            conn = await psycopg.AsyncConnection.connect(dsn)
            attached = await client.new_transaction(connection=conn)
            await conn.execute("INSERT INTO app_rows VALUES (1)")
            await producer.send_async(b"in time", partition=0, txn=attached)
            await attached.flush()  # the connection's commit publishes it
            await conn.commit()
            attached_calls: dict[str, Callable[[], Awaitable[object]]] = {
                "send": lambda: attached.send("orders", b"late", partition=0),
                "producer.send_async": lambda: producer.send_async(
                    b"late", partition=0, txn=attached
                ),
                "consumer.acknowledge": lambda: consumer.acknowledge(first, txn=attached),
                "flush": attached.flush,
                "commit": attached.commit,
                "__aenter__": attached.__aenter__,
            }
            await arefused(
                watcher, attached_calls, errors.TransactionEndedError, "attach the connection"
            )
            await attached.abort()  # allowed: no SQL after the end
            assert_covers(
                txnq.aio.AttachedTransaction, attached_calls, {"abort", "rewind_consumers"}
            )
            assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
            await conn.close()
            await producer.close()
            await consumer.close()

    arun(main)
    assert idle_in_transaction(watcher) == []
    assert append_within(dsn, "orders", 0, seconds=2) == 2  # m0, "in time", this one


def test_message_ids_of_messages_sent_before_a_close_stay_readable(
    dsn: str, world: dict[str, Any]
) -> None:
    # A result is a fact, not a call on the producer: it stays available.
    producer = world["client"].producer("orders")
    pending = producer.send_async(b"x", partition=1)
    producer.close()
    assert pending.result(0) == MessageId("orders", 1, 1, 0)


def test_a_with_block_whose_connection_committed_inside_ends_without_sql(
    dsn: str, world: dict[str, Any], watcher: psycopg.Connection[Any]
) -> None:
    client = world["client"]
    with client.producer("orders") as producer, psycopg.connect(dsn) as conn:
        with txnq.attach(conn) as txn:
            txn.send("orders", b"staged", partition=0)
            conn.commit()  # publishes what was staged; the block's end has nothing left to do
        assert txn.state == "ENDED"
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        with (
            pytest.raises(errors.TransactionEndedError, match=r"1 message.*were not sent"),
            txnq.attach(conn) as txn,
        ):
            conn.execute("INSERT INTO app_rows VALUES (1)")
            producer.send_async(b"only queued", partition=0, txn=txn)
            conn.commit()  # before anything staged it: the message is lost, and said so
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert idle_in_transaction(watcher) == []
    assert append_within(dsn, "orders", 0) == 2  # m0, "staged", this one
