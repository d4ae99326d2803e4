"""Transactions across a two-shard cluster's shards through the proxy
(docs/cluster.md, "Transactions across shards"): the Python client, unchanged,
produces to partitions on both shards and acknowledges on both in one
transaction; commit and abort are atomic across the shards; a read_committed
consumer sees nothing of a transaction before its decision, nor ever of an
aborted one; a decision whose markers were never written (the client died)
is finished by the coordinator worker through the proxy; a participant shard
that crashed during the transaction forces an abort; timeouts abort on every
shard; application transactions (attach) are refused with TQ030."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

import txnq
import txnq.aio
from tests.cluster.conftest import Cluster
from tests.helpers import running_coordinator
from txnq import errors
from txnq.cluster.setup import shard_of
from txnq.transaction import TxnId

RECEIVE_TIMEOUT = 10.0
QUIET = 0.6
PER_PARTITION = 3


def _states(cluster: Cluster, txn_id: TxnId) -> list[str | None]:
    """The transaction's state on each shard (None: no row there)."""
    states: list[str | None] = []
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            row = conn.execute(
                "SELECT state FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
                (txn_id.tc_id, txn_id.seq),
            ).fetchone()
        states.append(None if row is None else row[0])
    return states


def _drain(consumer: Any, timeout: float = QUIET) -> list[Any]:
    received = []
    while (message := consumer.receive(timeout=timeout)) is not None:
        received.append(message)
    return received


def _receive(consumer: Any, count: int) -> list[Any]:
    received = []
    for _ in range(count):
        message = consumer.receive(timeout=RECEIVE_TIMEOUT)
        assert message is not None, f"only {len(received)} of {count} messages arrived"
        received.append(message)
    return received


class Setup:
    """A 4-partition input topic with messages on every partition (two on each
    shard), an exclusive subscription on it, and a 4-partition output topic."""

    def __init__(self, client: txnq.Client, cluster: Cluster, name: Callable[[str], str]) -> None:
        self.input = name("txn-in")
        self.output = name("txn-out")
        topic = client.admin.create_topic(self.input, partitions=4)
        self.output_id = client.admin.create_topic(self.output, partitions=4).topic_id
        owners = {shard_of(cluster.proxy, topic.topic_id, p) for p in range(4)}
        assert owners == {0, 1}
        self.consumer = client.subscribe(self.input, "etl", initial_position="earliest")
        with client.producer(self.input, name="feeder") as feeder:
            for i in range(4 * PER_PARTITION):
                feeder.send(f"in{i}".encode(), partition=i % 4)
        self.received = _receive(self.consumer, 4 * PER_PARTITION)
        self.watcher = client.subscribe(self.output, "watch", initial_position="earliest")

    def close(self) -> None:
        for consumer in (self.consumer, self.watcher):
            with contextlib.suppress(errors.TxnqError, psycopg.Error):
                consumer.close()

    def backlog(self, client: txnq.Client) -> int:
        subs = {s.name: s for s in client.admin.list_subscriptions(self.input)}
        return subs["etl"].backlog_entries


def _work(setup: Setup, producer: Any, txn: Any) -> None:
    """Produce one message per input message to every output partition and
    acknowledge the input: individually on partitions 0 and 1, cumulatively
    on 2 and 3."""
    for i, message in enumerate(setup.received):
        producer.send_async(b"out-" + message.value, partition=i % 4, txn=txn)
    producer.flush()
    individual = [m for m in setup.received if m.message_id.partition in (0, 1)]
    setup.consumer.acknowledge(individual, txn=txn)
    for partition in (2, 3):
        last = [m for m in setup.received if m.message_id.partition == partition][-1]
        setup.consumer.acknowledge_cumulative(last, txn=txn)


