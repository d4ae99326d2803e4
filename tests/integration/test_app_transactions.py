"""Application transactions (docs/exactly-once.md): txnq's sends and acks run
on the application's own connection and commit or roll back with its rows;
nothing holds a head row or the max read offset while the application's
transaction is open."""

from __future__ import annotations

import threading
import zlib
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql, sql_value
from txnq import errors
from txnq.database.connections import sqlalchemy_url

FAST = {"poll_interval": "200ms"}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=2)
        client.admin.create_topic("invoices", partitions=1)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("CREATE TABLE public.app_orders (id int PRIMARY KEY, note text)")
        yield client


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn) as conn:  # autocommit off: the application's own transactions
        yield conn


def txnq_state(dsn: str) -> tuple[Any, ...]:
    """Everything an application transaction could leave behind."""
    return sql(
        dsn,
        "SELECT (SELECT count(*) FROM txnq.entries),"
        " (SELECT sum(next_offset) FROM txnq.partitions),"
        " (SELECT sum(max_read_offset) FROM txnq.partitions),"
        " (SELECT count(*) FROM txnq.staged_sends), (SELECT count(*) FROM txnq.staged_acks),"
        " (SELECT count(*) FROM txnq.transactions), (SELECT count(*) FROM txnq.pending_acks),"
        " (SELECT coalesce(sum(mark_delete_offset), 0) FROM txnq.cursors),"
        " (SELECT count(*) FROM txnq.individual_acks)",
    )[0]


