"""Application transactions, the same on both faces: ``attach`` joins the
application's own PostgreSQL transaction (a psycopg ``Connection`` on the sync
face, an ``AsyncConnection`` on the asyncio face), so messages, acks and the
application's rows commit or roll back together; ``consumer.process`` runs
exactly-once processing on it."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from faces import FAST

from tests.cluster_pass import needs_cluster_slice
from tests.helpers import assert_nothing_more, receive_messages, sql_value
from txnq import errors

pytestmark = needs_cluster_slice("attach")


@pytest.fixture
def app(face: Any, dsn: str, client: Any, topic: Any) -> Any:
    """The application's connection (not autocommit) with its table ``rows``."""
    topic("in", partitions=2)
    topic("out")
    conn = face.connect(dsn)
    with conn.transaction():
        conn.execute("CREATE TABLE rows (body text PRIMARY KEY)")
    return conn


def rows(dsn: str) -> int:
    return int(sql_value(dsn, "SELECT count(*) FROM rows"))


def feed(client: Any, count: int) -> None:
    producer = client.producer("in")
    for i in range(count):
        producer.send(f"m{i}", key=f"k{i}")
    producer.close()


def test_an_attached_transaction_commits_with_the_applications_rows(
    face: Any, dsn: str, client: Any, app: Any
) -> None:
    feed(client, 2)
    consumer = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out")
    received = receive_messages(consumer, 2)

    with app.transaction(), face.attach(app) as txn:
        assert face.attach(app) == txn  # inside the block: the block's transaction
        app.execute("INSERT INTO rows VALUES ('written')")
        pending = producer.send_async(b"out-1", txn=txn)
        txn.send("out", b"out-2", key="k")  # the outbox, without a producer
        consumer.acknowledge(received, txn=txn)
        assert_nothing_more(reader, 0.2)

    assert txn.state == "COMMITTED"
    assert pending.result(5).topic == "out"
    assert rows(dsn) == 1
    assert sorted(m.value for m in receive_messages(reader, 2)) == [b"out-1", b"out-2"]
    consumer.close()
    assert_nothing_more(client.subscribe("in", "etl", **FAST), 0.3)


def test_a_rolled_back_attached_transaction_leaves_nothing_and_redelivers(
    face: Any, dsn: str, client: Any, app: Any
) -> None:
    feed(client, 2)
    consumer = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    producer = client.producer("out")
    received = receive_messages(consumer, 2)

    with pytest.raises(ZeroDivisionError), app.transaction(), face.attach(app) as txn:
        app.execute("INSERT INTO rows VALUES ('written')")
        pending = producer.send_async(b"never", txn=txn)
        consumer.acknowledge(received, txn=txn)
        1 / 0  # noqa: B018

    assert txn.state == "ABORTED"
    assert isinstance(pending.exception(5), errors.TransactionAbortedError)
    assert rows(dsn) == 0
    assert_nothing_more(reader, 0.3)
    assert sorted(m.value for m in receive_messages(consumer, 2)) == [b"m0", b"m1"]


def test_new_transaction_with_a_connection_joins_it(
    face: Any, dsn: str, client: Any, app: Any
) -> None:
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    with app.transaction():
        txn = client.new_transaction(connection=app)
        txn.send("out", b"joined")
        app.execute("INSERT INTO rows VALUES ('written')")
        txn.commit()
    assert rows(dsn) == 1
    assert [m.value for m in receive_messages(reader, 1)] == [b"joined"]
    with pytest.raises(errors.TransactionEndedError):
        txn.send("out", b"late")


def test_process_commits_each_batch_with_the_rows_it_wrote(
    face: Any, dsn: str, client: Any, app: Any
) -> None:
    feed(client, 7)
    consumer = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    seen = []
    for message in consumer.process(app, batch_size=3, idle_timeout="500ms"):
        app.execute("INSERT INTO rows VALUES (%s)", (message.value.decode(),))
        seen.append(message.value)
    assert sorted(seen) == [f"m{i}".encode() for i in range(7)]
    assert rows(dsn) == 7
    consumer.close()
    assert_nothing_more(client.subscribe("in", "etl", **FAST), 0.3)


def test_process_rolls_back_a_batch_whose_body_raised_and_delivers_it_again(
    face: Any, dsn: str, client: Any, app: Any
) -> None:
    feed(client, 2)
    consumer = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    with (
        pytest.raises(ZeroDivisionError),
        contextlib.closing(consumer.process(app, batch_size=10, idle_timeout="2s")) as messages,
    ):
        for message in messages:
            app.execute("INSERT INTO rows VALUES (%s)", (message.value.decode(),))
            1 / 0  # noqa: B018
    assert rows(dsn) == 0
    again = []
    for message in consumer.process(app, batch_size=10, idle_timeout="500ms"):
        app.execute("INSERT INTO rows VALUES (%s)", (message.value.decode(),))
        again.append(message.value)
    assert sorted(again) == [b"m0", b"m1"]
    assert rows(dsn) == 2


@pytest.mark.parametrize("subscription_type", ["shared", "key_shared"])
def test_process_and_attached_acks_are_refused_on_shared_subscriptions(
    face: Any, client: Any, app: Any, subscription_type: str
) -> None:
    consumer = client.subscribe("in", "etl", subscription_type, **FAST)
    with pytest.raises(errors.InvalidArgumentError, match="exclusive and failover"):
        consumer.process(app)
    with (
        app.transaction(),
        face.attach(app) as txn,
        pytest.raises(errors.InvalidArgumentError, match="exclusive and failover"),
    ):
        consumer.acknowledge([], txn=txn)
