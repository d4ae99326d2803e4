"""The producer's append as a statement prepared once per connection and run
through libpq (txnq.database.prepared): the same answers and errors as the
cursor query it stands in for, and it survives what can happen to a
prepared statement or a connection."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest

import txnq
from tests.helpers import receive_messages, sql_value
from txnq import errors
from txnq.database import prepared
from txnq.database.arrays import ByteaArray
from txnq.database.plans import Call, SyncIO, run, single
from txnq.database.queries import QUERIES

STATEMENT = prepared.PREPARED["append_positional"]


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        yield client


@pytest.fixture
def topic_id(client: txnq.Client) -> int:
    return client.admin.create_topic("prepared", partitions=2).topic_id


def _arguments(topic_id: int, payloads: list[bytes], **extra: Any) -> tuple[Any, ...]:
    """append_positional's arguments for a producer without idempotence."""
    return (
        topic_id,
        extra.get("partition", 0),
        None,
        None,
        None,
        ByteaArray(payloads),
        extra.get("keys"),
        extra.get("properties"),
        extra.get("event_times"),
        None,
        None,
    )


def _append(conn: psycopg.Connection[Any], params: tuple[Any, ...]) -> Any:
    return run(single(Call("append_positional", params)), SyncIO(lambda: conn))


def test_the_prepared_append_answers_as_the_cursor_query_does(dsn: str, topic_id: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        by_cursor = conn.execute(
            QUERIES["append_positional"], _arguments(topic_id, [b"a"])
        ).fetchone()
        by_statement = prepared.execute(conn, STATEMENT, _arguments(topic_id, [b"b", b"c"]))
    assert by_cursor is not None
    assert len(by_statement) == 1
    offset, publish_time, duplicate, roll = by_statement[0]
    assert (offset, duplicate, roll) == (by_cursor[0] + 1, False, False)
    assert isinstance(publish_time, datetime) and publish_time >= by_cursor[1]


def test_keys_properties_and_event_times_arrive_as_sent(
    dsn: str, client: txnq.Client, topic_id: int
) -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
    params = _arguments(
        topic_id,
        [b"one", b"two"],
        keys=ByteaArray([b"k\x00\xff", None]),
        properties=['{"a": "1", "quote\\"d": "x,y{}"}', None],
        event_times=[when, None],
    )
    with psycopg.connect(dsn, autocommit=True) as conn:
        _append(conn, params)
    with client.subscribe("prepared", "check", initial_position="earliest") as consumer:
        first, second = receive_messages(consumer, 2)
    assert (first.value, first.key_bytes, first.properties, first.event_time) == (
        b"one",
        b"k\x00\xff",
        {"a": "1", 'quote"d': "x,y{}"},
        when,
    )
    assert (second.value, second.key_bytes, second.properties, second.event_time) == (
        b"two",
        None,
        {},
        None,
    )


def test_a_statement_deallocated_behind_its_back_is_prepared_again(dsn: str, topic_id: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        _append(conn, _arguments(topic_id, [b"1"]))
        conn.execute("DEALLOCATE ALL")
        _append(conn, _arguments(topic_id, [b"2"]))
        conn.execute("DISCARD ALL")
        _append(conn, _arguments(topic_id, [b"3"]))
    assert sql_value(dsn, "SELECT sum(message_count) FROM txnq.entries") == 3


def test_errors_are_the_txnq_errors_of_the_cursor_path(dsn: str, topic_id: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        with pytest.raises(errors.TopicNotFoundError) as by_statement:
            _append(conn, _arguments(topic_id + 1000, [b"x"]))
        with pytest.raises(errors.InvalidArgumentError):
            _append(conn, _arguments(topic_id, [b"x"], keys=ByteaArray([b"1", b"2"])))
        # The connection is still usable after an error, and nothing was written.
        _append(conn, _arguments(topic_id, [b"ok"]))
    assert "does not exist" in str(by_statement.value)
    assert sql_value(dsn, "SELECT sum(message_count) FROM txnq.entries") == 1


def test_a_lost_connection_is_an_operational_error_the_plans_reconnect_on(
    dsn: str, topic_id: int
) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        _append(conn, _arguments(topic_id, [b"1"]))
        pid = conn.info.backend_pid
        with psycopg.connect(dsn, autocommit=True) as killer:
            killer.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(psycopg.OperationalError):
            prepared.execute(conn, STATEMENT, _arguments(topic_id, [b"2"]))
        assert conn.closed or conn.broken
        assert not prepared.usable(conn)


def test_pipelines_and_failed_transactions_take_the_cursor_path(dsn: str, topic_id: int) -> None:
    with psycopg.connect(dsn, autocommit=True) as conn:
        assert prepared.usable(conn)
        with conn.pipeline():
            assert not prepared.usable(conn)
            _append(conn, _arguments(topic_id, [b"in a pipeline"]))
        with conn.transaction():
            assert prepared.usable(conn)  # inside a transaction block it is fine
            _append(conn, _arguments(topic_id, [b"in a transaction"]))
        conn.autocommit = False
        with pytest.raises(psycopg.errors.DivisionByZero):
            conn.execute("SELECT 1 / 0")
        assert not prepared.usable(conn)  # failed transaction: the cursor path says so
        with pytest.raises(psycopg.errors.InFailedSqlTransaction):
            _append(conn, _arguments(topic_id, [b"refused"]))
        conn.rollback()
    assert sql_value(dsn, "SELECT sum(message_count) FROM txnq.entries") == 2


def test_a_producer_sends_through_the_prepared_statement(
    dsn: str, client: txnq.Client, topic_id: int
) -> None:
    with client.producer("prepared") as producer:
        for i in range(3):
            producer.send(f"m{i}".encode(), partition=0)
        connection = producer._proxy.driver_connection
        assert STATEMENT.statement_name in prepared._prepared_on.get(connection, set())
        names = connection.execute("SELECT name FROM pg_prepared_statements").fetchall()
    assert (STATEMENT.statement_name.decode(),) in names
    assert sql_value(dsn, "SELECT sum(message_count) FROM txnq.entries") == 3


def test_a_transactions_open_and_commit_run_prepared_and_answer_as_the_cursor_queries(
    dsn: str, client: txnq.Client, topic_id: int
) -> None:
    """open_txn_unflushed and end_and_complete_txn are called with named
    parameters; their prepared forms take them in order and answer the same."""
    opening = prepared.PREPARED["open_txn_unflushed"]
    ending = prepared.PREPARED["end_and_complete_txn"]
    assert opening.positional({"tc_id": 0}) is None  # a call that does not fit: the cursor's
    assert ending.positional(("not", "named")) is None
    with psycopg.connect(dsn, autocommit=True) as conn:
        io = SyncIO(lambda: conn)
        opened = run(single(Call("open_txn_unflushed", {"tc_id": 0, "timeout_seconds": 30.5})), io)
        by_cursor = conn.execute(
            QUERIES["open_txn_unflushed"], {"tc_id": 0, "timeout_seconds": 30.5}
        ).fetchone()
        assert opening.statement_name in prepared._prepared_on[conn]
        assert opened[0] == by_cursor[0] == 0 and opened[1] < by_cursor[1]
        assert 25 < (opened[2] - datetime.now(UTC)).total_seconds() <= 31
        for (tc, seq), commit in (((opened[0], opened[1]), True), (by_cursor[:2], False)):
            params = {"txn_tc": tc, "txn_seq": seq, "commit": commit, "reason": "client"}
            ended = run(single(Call("end_and_complete_txn", params)), io)
            decided, final = ("COMMITTING", "COMMITTED") if commit else ("ABORTING", "ABORTED")
            assert tuple(ended) == (decided, "client", final)
        assert ending.statement_name in prepared._prepared_on[conn]
        # An unknown transaction: the same txnq error as through a cursor.
        params = {"txn_tc": 0, "txn_seq": 1 << 60, "commit": True, "reason": "client"}
        with pytest.raises(errors.TransactionNotFoundError):
            run(single(Call("end_and_complete_txn", params)), io)
    with client.producer("prepared") as producer, client.new_transaction() as txn:
        producer.send(b"in a transaction", partition=1, txn=txn)
    assert txn.state == "COMMITTED"
    assert sql_value(dsn, "SELECT sum(message_count) FROM txnq.entries WHERE marker IS NULL") == 1
