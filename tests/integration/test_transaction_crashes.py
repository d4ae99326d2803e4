"""Crash injection at every step of a commit, followed by recovery.

A client or a coordinator worker runs as a separate process with
``TXNQ_FAILPOINT`` set (txnq/failpoints.py), so it dies like a kill -9 between
two steps of the protocol; then a fresh coordinator worker runs, and the
transaction must end exactly as decided: every message visible once (or
never), every marker written once, the acks applied (or released).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

import txnq
from tests.conftest import free_tcp_port
from tests.helpers import assert_nothing_more, receive_messages, sql, sql_value, wait_until
from txnq.database.embedded import EmbeddedServer
from txnq.database.migrate import upgrade
from txnq.failpoints import EXIT_CODE

FAST = {"poll_interval": "200ms"}

# A client that consumes two messages, produces to three partitions and
# acknowledges in one transaction, then ends it (argv: dsn, commit|abort).
CLIENT = textwrap.dedent(
    """
    import sys, txnq
    dsn, end = sys.argv[1], sys.argv[2]
    client = txnq.Client(dsn)
    consumer = client.subscribe(
        "in", "etl", initial_position="earliest", poll_interval="200ms", lease="1s"
    )
    producer = client.producer("out")
    taken = [consumer.receive(timeout=10) for _ in range(2)]
    txn = client.new_transaction()
    print(txn.txn_id, flush=True)
    for partition in range(3):
        producer.send(f"out{partition}", partition=partition, txn=txn)
    for message in taken:
        consumer.acknowledge(message, txn=txn)
    txn.commit() if end == "commit" else txn.abort()
    print("returned", flush=True)
    """
)


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("in", partitions=1)
        client.admin.create_topic("out", partitions=3)
        with client.producer("in") as producer:
            producer.send("a")
            producer.send("b")
        yield client


def run(args: list[str], failpoint: str | None, dsn: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TXNQ_DSN": dsn, "TXNQ_POLL_INTERVAL_SECONDS": "0.2"}
    env.pop("TXNQ_FAILPOINT", None)
    if failpoint:
        env["TXNQ_FAILPOINT"] = failpoint
    return subprocess.run(
        [sys.executable, *args], env=env, capture_output=True, text=True, timeout=60
    )


def run_worker_until(dsn: str, condition: str, failpoint: str | None = None) -> int:
    """Run a coordinator worker process until ``condition`` (SQL, true) holds or it exits."""
    env = {**os.environ, "TXNQ_DSN": dsn, "TXNQ_POLL_INTERVAL_SECONDS": "0.2"}
    env.pop("TXNQ_FAILPOINT", None)
    if failpoint:
        env["TXNQ_FAILPOINT"] = failpoint
    process = subprocess.Popen(
        [sys.executable, "-m", "txnq.workers.coordinator"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            lambda: process.poll() is not None or sql_value(dsn, condition),
            timeout=30,
            what=condition,
        )
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=10)
    return process.returncode


def subscribe_when_free(client: txnq.Client) -> txnq.Consumer:
    """Subscribe to the exclusive "etl" once the killed client's lease (1 s) ran out."""

    def attempt() -> txnq.Consumer | None:
        try:
            return client.subscribe("in", "etl", **FAST)
        except txnq.errors.ConsumerBusyError:
            return None

    return wait_until(attempt, timeout=10, what="the dead consumer's lease runs out")


def txn_row(dsn: str) -> tuple[str, int, int]:
    """(state, partitions marked, subscriptions done) of the only transaction."""
    row = sql(
        dsn,
        "SELECT state, partitions_marked, subscriptions_done FROM txnq.transaction_status",
    )
    assert len(row) == 1, row
    return row[0][0], row[0][1], row[0][2]


def assert_committed_once(dsn: str, client: txnq.Client) -> None:
    assert txn_row(dsn) == ("COMMITTED", 3, 1)
    assert sql_value(dsn, "SELECT count(*) FROM txnq.entries WHERE marker = 1") == 3
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    assert sorted(m.value for m in receive_messages(reader, 3)) == [b"out0", b"out1", b"out2"]
    assert_nothing_more(reader)
    source = subscribe_when_free(client)
    assert_nothing_more(source)  # both inputs consumed by the committed transaction
    assert sql_value(dsn, "SELECT count(*) FROM txnq.pending_acks") == 0


def test_client_killed_after_the_commit_decision(dsn: str, client: txnq.Client) -> None:
    result = run(["-c", CLIENT, dsn, "commit"], "client_after_decision", dsn)
    assert result.returncode == EXIT_CODE, result.stderr
    assert "returned" not in result.stdout
    assert txn_row(dsn) == ("COMMITTING", 0, 0)
    run_worker_until(dsn, "SELECT state = 'COMMITTED' FROM txnq.transactions")
    assert_committed_once(dsn, client)