def test_outbox_messages_commit_with_the_callers_rows(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    with (
        client.producer("orders") as producer,
        client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer,
    ):
        with conn.transaction(), txnq.attach(conn) as txn:
            conn.execute("INSERT INTO app_orders VALUES (1, 'created')")
            pending = producer.send_async(b"order 1", key="customer-7", txn=txn)
            txn.send("orders", b"order 1 audit", key="customer-7", properties={"kind": "audit"})
            assert sql_value(dsn, "SELECT count(*) FROM app_orders") == 0
            assert sql_value(dsn, "SELECT count(*) FROM txnq.entries") == 0

        partition = zlib.crc32(b"customer-7") % 2
        assert txn.state == "COMMITTED"
        assert pending.result(1) == txnq.MessageId("orders", partition, 0, 0)
        received = receive_messages(consumer, 2)
        assert [(m.value, m.key, m.properties, m.message_id.partition) for m in received] == [
            (b"order 1", "customer-7", {}, partition),
            (b"order 1 audit", "customer-7", {"kind": "audit"}, partition),
        ]
        assert sql(dsn, "SELECT id FROM app_orders") == [(1,)]
        assert sql_value(dsn, "SELECT count(*) FROM txnq.staged_sends") == 0


def test_a_caller_rollback_leaves_no_trace(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    with client.producer("orders") as producer:
        producer.send("input", partition=0)
    with (
        client.producer("invoices") as producer,
        client.subscribe("orders", "etl", initial_position="earliest", **FAST) as consumer,
    ):
        (message,) = receive_messages(consumer, 1)
        before = txnq_state(dsn)

        with pytest.raises(RuntimeError), conn.transaction(), txnq.attach(conn) as txn:
            conn.execute("INSERT INTO app_orders VALUES (1, 'processed')")
            producer.send_async(b"invoice", txn=txn)
            txn.send("invoices", b"audit")
            consumer.acknowledge(message, txn=txn)
            raise RuntimeError("the application's transaction fails")

        assert txn.state == "ABORTED"
        assert txnq_state(dsn) == before
        assert sql_value(dsn, "SELECT count(*) FROM app_orders") == 0
        # The acknowledgement rolled back: the message is delivered again.
        (again,) = receive_messages(consumer, 1)
        assert again.message_id == message.message_id


def test_a_rollback_by_the_caller_after_commit_undoes_everything(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    before = txnq_state(dsn)
    txn = client.new_transaction(connection=conn)
    txn.send("orders", b"never", partition=1)
    txn.commit()  # published inside the caller's transaction...
    conn.rollback()  # ...which the caller then rolls back
    assert txnq_state(dsn) == before


def test_an_open_application_transaction_holds_no_lock_and_no_read_offset(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    # The trade-off (docs/exactly-once.md): a staged message gets its offset
    # when the caller commits, so an open application transaction neither
    # locks the partition's head row nor holds back read_committed consumers
    # (Kafka's last stable offset would stay behind it until it ends).
    with (
        client.producer("invoices") as producer,
        client.subscribe("invoices", "reader", initial_position="earliest", **FAST) as consumer,
    ):
        txn = txnq.attach(conn)
        conn.execute("INSERT INTO app_orders VALUES (1, 'slow')")
        txn.send("invoices", b"from the slow transaction")
        txn.commit()  # published: head row locked until the caller commits

        with psycopg.connect(dsn, autocommit=True) as other:
            other.execute("SET lock_timeout = '200ms'")
            with pytest.raises(psycopg.errors.LockNotAvailable):
                other.execute("SELECT * FROM txnq.append_v4(2, 0, NULL, NULL, NULL, '{x}')")
        conn.rollback()

        txn = txnq.attach(conn)
        txn.send("invoices", b"from the slow transaction")  # staged, not published
        with psycopg.connect(dsn, autocommit=True) as other:
            other.execute("SET lock_timeout = '200ms'")
            other.execute(
                "SELECT * FROM txnq.append_v4(%s, 0, NULL, NULL, NULL, '{direct}')",
                (client.admin.get_topic("invoices").topic_id,),
            )
        producer.send(b"meanwhile")
        assert [m.value for m in receive_messages(consumer, 2)] == [b"direct", b"meanwhile"]
        conn.commit()  # the deferred trigger publishes inside COMMIT
        (late,) = receive_messages(consumer, 1)
        assert (late.value, late.message_id.offset) == (b"from the slow transaction", 2)


def test_commit_of_the_connection_alone_publishes_what_was_staged(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    with (
        client.producer("orders") as producer,
        client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer,
    ):
        txn = client.new_transaction(connection=conn)
        for i in range(3):
            producer.send_async(f"m{i}", partition=0, txn=txn)
        txn.flush()  # staged on the connection; txn.commit() never called
        conn.commit()
        assert [m.value for m in receive_messages(consumer, 3)] == [b"m0", b"m1", b"m2"]
        assert sql(dsn, "SELECT entry_offset, message_count FROM txnq.entries") == [(0, 3)]


def test_a_sql_trigger_produces_through_the_outbox(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    conn.execute(
        """
        CREATE FUNCTION public.order_created() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM txnq.send_at_commit_v2('orders', convert_to(NEW.note, 'UTF8'),
                                           convert_to('order-' || NEW.id, 'UTF8'));
            RETURN NEW;
        END $$;
        CREATE TRIGGER order_created AFTER INSERT ON public.app_orders
            FOR EACH ROW EXECUTE FUNCTION public.order_created();
        """
    )
    conn.commit()
    with client.subscribe("orders", "billing", initial_position="earliest", **FAST) as consumer:
        conn.execute("INSERT INTO app_orders VALUES (1, 'one'), (2, 'two'), (3, 'three')")
        conn.commit()
        conn.execute("INSERT INTO app_orders VALUES (4, 'rolled back')")
        conn.rollback()
        received = receive_messages(consumer, 3)
        assert sorted((m.key, m.value) for m in received) == [
            ("order-1", b"one"),
            ("order-2", b"two"),
            ("order-3", b"three"),
        ]
        for m in received:
            assert m.message_id.partition == zlib.crc32(m.key_bytes or b"") % 2
        assert_nothing_more(consumer)


def test_the_processor_commits_acks_with_the_handlers_writes(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    with client.producer("orders") as producer:
        for i in range(10):
            producer.send_async(f"order {i}", partition=0)
    with (
        client.producer("invoices") as invoices,
        client.subscribe("orders", "etl", initial_position="earliest", **FAST) as consumer,
    ):
        seen = 0
        with pytest.raises(RuntimeError):
            for message in consumer.process(conn, batch_size=4, idle_timeout="1s"):
                seen += 1
                conn.execute(
                    "INSERT INTO app_orders VALUES (%s, %s)",
                    (message.message_id.offset * 100 + message.message_id.batch_index, "x"),
                )
                invoices.send_async(b"invoice " + message.value, txn=None)  # not in the txn
                if seen == 6:
                    raise RuntimeError("handler fails on the 6th message")
        invoices.flush()
        # Batch 1 (4 messages) committed; batch 2 rolled back when the handler raised.
        assert sql_value(dsn, "SELECT count(*) FROM app_orders") == 4
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE

        processed = [m.value for m in consumer.process(conn, batch_size=4, idle_timeout="1s")]
        assert processed == [f"order {i}".encode() for i in range(4, 10)]
        assert (
            sql_value(dsn, "SELECT mark_delete_offset FROM txnq.cursors WHERE partition = 0") == 0
        )
        assert sql_value(dsn, "SELECT count(*) FROM txnq.staged_acks") == 0


def test_consume_transform_produce_in_the_applications_transaction(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    with client.producer("orders") as producer:
        for i in range(5):
            producer.send(f"{i}", partition=1)
    with (
        client.producer("invoices") as invoices,
        client.subscribe("orders", "etl", initial_position="earliest", **FAST) as consumer,
        client.subscribe("invoices", "reader", initial_position="earliest", **FAST) as reader,
    ):
        for message in consumer.process(conn, batch_size=2, idle_timeout="1s"):
            number = int(message.value)
            conn.execute("INSERT INTO app_orders VALUES (%s, 'done')", (number,))
            invoices.send_async(f"invoice {number}", txn=txnq.attach(conn))
        assert sorted(m.value for m in receive_messages(reader, 5)) == [
            f"invoice {i}".encode() for i in range(5)
        ]
        assert sql_value(dsn, "SELECT count(*) FROM app_orders") == 5
        assert (
            sql_value(dsn, "SELECT mark_delete_offset FROM txnq.cursors WHERE partition = 1") == 4
        )


def test_two_transactions_cannot_both_commit_one_message(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    with client.producer("orders") as producer:
        producer.send("once", partition=0)
    with client.subscribe("orders", "etl", initial_position="earliest", **FAST) as consumer:
        (message,) = receive_messages(consumer, 1)
        first = txnq.attach(conn)
        consumer.acknowledge(message, txn=first)
        with psycopg.connect(dsn) as other:
            second = txnq.attach(other)
            consumer.acknowledge(message, txn=second)  # staged: nobody committed it yet
            done = threading.Event()

            failures: list[BaseException] = []

            def commit_first() -> None:
                try:
                    first.commit()
                    conn.commit()
                    done.set()
                except errors.TransactionConflictError as exc:
                    failures.append(exc)

            second.commit()  # holds the cursor row until `other` commits
            thread = threading.Thread(target=commit_first)
            thread.start()
            assert not done.wait(0.3)  # the first waits for the cursor row
            other.commit()
            thread.join(5)
        # The first one's commit failed: it saw the message acknowledged.
        assert not done.is_set()
        assert "acknowledged already" in str(failures[0])
        assert conn.info.transaction_status == psycopg.pq.TransactionStatus.INERROR
        conn.rollback()
        with psycopg.connect(dsn) as third, pytest.raises(errors.TransactionConflictError):
            consumer.acknowledge(message, txn=txnq.attach(third))


def test_sqlalchemy_connection_and_session_join(dsn: str, client: txnq.Client) -> None:
    engine = create_engine(sqlalchemy_url(dsn))
    try:
        with engine.connect() as sa_conn:
            txn = client.new_transaction(connection=sa_conn)
            sa_conn.execute(text("INSERT INTO app_orders VALUES (1, 'core')"))
            txn.send("invoices", b"from core")
            txn.commit()
            sa_conn.commit()
        with Session(engine) as session:
            with session.begin():
                session.execute(text("INSERT INTO app_orders VALUES (2, 'orm')"))
                with txnq.attach(session) as txn:
                    txn.send("invoices", b"from orm")
            with session.begin():
                session.execute(text("INSERT INTO app_orders VALUES (3, 'rolled back')"))
                txnq.attach(session).send("invoices", b"never")
                session.rollback()
    finally:
        engine.dispose()
    assert sql(dsn, "SELECT payload FROM txnq.messages ORDER BY entry_offset") == [
        (b"from core",),
        (b"from orm",),
    ]
    assert sql(dsn, "SELECT id FROM app_orders ORDER BY id") == [(1,), (2,)]


def test_bad_uses_of_an_application_transaction_fail_and_stage_nothing(
    dsn: str, client: txnq.Client, conn: psycopg.Connection[Any]
) -> None:
    with psycopg.connect(dsn, autocommit=True) as auto:
        with pytest.raises(errors.InvalidArgumentError, match="autocommit"):
            txnq.attach(auto)
        with auto.transaction():
            txnq.attach(auto).send("orders", b"fine inside a transaction block", partition=0)
    with pytest.raises(errors.InvalidArgumentError, match="psycopg 3 Connection"):
        txnq.attach("postgresql://nowhere")
    with pytest.raises(errors.InvalidArgumentError, match="timeout"):
        client.new_transaction("1m", connection=conn)
    txn = txnq.attach(conn)
    with (
        client.producer("orders") as producer,
        pytest.raises(errors.InvalidArgumentError, match="send_async"),
    ):
        producer.send(b"x", txn=txn)
    with pytest.raises(errors.TopicNotFoundError):
        txn.send("no-such-topic", b"x")
    conn.rollback()
    txn = txnq.attach(conn)
    with pytest.raises(errors.MessageTooLargeError):
        txn.send("orders", b"x" * (6 * 1024 * 1024), partition=0)
    conn.rollback()
    txn = txnq.attach(conn)
    txn.abort()
    with pytest.raises(errors.TransactionEndedError):
        txn.send("orders", b"x")
    conn.rollback()
    txn = txnq.attach(conn)
    with (
        client.producer("orders") as producer,
        pytest.raises(errors.InvalidArgumentError, match="deliver_after"),
    ):
        producer.send_async(b"x", txn=txn, deliver_after="1m")
    with client.subscribe("orders", "work", subscription_type="shared") as shared:
        with pytest.raises(errors.InvalidArgumentError, match="shared"):
            shared.process(conn)
        with pytest.raises(errors.InvalidArgumentError, match="shared"):
            shared.acknowledge(txnq.MessageId("orders", 0, 0, 0), txn=txn)
    conn.rollback()
    assert sql_value(dsn, "SELECT count(*) FROM txnq.staged_sends") == 0
    assert sql(dsn, "SELECT payload FROM txnq.messages") == [(b"fine inside a transaction block",)]


def test_partition_for_key_in_sql_routes_as_the_python_producer(dsn: str) -> None:
    keys = [b"", b"k1", b"customer-7", "clé".encode(), bytes(range(256))]
    for partitions in (1, 3, 16):
        rows = sql(
            dsn,
            "SELECT txnq.partition_for_key_v2(k, %s) FROM unnest(%s::bytea[]) AS k",
            (partitions, keys),
        )
        assert [r[0] for r in rows] == [zlib.crc32(k) % partitions for k in keys]


def test_the_processor_works_on_a_sqlalchemy_session(dsn: str, client: txnq.Client) -> None:
    with client.producer("orders") as producer:
        for i in range(5):
            producer.send_async(f"{i}", partition=0)
    engine = create_engine(sqlalchemy_url(dsn))
    try:
        with (
            client.subscribe("orders", "etl", initial_position="earliest", **FAST) as consumer,
            Session(engine) as session,
        ):
            for message in consumer.process(session, batch_size=2, idle_timeout="1s"):
                session.execute(
                    text("INSERT INTO app_orders VALUES (:id, 'orm')"), {"id": int(message.value)}
                )
    finally:
        engine.dispose()
    assert sql(dsn, "SELECT id FROM app_orders ORDER BY id") == [(i,) for i in range(5)]
    assert sql_value(dsn, "SELECT mark_delete_offset FROM txnq.cursors WHERE partition = 0") == 0
