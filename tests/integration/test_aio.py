"""The asyncio client (txnq.aio): the same API with await, the same plans as
the sync client, and interoperation with sync clients on one database:
topics, transactions, fencing of transactional ids."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import psycopg
import pytest

import txnq
from tests.helpers import receive_messages, sql, sql_value
from txnq import errors
from txnq.aio import Client as AsyncClient

FAST = {"poll_interval": "200ms"}
T = TypeVar("T")


def arun(main: Callable[[], Awaitable[T]], timeout: float = 60) -> T:
    """Run one test's coroutine, bounded in time."""

    async def bounded() -> T:
        return await asyncio.wait_for(main(), timeout)

    return asyncio.run(bounded())


async def areceive(consumer: txnq.aio.Consumer, count: int, timeout: float = 5.0) -> list[Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    messages = []
    while len(messages) < count and loop.time() < deadline:
        message = await consumer.receive(timeout=max(0.0, deadline - loop.time()))
        if message is not None:
            messages.append(message)
    assert len(messages) == count, f"received {len(messages)} of {count} within {timeout}s"
    return messages


@pytest.fixture
def sync_client(dsn: str) -> txnq.Client:
    client = txnq.Client(dsn)
    client.admin.create_topic("in", partitions=3)
    client.admin.create_topic("out", partitions=2)
    yield client
    client.close()


def test_send_receive_ack_with_await_and_async_for(dsn: str, sync_client: txnq.Client) -> None:
    async def main() -> None:
        async with AsyncClient(dsn) as client:
            producer = await client.producer("in", name="aio-p")
            first = await producer.send(b"one", key="k1", properties={"a": "1"})
            pending = [await producer.send_async(f"m{i}", key=f"k{i}") for i in range(50)]
            await producer.flush()
            ids = [await p for p in pending]
            assert first.topic == "in" and len({i.offset for i in ids}) >= 1
            async with client.subscribe("in", "s", initial_position="earliest", **FAST) as c:
                seen = []
                async for message in c:
                    seen.append(message)
                    await c.acknowledge(message)
                    if len(seen) == 51:
                        break
                assert sorted(m.value for m in seen) == sorted(
                    [b"one", *(f"m{i}".encode() for i in range(50))]
                )
                one = next(m for m in seen if m.value == b"one")
                assert one.key == "k1" and one.properties == {"a": "1"}
                assert await c.receive(timeout=0.3) is None
            await producer.close()

    arun(main)
    # Everything was acknowledged: the cursor is at the end for a sync reader too.
    assert (
        sql_value(
            dsn,
            "SELECT backlog_messages FROM txnq.subscription_status WHERE subscription = 's'",
        )
        == 0
    )


def test_async_transaction_commit_and_abort_seen_by_a_sync_consumer(
    dsn: str, sync_client: txnq.Client
) -> None:
    reader = sync_client.subscribe("out", "reader", initial_position="earliest", **FAST)

    async def main() -> None:
        async with AsyncClient(dsn) as client:
            producer = await client.producer("out")
            async with client.new_transaction() as txn:
                await producer.send(b"committed-1", txn=txn)
                await producer.send_async(b"committed-2", txn=txn)  # flushed by commit
            assert txn.state == "COMMITTED"
            aborted = await client.new_transaction()
            await producer.send(b"aborted", txn=aborted)
            await aborted.abort()
            assert aborted.state == "ABORTED"
            with pytest.raises(errors.TransactionEndedError):
                await producer.send(b"late", txn=aborted)

    arun(main)
    values = sorted(m.value for m in receive_messages(reader, 2))
    assert values == [b"committed-1", b"committed-2"]
    assert reader.receive(timeout=0.5) is None


def test_async_plain_bytes_in_a_transaction_keep_their_partition_and_outcome(
    dsn: str, sync_client: txnq.Client
) -> None:
    """The asyncio face's hot path for a joined transaction's plain payloads:
    partitions as asked, inside the transaction, bad partitions refused."""
    reader = sync_client.subscribe("out", "reader", initial_position="earliest", **FAST)

    async def main() -> list[int]:
        async with AsyncClient(dsn) as client:
            producer = await client.producer("out", batching_max_delay="10s")
            pending = []
            for outcome in ("abort", "commit"):
                txn = await client.new_transaction()
                pending = [
                    await producer.send_async(f"{outcome}{i}".encode(), partition=i % 2, txn=txn)
                    for i in range(20)
                ]
                for bad in (2, -1, True):
                    with pytest.raises(errors.InvalidArgumentError, match="partition"):
                        await producer.send_async(b"bad", partition=bad, txn=txn)
                await (txn.abort() if outcome == "abort" else txn.commit())
            with pytest.raises(errors.TransactionEndedError):
                await producer.send_async(b"late", partition=0, txn=txn)
            return [(await p).partition for p in pending]

    assert arun(main) == [i % 2 for i in range(20)]
    got = receive_messages(reader, 20)
    assert sorted((m.partition, m.value) for m in got) == sorted(
        (i % 2, f"commit{i}".encode()) for i in range(20)
    )
    assert reader.receive(timeout=0.5) is None


def test_consume_transform_produce_exactly_once_across_faces(
    dsn: str, sync_client: txnq.Client
) -> None:
    """A sync producer feeds; an asyncio copier consumes, produces and acks in
    transactions (a third aborted); a sync reader sees every input once."""
    feeder = sync_client.producer("in")
    for i in range(60):
        feeder.send_async(f"v{i}", key=f"k{i % 7}")
    feeder.flush()

    async def main() -> None:
        async with AsyncClient(dsn) as client:
            out = await client.producer("out", transactional_id="copier-1")
            consumer = await client.subscribe("in", "copy", initial_position="earliest", **FAST)
            copied = 0
            rounds = 0
            while copied < 60 and rounds < 100:
                rounds += 1
                batch = await consumer.batch_receive(10, timeout="1s")
                if not batch:
                    continue
                txn = await client.new_transaction()
                for message in batch:
                    await out.send(message.value.upper(), key=message.key, txn=txn)
                await consumer.acknowledge(batch, txn=txn)
                if rounds % 3 == 0:
                    await txn.abort()  # redelivered: the consumer rewinds
                else:
                    await txn.commit()
                    copied += len(batch)
            assert copied == 60
            await consumer.close()

    arun(main)
    reader = sync_client.subscribe("out", "check", initial_position="earliest", **FAST)
    values = sorted(m.value for m in receive_messages(reader, 60, timeout=10))
    assert values == sorted(f"V{i}".encode() for i in range(60))
    assert reader.receive(timeout=0.5) is None


def test_async_consumer_reads_what_a_sync_transaction_committed(
    dsn: str, sync_client: txnq.Client
) -> None:
    producer = sync_client.producer("in")
    with sync_client.new_transaction() as txn:
        producer.send(b"sync-txn", txn=txn)
    open_txn = sync_client.new_transaction()
    producer.send(b"still-open", txn=open_txn)

    async def main() -> None:
        async with AsyncClient(dsn) as client:
            consumer = await client.subscribe("in", "a", initial_position="earliest", **FAST)
            (message,) = await areceive(consumer, 1)
            assert message.value == b"sync-txn"
            assert await consumer.receive(timeout=0.3) is None  # read_committed
            await consumer.acknowledge_cumulative(message)
            await consumer.close()

    arun(main)
    open_txn.abort()


def test_a_transactional_id_fences_across_faces(dsn: str, sync_client: txnq.Client) -> None:
    old = sync_client.producer("out", transactional_id="etl")
    old_txn = sync_client.new_transaction()
    old.send(b"old session", txn=old_txn)

    async def main() -> None:
        async with AsyncClient(dsn) as client:
            new = await client.producer("out", transactional_id="etl")
            assert new.transactional is not None and old.transactional is not None
            assert new.transactional[1] == old.transactional[1] + 1
            async with client.new_transaction() as txn:
                await new.send(b"new session", txn=txn)
            # and back: a new sync session fences this asyncio one
            newest = txnq.Client(dsn)
            try:
                newest.producer("out", transactional_id="etl")
                txn = await client.new_transaction()
                with pytest.raises(errors.ProducerFencedError):
                    await new.send(b"fenced", txn=txn)
            finally:
                newest.close()

    arun(main)
    with pytest.raises(errors.ProducerFencedError):
        old.send(b"late", txn=old_txn)
    assert (
        sql_value(
            dsn,
            "SELECT reason FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
            tuple(old_txn.txn_id),
        )
        == "fenced"
    )


def test_shared_subscription_of_async_and_sync_consumers_delivers_each_message_once(
    dsn: str, sync_client: txnq.Client
) -> None:
    # One message per entry: a batch goes to one consumer as a whole.
    producer = sync_client.producer("in", batching_max_messages=1)
    sync_seen: list[bytes] = []
    sync_consumer = sync_client.subscribe(
        "in", "work", "shared", initial_position="earliest", receiver_queue_size=20, **FAST
    )

    async def main() -> list[bytes]:
        async with AsyncClient(dsn) as client:
            consumers = [
                await client.subscribe(
                    "in",
                    "work",
                    "shared",
                    initial_position="earliest",
                    receiver_queue_size=20,
                    **FAST,
                )
                for _ in range(2)
            ]
            # Everybody subscribed: now the work arrives.
            for i in range(300):
                producer.send_async(f"w{i}")
            producer.flush()

            async def work(consumer: txnq.aio.Consumer) -> list[bytes]:
                got = []
                while True:
                    message = await consumer.receive(timeout=1.5)
                    if message is None:
                        return got
                    got.append(message.value)
                    await consumer.acknowledge(message)

            def drain_sync() -> None:
                while (message := sync_consumer.receive(timeout=1.5)) is not None:
                    sync_seen.append(message.value)
                    sync_consumer.acknowledge(message)

            results = await asyncio.gather(
                *(work(c) for c in consumers), asyncio.to_thread(drain_sync)
            )
            for consumer in consumers:
                await consumer.close()
            return [v for got in results[:2] for v in got]

    async_seen = arun(main)
    everything = async_seen + sync_seen
    assert len(everything) == 300 and set(everything) == {f"w{i}".encode() for i in range(300)}
    assert async_seen, "the asyncio consumers got a share"


def test_nack_seek_and_cumulative_ack(dsn: str, sync_client: txnq.Client) -> None:
    producer = sync_client.producer("out")
    for i in range(5):
        producer.send(f"n{i}", partition=0)

    async def main() -> None:
        async with AsyncClient(dsn) as client:
            consumer = await client.subscribe(
                "out",
                "n",
                initial_position="earliest",
                negative_ack_redelivery_delay="100ms",
                **FAST,
            )
            first = (await areceive(consumer, 5))[0]
            await consumer.negative_acknowledge(first)
            again = await consumer.receive(timeout=3)
            assert again is not None and again.message_id == first.message_id
            assert again.redelivery_count == 1
            await consumer.seek("earliest")
            replay = await areceive(consumer, 5)
            assert [m.value for m in replay] == [f"n{i}".encode() for i in range(5)]
            await consumer.acknowledge_cumulative(replay[-1])
            await consumer.close()
            consumer = await client.subscribe("out", "n", **FAST)
            assert await consumer.receive(timeout=0.5) is None
            await consumer.close()

    arun(main)


def test_bad_input_gets_clear_errors_and_changes_nothing(
    dsn: str, sync_client: txnq.Client
) -> None:
    sync_txn = sync_client.new_transaction()

    async def main() -> None:
        with pytest.raises(errors.InvalidArgumentError, match="dsn must be a str"):
            AsyncClient(42)  # type: ignore[arg-type]
        unopened = AsyncClient(dsn)
        with pytest.raises(errors.ClosedError, match="not open"):
            await unopened.producer("in")
        async with AsyncClient(dsn) as client:
            with pytest.raises(errors.InvalidArgumentError, match="unknown producer option"):
                await client.producer("in", batching=3)
            with pytest.raises(errors.TopicNotFoundError):
                await client.producer("missing")
            with pytest.raises(errors.InvalidArgumentError, match="retry_enable"):
                await client.subscribe("in", "s", "exclusive", retry_enable=True)
            with pytest.raises(errors.InvalidArgumentError, match="AsyncConnection"):
                await client.new_transaction(connection=object())
            with pytest.raises(errors.InvalidArgumentError, match="timeout"):
                await client.new_transaction(timeout="-1s")
            producer = await client.producer("in")
            with pytest.raises(errors.InvalidArgumentError, match="do not mix"):
                await producer.send(b"x", txn=sync_txn)  # type: ignore[arg-type]
            with pytest.raises(errors.InvalidArgumentError, match="partition"):
                await producer.send(b"x", partition=7)
            consumer = await client.subscribe("in", "s", "shared", **FAST)
            with pytest.raises(errors.InvalidArgumentError, match="cumulative"):
                await consumer.acknowledge_cumulative(txnq.MessageId("in", 0, 0))
            with pytest.raises(errors.InvalidArgumentError, match="not from topic"):
                await consumer.acknowledge(txnq.MessageId("out", 0, 0))
        with pytest.raises(errors.ClosedError):
            await client.producer("in")

    arun(main)
    sync_txn.abort()
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries") == 0


def test_a_lost_connection_is_retried_by_producer_and_consumer(
    dsn: str, sync_client: txnq.Client
) -> None:
    async def main() -> None:
        async with AsyncClient(dsn) as client:
            producer = await client.producer("in", name="survivor")
            consumer = await client.subscribe("in", "r", initial_position="earliest", **FAST)
            await producer.send(b"before", partition=0)
            (before,) = await areceive(consumer, 1)
            assert before.value == b"before"
            await consumer.acknowledge(before)
            # Kill every backend of the asyncio client (its producer, fetch and
            # ack connections): the next calls reconnect and go on. Only in
            # this test's database: the txnq sessions of every other test on
            # the server went too (a coordinator worker of another test session
            # then lost its leases while it was being stopped).
            sql(
                dsn,
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND application_name LIKE 'txnq-%%' "
                "AND pid <> pg_backend_pid()",
            )
            await producer.send(b"after", partition=0)
            (after,) = await areceive(consumer, 1, timeout=10)
            assert after.value == b"after"
            await consumer.acknowledge(after)
            await consumer.close()

    arun(main)
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries") == 2  # written once each


def test_the_asyncio_face_holds_no_sql_of_its_own() -> None:
    """One implementation, two faces: each face module of each concept (sync
    and asyncio alike) drives the plans of the shared bases and names no
    txnq query; every public coroutine has a sync twin."""
    import importlib

    import txnq.aio as aio

    faces = [
        f"txnq.{package}.{face}"
        for package in ("producer", "consumer", "transaction", "client")
        for face in ("sync", "aio")
    ] + ["txnq.transaction.attached_sync", "txnq.transaction.attached_aio", "txnq.aio"]
    for name in faces:
        source = inspect.getsource(importlib.import_module(name))
        assert "QUERIES" not in source and "SELECT txnq." not in source, (
            f"{name} names a query: put it in a plan of its concept's base"
        )
    for async_cls, sync_cls in (
        (aio.Producer, txnq.Producer),
        (aio.Consumer, txnq.Consumer),
        (aio.Transaction, txnq.Transaction),
    ):
        shared = set(async_cls.__mro__[1].__dict__)
        assert async_cls.__mro__[1] is sync_cls.__mro__[1], "same base class"
        public = {
            name
            for name, member in vars(async_cls).items()
            if not name.startswith("_") and inspect.iscoroutinefunction(member)
        }
        assert public, async_cls
        for name in public:
            assert hasattr(sync_cls, name), f"{sync_cls.__name__} has no {name}"
        assert shared


def test_psycopg_async_connections_carry_the_data_path(dsn: str, sync_client: txnq.Client) -> None:
    async def main() -> None:
        async with AsyncClient(dsn) as client:
            producer = await client.producer("in")
            consumer = await client.subscribe("in", "p", **FAST)
            assert isinstance(producer._conn, psycopg.AsyncConnection)
            assert isinstance(consumer._fetch_conn, psycopg.AsyncConnection)
            await producer.close()
            await consumer.close()

    arun(main)


# -- application transactions on an AsyncConnection -----------------------------


def test_attach_commits_with_the_callers_rows_and_a_rollback_leaves_nothing(
    dsn: str, sync_client: txnq.Client
) -> None:
    sql(dsn, "CREATE TABLE orders (id int PRIMARY KEY, body text)")
    sync_client.producer("in").send(b"order-1", partition=0)

    async def main() -> None:
        async with AsyncClient(dsn) as client:
            producer = await client.producer("out")
            consumer = await client.subscribe("in", "app", initial_position="earliest", **FAST)
            (message,) = await areceive(consumer, 1)
            conn = await psycopg.AsyncConnection.connect(dsn)
            try:
                # A rollback: the row, the staged message and the ack vanish.
                with pytest.raises(RuntimeError):
                    async with conn.transaction(), txnq.aio.attach(conn) as txn:
                        await conn.execute("INSERT INTO orders VALUES (1, 'first try')")
                        await producer.send_async(b"shipped-1", txn=txn)
                        await consumer.acknowledge(message, txn=txn)
                        raise RuntimeError("the handler failed")
                (again,) = await areceive(consumer, 1)  # delivered again
                assert again.message_id == message.message_id
                # The same work committed, through client.new_transaction(connection=).
                async with conn.transaction():
                    async with client.new_transaction(connection=conn) as txn:
                        await conn.execute("INSERT INTO orders VALUES (1, 'done')")
                        pending = await producer.send_async(b"shipped-1", txn=txn)
                        await txn.send("out", b"outbox-1", key="k")
                        await consumer.acknowledge(again, txn=txn)
                    assert txn.state == "COMMITTED"
                    assert (await pending).topic == "out"
            finally:
                await conn.close()
            await consumer.close()

    arun(main)
    assert sql(dsn, "SELECT id, body FROM orders") == [(1, "done")]
    assert sql_value(dsn, "SELECT count(*) FROM txnq.staged_sends") == 0
    assert sql_value(dsn, "SELECT count(*) FROM txnq.staged_acks") == 0
    reader = sync_client.subscribe("out", "r", initial_position="earliest", **FAST)
    assert sorted(m.value for m in receive_messages(reader, 2)) == [b"outbox-1", b"shipped-1"]
    assert reader.receive(timeout=0.3) is None
    again = sync_client.subscribe("in", "app", **FAST)
    assert again.receive(timeout=0.5) is None  # acknowledged with the row


def test_process_on_an_async_connection_is_exactly_once(dsn: str, sync_client: txnq.Client) -> None:
    sql(dsn, "CREATE TABLE seen (value text PRIMARY KEY)")
    feeder = sync_client.producer("in")
    for i in range(40):
        feeder.send_async(f"p{i}")
    feeder.flush()

    async def main() -> None:
        async with AsyncClient(dsn) as client:
            consumer = await client.subscribe("in", "proc", initial_position="earliest", **FAST)
            conn = await psycopg.AsyncConnection.connect(dsn)
            failed_once = False
            try:
                while True:
                    try:
                        async for message in consumer.process(conn, batch_size=7, idle_timeout=1):
                            if message.value == b"p13" and not failed_once:
                                failed_once = True
                                raise RuntimeError("transient")  # the batch rolls back
                            await conn.execute(
                                "INSERT INTO seen VALUES (%s)", (message.value.decode(),)
                            )
                            await txnq.aio.attach(conn).send("out", message.value)
                        break
                    except RuntimeError:
                        continue
            finally:
                await conn.close()
            await consumer.close()
            assert failed_once

    arun(main)
    assert sql_value(dsn, "SELECT count(*) FROM seen") == 40
    reader = sync_client.subscribe("out", "r", initial_position="earliest", **FAST)
    out = sorted(m.value for m in receive_messages(reader, 40, timeout=10))
    assert out == sorted(f"p{i}".encode() for i in range(40))
    assert reader.receive(timeout=0.3) is None


def test_each_face_refuses_the_other_faces_connection(dsn: str) -> None:
    with (
        psycopg.connect(dsn) as conn,
        pytest.raises(errors.InvalidArgumentError, match="AsyncConn"),
    ):
        txnq.aio.attach(conn)

    async def main() -> None:
        conn = await psycopg.AsyncConnection.connect(dsn)
        try:
            with pytest.raises(errors.InvalidArgumentError, match=r"txnq\.aio\.attach"):
                txnq.attach(conn)
            with pytest.raises(errors.InvalidArgumentError, match=r"autocommit"):
                await conn.set_autocommit(True)
                txnq.aio.attach(conn)
        finally:
            await conn.close()

    arun(main)


def test_the_asyncio_page_runs_as_written(
    dsn: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import re
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "asyncio.md"
    (block,) = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)
    monkeypatch.setenv("TXNQ_DSN", dsn)
    monkeypatch.setenv("TXNQ_POLL_INTERVAL_SECONDS", "0.2")
    exec(compile(block, "docs/asyncio.md python block", "exec"), {"__name__": "docs"})
    assert "invoices written: 10" in capsys.readouterr().out
    rows = sql(dsn, "SELECT body FROM invoice_rows ORDER BY body")
    assert sorted(r[0] for r in rows) == sorted(f"invoice {n}" for n in range(1, 11))
    assert sql_value(dsn, "SELECT count(*) FROM txnq.messages WHERE topic = 'invoices'") == 10