def test_client_killed_after_the_abort_decision(dsn: str, client: txnq.Client) -> None:
    result = run(["-c", CLIENT, dsn, "abort"], "client_after_decision", dsn)
    assert result.returncode == EXIT_CODE, result.stderr
    run_worker_until(dsn, "SELECT state = 'ABORTED' FROM txnq.transactions")
    assert txn_row(dsn) == ("ABORTED", 3, 1)
    reader = client.subscribe("out", "reader", initial_position="earliest", **FAST)
    assert_nothing_more(reader)
    source = subscribe_when_free(client)
    assert sorted(m.value for m in receive_messages(source, 2)) == [b"a", b"b"]


@pytest.mark.parametrize(
    ("failpoint", "marked"),
    [("after_partition_marker", 1), ("after_subscription", 3), ("before_finish", 3)],
)
def test_worker_killed_in_the_marker_phase(
    dsn: str, client: txnq.Client, failpoint: str, marked: int
) -> None:
    result = run(["-c", CLIENT, dsn, "commit"], "client_after_decision", dsn)
    assert result.returncode == EXIT_CODE, result.stderr
    code = run_worker_until(dsn, "SELECT false", failpoint=failpoint)
    assert code == EXIT_CODE
    state, partitions_marked, _ = txn_row(dsn)
    assert (state, partitions_marked) == ("COMMITTING", marked)
    run_worker_until(dsn, "SELECT state = 'COMMITTED' FROM txnq.transactions")
    assert_committed_once(dsn, client)


def test_pending_acks_survive_a_consumer_restart(dsn: str, client: txnq.Client) -> None:
    consumer = client.subscribe("in", "etl", initial_position="earliest", **FAST)
    taken = receive_messages(consumer, 2)
    txn = client.new_transaction()
    consumer.acknowledge(taken[0], txn=txn)
    consumer.close()
    restarted = client.subscribe("in", "etl", **FAST)
    # The pending message is not delivered while its transaction is open.
    assert [m.value for m in receive_messages(restarted, 1)] == [b"b"]
    assert_nothing_more(restarted)
    txn.commit()
    assert sql_value(dsn, "SELECT count(*) FROM txnq.pending_acks") == 0
    assert_nothing_more(restarted)
    restarted.acknowledge(taken[1])
    assert sql_value(dsn, "SELECT mark_delete_offset FROM txnq.cursors") == 1


def test_postgresql_crash_in_the_marker_phase(tmp_path: Path) -> None:
    """PostgreSQL itself dies (immediate stop: no checkpoint, WAL replay at the
    next start) after the decision and one partition's marker; once it is back,
    a worker completes the commit with every marker written once."""
    server = EmbeddedServer(tmp_path / "crashing", port=free_tcp_port())
    dsn = server.start()
    try:
        upgrade(dsn)
        with txnq.Client(dsn) as client:
            client.admin.create_topic("out", partitions=3)
            producer = client.producer("out")
            txn = client.new_transaction()
            for partition in range(3):
                producer.send(f"out{partition}", partition=partition, txn=txn)
            txn.commit(wait=False)  # the decision, durable
            topic_id = client.admin.get_topic("out").topic_id
        tc_id, txn_seq = txn.txn_id
        sql(dsn, "SELECT txnq.complete_txn_partition_v1(%s, %s, %s, 0)", (tc_id, txn_seq, topic_id))

        server.stop(immediate=True)
        dsn = server.start()

        assert txn_row(dsn) == ("COMMITTING", 1, 0)  # the decision and the marker survived
        run_worker_until(dsn, "SELECT state = 'COMMITTED' FROM txnq.transactions")
        assert txn_row(dsn) == ("COMMITTED", 3, 0)
        assert sql_value(dsn, "SELECT count(*) FROM txnq.entries WHERE marker = 1") == 3
        with txnq.Client(dsn) as client:
            reader = client.subscribe("out", "r", initial_position="earliest", **FAST)
            assert sorted(m.value for m in receive_messages(reader, 3)) == [
                b"out0",
                b"out1",
                b"out2",
            ]
            assert_nothing_more(reader)
    finally:
        server.stop()