def _assert_committed_once(cluster: Cluster, setup: Setup) -> None:
    """After a commit: a fresh consumer through the proxy reads the whole
    output once (nothing more), and the input's backlog is gone."""
    with (
        txnq.Client(cluster.proxy) as fresh,
        fresh.subscribe(setup.output, "after", initial_position="earliest") as watcher,
    ):
        assert len(_receive(watcher, 4 * PER_PARTITION)) == 4 * PER_PARTITION
        assert _drain(watcher) == []
        assert setup.backlog(fresh) == 0


def test_a_transaction_over_both_shards_commits_atomically(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, transactional_id=topic_name("etl"))
        txn = client.new_transaction(timeout="1m")
        _work(setup, producer, txn)
        # Before the decision: nothing of it is visible, on either shard.
        assert _drain(setup.watcher) == []
        assert _states(cluster, txn.txn_id) == ["OPEN", "OPEN"]
        txn.commit()
        assert txn.state == "COMMITTED"
        assert _states(cluster, txn.txn_id) == ["COMMITTED", "COMMITTED"]
        out = _receive(setup.watcher, 4 * PER_PARTITION)
        assert sorted(m.value for m in out) == sorted(b"out-" + m.value for m in setup.received)
        assert {m.message_id.partition for m in out} == {0, 1, 2, 3}
        assert _drain(setup.watcher) == []
        assert setup.backlog(client) == 0
        producer.close()


def test_a_commit_with_its_batches_still_queued_writes_them_first_through_the_proxy(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """On one database a commit carries the producer's queued batches
    (txnq.producer.decided); through a proxy that would not be atomic across
    shards, so the client writes them first and the commit is the usual one:
    the proxy refuses a decided append (TQ030)."""
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, batching_max_delay="10s")
        txn = client.new_transaction(timeout="1m")
        for i, message in enumerate(setup.received):
            producer.send_async(b"out-" + message.value, partition=i % 4, txn=txn)
        txn.commit()
        assert _states(cluster, txn.txn_id) == ["COMMITTED", "COMMITTED"]
        out = _receive(setup.watcher, 4 * PER_PARTITION)
        assert sorted(m.value for m in out) == sorted(b"out-" + m.value for m in setup.received)
        with (
            psycopg.connect(cluster.proxy, autocommit=True) as conn,
            pytest.raises(psycopg.Error) as raised,
        ):
            conn.execute(
                "SELECT * FROM txnq.append_v6(%s, 0, NULL, NULL, NULL, ARRAY['x']::bytea[], "
                "NULL, NULL, NULL, %s, %s, true)",
                (setup.output_id, *txn.txn_id),
            )
        assert raised.value.sqlstate == "TQ030"
        assert _drain(setup.watcher) == []
        producer.close()
        setup.close()