def test_a_commit_after_postgresql_crashed_aborts_the_transaction(tmp_path: Path) -> None:
    """A client transaction's appends and acks commit without waiting for the
    WAL flush, so a crash of PostgreSQL may lose them: the crash recovery
    empties the UNLOGGED txnq.server_incarnation, and a commit of a
    transaction opened before it aborts (reason crash) instead of committing
    what may be half of the work. A transaction opened afterwards commits."""
    server = EmbeddedServer(tmp_path / "crashing", port=free_tcp_port())
    dsn = server.start()
    try:
        upgrade(dsn)
        with txnq.Client(dsn) as client:
            client.admin.create_topic("out", partitions=3)
            with client.producer("out") as producer:
                txn = client.new_transaction()
                for partition in range(3):
                    producer.send(f"lost{partition}", partition=partition, txn=txn)

                server.stop(immediate=True)
                server.start()

                with pytest.raises(txnq.errors.TransactionAbortedError, match="crash"):
                    txn.commit()
            assert txn.state == "ABORTED"
            assert sql(dsn, "SELECT state, reason FROM txnq.transactions") == [("ABORTED", "crash")]

            with client.producer("out") as producer:
                after = client.new_transaction()
                for partition in range(3):
                    producer.send(f"kept{partition}", partition=partition, txn=after)
                after.commit()
            reader = client.subscribe("out", "r", initial_position="earliest", **FAST)
            assert sorted(m.value for m in receive_messages(reader, 3)) == [
                b"kept0",
                b"kept1",
                b"kept2",
            ]
            assert_nothing_more(reader)
            reader.close()
    finally:
        server.stop()


def test_transaction_ids_are_not_handed_out_again_after_a_crash(dsn: str) -> None:
    """An open in a client transaction commits without waiting for the flush,
    so a crash may lose it while its client still holds the id. A coordinator
    hands out numbers only inside a block reserved durably, and the first open
    after a crash (a new incarnation) starts above the block: the lost id is
    never given to another transaction, which the lost one's late writes
    could otherwise land in."""
    opened = sql(dsn, "SELECT txn_seq FROM txnq.open_txn_v3(0, 60, true)")[0][0]
    # What a crash that lost this open leaves: the coordinator's number back
    # where it was, no transaction row, an empty incarnation table.
    sql(dsn, "DELETE FROM txnq.txn_log WHERE tc_id = 0 AND txn_seq = %s", (opened,))
    sql(dsn, "DELETE FROM txnq.transactions WHERE tc_id = 0 AND txn_seq = %s", (opened,))
    sql(dsn, "UPDATE txnq.coordinators SET next_txn_seq = %s WHERE tc_id = 0", (opened,))
    sql(dsn, "TRUNCATE txnq.server_incarnation")

    again = sql(dsn, "SELECT txn_seq FROM txnq.open_txn_v3(0, 60, true)")[0][0]
    assert again > opened
    reserved = sql_value(dsn, "SELECT reserved_txn_seq FROM txnq.coordinators WHERE tc_id = 0")
    assert again <= reserved
    # Without a crash, numbers follow each other.
    assert sql(dsn, "SELECT txn_seq FROM txnq.open_txn_v3(0, 60, true)")[0][0] == again + 1


def test_a_durably_opened_transaction_is_not_aborted_for_a_new_incarnation(dsn: str) -> None:
    """open_txn_v2 (the Spark sink, SQL callers) writes durably: its commit
    does not depend on the incarnation."""
    tc_id, txn_seq = sql(dsn, "SELECT tc_id, txn_seq FROM txnq.open_txn_v2(1, 60)")[0]
    sql(dsn, "TRUNCATE txnq.server_incarnation")
    assert sql(
        dsn, "SELECT state, reason FROM txnq.end_txn_v2(%s, %s, true)", (tc_id, txn_seq)
    ) == [("COMMITTING", "client")]


def test_a_producer_goes_on_after_a_crash_lost_its_unflushed_appends(dsn: str) -> None:
    """A crash that loses a transaction's unflushed append also takes the
    producer's sequence back on the server: the producer's next append finds
    a gap, takes the server's sequences again (the lost messages belong to a
    transaction that cannot commit) and is written, instead of failing for good."""
    with txnq.Client(dsn) as client:
        client.admin.create_topic("lossy", partitions=1)
        with client.producer("lossy") as producer:
            producer.send("before")
            state = "last_sequence, recent_first_sequences, recent_offsets, recent_counts"
            before = sql(dsn, f"SELECT {state} FROM txnq.producer_sequences")
            assert len(before) == 1
            txn = client.new_transaction()
            producer.send("lost", txn=txn)
            # What the crash leaves: the sequence row as before the append,
            # and a new incarnation.
            sql(dsn, f"UPDATE txnq.producer_sequences SET ({state}) = (%s, %s, %s, %s)", before[0])
            sql(dsn, "TRUNCATE txnq.server_incarnation")
            with pytest.raises(txnq.errors.TransactionAbortedError, match="crash"):
                txn.commit()

            producer.send("after")
            again = client.new_transaction()
            producer.send("in a transaction", txn=again)
            again.commit()
        reader = client.subscribe("lossy", "r", initial_position="earliest", **FAST)
        assert [m.value for m in receive_messages(reader, 3)] == [
            b"before",
            b"after",
            b"in a transaction",
        ]
        assert_nothing_more(reader)
        reader.close()