def test_an_aborted_transaction_over_both_shards_leaves_nothing(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        before = setup.backlog(client)
        producer = client.producer(setup.output, transactional_id=topic_name("etl"))
        with pytest.raises(RuntimeError), client.new_transaction() as txn:
            _work(setup, producer, txn)
            raise RuntimeError("the work failed")
        assert txn.state == "ABORTED"
        assert _states(cluster, txn.txn_id) == ["ABORTED", "ABORTED"]
        assert _drain(setup.watcher) == []
        assert setup.backlog(client) == before == 4 * PER_PARTITION
        # The input messages are delivered again, and a new transaction commits them.
        again = _receive(setup.consumer, 4 * PER_PARTITION)
        assert sorted(m.value for m in again) == sorted(m.value for m in setup.received)
        setup.received = again
        with client.new_transaction() as second:
            _work(setup, producer, second)
        assert len(_receive(setup.watcher, 4 * PER_PARTITION)) == 4 * PER_PARTITION
        assert setup.backlog(client) == 0
        producer.close()


def test_a_decision_without_markers_is_finished_by_the_coordinator_worker(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """The client dies after the durable decision (commit(wait=False) writes
    only the decision): read_committed sees nothing on either shard until the
    worker through the proxy writes the markers on every shard."""
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction()
        _work(setup, producer, txn)
        txn.commit(wait=False)
        states = _states(cluster, txn.txn_id)
        home = txn.txn_id.tc_id & 1
        assert states[home] == "COMMITTING" and states[1 - home] == "OPEN", states
        assert _drain(setup.watcher) == []
        with running_coordinator(cluster.proxy):
            out = _receive(setup.watcher, 4 * PER_PARTITION)
            deadline = time.monotonic() + RECEIVE_TIMEOUT
            while _states(cluster, txn.txn_id) != ["COMMITTED", "COMMITTED"]:
                assert time.monotonic() < deadline, _states(cluster, txn.txn_id)
                time.sleep(0.1)
        assert len(out) == 4 * PER_PARTITION
        assert setup.backlog(client) == 0
        producer.close()


def test_a_home_shard_that_crashed_after_the_decision_keeps_it(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """The decision is durable on the home shard before any marker: a crash of
    the home shard right after it loses nothing, and the worker through the
    proxy then commits on every shard."""
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction()
        _work(setup, producer, txn)
        txn.commit(wait=False)
        home = cluster.servers.shards[txn.txn_id.tc_id & 1]
        cluster.servers.pause(home, mode="immediate")  # a crash
        cluster.servers.resume(home)
        assert sorted(s or "" for s in _states(cluster, txn.txn_id)) == ["COMMITTING", "OPEN"]
        with running_coordinator(cluster.proxy):
            deadline = time.monotonic() + 3 * RECEIVE_TIMEOUT
            while _states(cluster, txn.txn_id) != ["COMMITTED", "COMMITTED"]:
                assert time.monotonic() < deadline, _states(cluster, txn.txn_id)
                time.sleep(0.2)
        setup.close()
        producer.close()
    # A new client: the old one's proxy session holds PL/Proxy connections to
    # the crashed server (a client through the proxy does not retry them yet).
    _assert_committed_once(cluster, setup)


def test_a_recovery_that_stopped_after_one_shard_is_finished_once(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """The worker died after the participant's step, before the home shard's:
    the next run does the home shard's part; markers are written once."""
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction()
        _work(setup, producer, txn)
        txn.commit(wait=False)
        home = txn.txn_id.tc_id & 1
        with cluster.proxy_conn() as conn:
            conn.execute(
                "SELECT txnq_cluster.txn_apply_on(%s, %s, %s, true, 'client')",
                (1 - home, txn.txn_id.tc_id, txn.txn_id.seq),
            )
        assert _states(cluster, txn.txn_id)[1 - home] == "COMMITTED"
        with running_coordinator(cluster.proxy):
            _receive(setup.watcher, 4 * PER_PARTITION)
            deadline = time.monotonic() + RECEIVE_TIMEOUT
            while _states(cluster, txn.txn_id) != ["COMMITTED", "COMMITTED"]:
                assert time.monotonic() < deadline
                time.sleep(0.1)
        assert _drain(setup.watcher) == []
        markers = 0
        for shard in range(2):
            with cluster.shard_conn(shard) as conn:
                row = conn.execute(
                    "SELECT count(*), count(marker_offset) FROM txnq.txn_partitions "
                    "WHERE tc_id = %s AND txn_seq = %s",
                    (txn.txn_id.tc_id, txn.txn_id.seq),
                ).fetchone()
            assert row is not None and row[0] == row[1] == 2
            markers += row[1]
        assert markers == 4
        producer.close()


def test_a_prepared_participant_left_behind_gets_the_home_shards_decision(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """A coordinator worker run on the home shard directly finished the home
    shard's part alone: the worker through the proxy finds the other shard's
    prepared mirror once its timeout has passed and commits it there too."""
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction(timeout=2.0)
        _work(setup, producer, txn)
        txn.commit(wait=False)
        home = txn.txn_id.tc_id & 1
        with cluster.shard_conn(home) as conn:
            conn.execute("SELECT txnq.complete_txn_v2(%s, %s)", txn.txn_id)
        states = _states(cluster, txn.txn_id)
        assert states[home] == "COMMITTED" and states[1 - home] == "OPEN", states
        time.sleep(3.2)  # past the original timeout and the grace
        with running_coordinator(cluster.proxy):
            deadline = time.monotonic() + RECEIVE_TIMEOUT
            while _states(cluster, txn.txn_id) != ["COMMITTED", "COMMITTED"]:
                assert time.monotonic() < deadline, _states(cluster, txn.txn_id)
                time.sleep(0.1)
        assert len(_receive(setup.watcher, 4 * PER_PARTITION)) == 4 * PER_PARTITION
        assert setup.backlog(client) == 0
        producer.close()


def test_a_late_write_on_a_prepared_participant_is_refused(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """Once a participant voted for the commit, a write of the transaction that
    arrives there (a request delayed past commit()) is refused, as on one
    server after the decision; the transaction commits without it."""
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction()
        _work(setup, producer, txn)
        other = 1 - (txn.txn_id.tc_id & 1)
        with cluster.proxy_conn() as conn:
            row = conn.execute(
                "SELECT txnq_cluster.txn_prepare_on(%s, %s, %s)", (other, *txn.txn_id)
            ).fetchone()
            assert row == ("prepared",)
            topic = setup.output_id
            late = next(p for p in range(4) if shard_of(cluster.proxy, topic, p) == other)
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(
                    "SELECT * FROM txnq.append_v5(%s, %s, NULL, NULL, NULL, "
                    "ARRAY['late']::bytea[], NULL, NULL, NULL, %s, %s)",
                    (topic, late, *txn.txn_id),
                )
            assert raised.value.sqlstate == "TQ013"
        txn.commit()
        out = _receive(setup.watcher, 4 * PER_PARTITION)
        assert b"late" not in {m.value for m in out}
        assert _drain(setup.watcher) == []
        producer.close()


def test_a_participant_shard_that_crashed_during_the_transaction_forces_an_abort(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction()
        _work(setup, producer, txn)
        participant = cluster.servers.shards[1 - (txn.txn_id.tc_id & 1)]
        cluster.servers.pause(participant, mode="immediate")  # a crash
        cluster.servers.resume(participant)
        with pytest.raises(errors.TransactionAbortedError, match="crash"):
            txn.commit()
        assert _states(cluster, txn.txn_id) == ["ABORTED", "ABORTED"]
        setup.close()
        producer.close()
    # A new client: the old one's consumers failed on the crash, and its proxy
    # session may hold PL/Proxy connections to the crashed server (a client
    # through the proxy does not retry them yet).
    with (
        txnq.Client(cluster.proxy) as fresh,
        fresh.subscribe(setup.output, "after", initial_position="earliest") as watcher,
    ):
        assert _drain(watcher) == []
        assert setup.backlog(fresh) == 4 * PER_PARTITION


def test_a_participant_shard_restarted_cleanly_keeps_the_transaction(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction()
        _work(setup, producer, txn)
        participant = cluster.servers.shards[1 - (txn.txn_id.tc_id & 1)]
        cluster.servers.pause(participant, mode="fast")  # a clean shutdown loses nothing
        cluster.servers.resume(participant)
        txn.commit()
        assert _states(cluster, txn.txn_id) == ["COMMITTED", "COMMITTED"]
        setup.close()
        producer.close()
    _assert_committed_once(cluster, setup)


def test_a_participant_down_at_commit_decides_nothing_and_the_commit_can_be_repeated(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction()
        _work(setup, producer, txn)
        participant = cluster.servers.shards[1 - (txn.txn_id.tc_id & 1)]
        cluster.servers.pause(participant, mode="fast")
        try:
            # Retried for a while (the shard is unreachable), then given up.
            with pytest.raises(errors.ServerUnavailableError):
                txn.commit()
            home = txn.txn_id.tc_id & 1
            with cluster.shard_conn(home) as conn:
                row = conn.execute(
                    "SELECT state FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
                    txn.txn_id,
                ).fetchone()
            assert row == ("OPEN",)  # nothing decided
        finally:
            cluster.servers.resume(participant)
        txn.commit()  # the same commit again, with the shard back
        assert _states(cluster, txn.txn_id) == ["COMMITTED", "COMMITTED"]
        setup.close()
        producer.close()
    _assert_committed_once(cluster, setup)


def test_a_participant_down_after_the_decision_gets_it_from_the_worker(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    """The participant never heard the decision: its partitions' messages stay
    hidden, the home shard's row stays decided and unfinished, and the worker
    commits on both once the shard is back."""
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        txn = client.new_transaction()
        _work(setup, producer, txn)
        txn.commit(wait=False)
        home = txn.txn_id.tc_id & 1
        participant = cluster.servers.shards[1 - home]
        cluster.servers.pause(participant, mode="fast")
        try:
            with (
                cluster.proxy_conn() as conn,
                pytest.raises(psycopg.OperationalError, match="could not be reached"),
            ):
                conn.execute("SELECT txnq.complete_txn_v2(%s, %s)", txn.txn_id)
            with cluster.shard_conn(home) as conn:
                row = conn.execute(
                    "SELECT state FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
                    txn.txn_id,
                ).fetchone()
            assert row == ("COMMITTING",)
        finally:
            cluster.servers.resume(participant)
        assert _states(cluster, txn.txn_id)[1 - home] == "OPEN"
        with running_coordinator(cluster.proxy):
            deadline = time.monotonic() + 3 * RECEIVE_TIMEOUT
            while _states(cluster, txn.txn_id) != ["COMMITTED", "COMMITTED"]:
                assert time.monotonic() < deadline, _states(cluster, txn.txn_id)
                time.sleep(0.2)
        setup.close()
        producer.close()
    _assert_committed_once(cluster, setup)


def test_a_timed_out_transaction_aborts_on_every_shard(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        producer = client.producer(setup.output, name="plain")
        late = client.new_transaction(timeout=1.0)
        _work(setup, producer, late)
        time.sleep(1.2)
        # A commit past the timeout decides an abort (timeout) on every shard.
        with pytest.raises(errors.TransactionTimedOutError):
            late.commit()
        assert _states(cluster, late.txn_id) == ["ABORTED", "ABORTED"]

        # A client that vanished: each shard's scheduler aborts its own row
        # (the timeout job, run here on each shard), the worker through the
        # proxy finishes the transaction on every shard.
        setup.received = _receive(setup.consumer, 4 * PER_PARTITION)
        gone = client.new_transaction(timeout=1.0)
        _work(setup, producer, gone)
        time.sleep(1.2)
        for shard in range(2):
            with cluster.shard_conn(shard) as conn:
                conn.execute("SELECT * FROM txnq.abort_timed_out_v2(1000)")
        with running_coordinator(cluster.proxy):
            deadline = time.monotonic() + RECEIVE_TIMEOUT
            while _states(cluster, gone.txn_id) != ["ABORTED", "ABORTED"]:
                assert time.monotonic() < deadline, _states(cluster, gone.txn_id)
                time.sleep(0.1)
        assert _drain(setup.watcher) == []
        assert setup.backlog(client) == 4 * PER_PARTITION
        producer.close()


def test_a_fenced_transactional_producer_cannot_commit_across_shards(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    with txnq.Client(cluster.proxy) as client:
        setup = Setup(client, cluster, topic_name)
        transactional_id = topic_name("fenced")
        old = client.producer(setup.output, transactional_id=transactional_id)
        txn = client.new_transaction()
        _work(setup, old, txn)
        new = client.producer(setup.output, transactional_id=transactional_id)
        with pytest.raises(errors.ProducerFencedError):
            txn.commit()
        with running_coordinator(cluster.proxy):
            deadline = time.monotonic() + RECEIVE_TIMEOUT
            while _states(cluster, txn.txn_id) != ["ABORTED", "ABORTED"]:
                assert time.monotonic() < deadline, _states(cluster, txn.txn_id)
                time.sleep(0.1)
        assert _drain(setup.watcher) == []
        new.close()
        old.close()


def test_bad_input_and_what_stays_refused(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    with cluster.proxy_conn() as conn:
        for statement, sqlstate in (
            ("SELECT * FROM txnq.end_txn_v3(NULL, 1, true)", "TQ005"),
            ("SELECT * FROM txnq.end_txn_v3(0, 999999999, true)", "TQ014"),
            ("SELECT * FROM txnq.end_txn_v3(0, 1, NULL)", "TQ005"),
            ("SELECT txnq.complete_txn_v2(0, 999999999)", "TQ014"),
            ("SELECT * FROM txnq.open_txn_v3(0, -1, true)", "TQ005"),
            ("SELECT * FROM txnq.open_txn_v3(70000, 60, true)", "TQ005"),
        ):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(statement)
            assert raised.value.sqlstate == sqlstate, statement
    with txnq.Client(cluster.proxy) as client:
        txn = client.new_transaction()
        home = txn.txn_id.tc_id & 1
        # A participant never commits what it did not prepare (TQ031), and
        # the shard functions check their arguments.
        tc, seq = txn.txn_id
        with cluster.shard_conn(1 - home) as shard:
            for statement, sqlstate in (
                (f"SELECT txnq.cluster_txn_apply_v1({tc}, {seq}, true, 'client')", "TQ031"),
                (f"SELECT txnq.cluster_txn_apply_v1({tc}, {seq}, true, 'bad')", "TQ005"),
                ("SELECT txnq.cluster_txn_prepare_v1(NULL, 1)", "TQ005"),
                ("SELECT txnq.cluster_txn_mirror_v1(0, 1, 0, now())", "TQ005"),
                ("SELECT txnq.cluster_end_txn_v1(0, 1, true, 'client', false, 'x')", "TQ005"),
            ):
                with pytest.raises(psycopg.Error) as raised:
                    shard.execute(statement)
                assert raised.value.sqlstate == sqlstate, statement
        txn.abort()
        assert _states(cluster, txn.txn_id) == ["ABORTED", "ABORTED"]

        # Application transactions: the partitions and the application's
        # tables must be in one database.
        name = topic_name("attached")
        client.admin.create_topic(name, partitions=2)
        with (
            client.producer(name) as producer,
            psycopg.connect(cluster.proxy) as conn,
            pytest.raises(errors.NotSupportedThroughProxyError, match="one database"),
            conn.transaction(),
            txnq.attach(conn) as attached,
        ):
            producer.send_async(b"x", txn=attached)


def test_the_asyncio_client_commits_a_transaction_over_both_shards(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("aio-txn")

    async def run() -> tuple[TxnId, list[bytes]]:
        async with txnq.aio.Client(cluster.proxy) as client:
            await client.admin.create_topic(name, partitions=4)
            watcher = await client.subscribe(name, "w", initial_position="earliest")
            async with await client.producer(name, transactional_id=topic_name("aio")) as producer:
                txn = await client.new_transaction()
                for i in range(8):
                    await producer.send_async(f"a{i}".encode(), partition=i % 4, txn=txn)
                await producer.flush()
                assert await watcher.receive(timeout=QUIET) is None
                await txn.commit()
            received = []
            for _ in range(8):
                message = await watcher.receive(timeout=RECEIVE_TIMEOUT)
                assert message is not None
                received.append(message.value)
            await watcher.close()
            return txn.txn_id, received

    txn_id, received = asyncio.run(run())
    assert sorted(received) == sorted(f"a{i}".encode() for i in range(8))
    assert _states(cluster, txn_id) == ["COMMITTED", "COMMITTED"]
