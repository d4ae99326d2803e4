"""Transaction inspection through the proxy (sql/proxy/txn_inspection.sql,
docs/cluster.md "Inspecting transactions"): a transaction over both shards
is one row, its home shard's, with its partitions and subscriptions added up
over the shards (txn_describe_v1, txn_list_v1, the view transaction_status);
its partitions, subscriptions and history come from every shard; hanging
transactions from each shard; `txnq txn list / describe / abort` work with
TXNQ_DSN at the proxy, and an abort through the proxy aborts on every shard."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

import txnq
from tests.cluster.conftest import Cluster
from txnq import errors
from txnq.cli.app import app
from txnq.cluster.setup import shard_of
from txnq.transaction import TxnId

RECEIVE_TIMEOUT = 10.0
#: The columns of a transaction's row that do not move with time.
FIXED = (
    "id, tc_id, txn_seq, state, reason, opened_at, timeout_at, decided_at, completed_at, "
    "timeout_seconds, transactional_id, producer_epoch"
)
COUNTS = "partitions, partitions_marked, subscriptions, subscriptions_done"


@dataclass
class Work:
    """A transaction of a transactional producer over both shards: one message
    to each of a 4-partition topic's partitions (two on each shard) and an
    individual ack of one message on each partition of another topic."""

    client: txnq.Client
    txn: Any
    producer: Any
    output: str
    input: str

    @property
    def txn_id(self) -> TxnId:
        return self.txn.txn_id  # type: ignore[no-any-return]


@pytest.fixture
def work(cluster: Cluster, topic_name: Callable[[str], str]) -> Iterator[Work]:
    with txnq.Client(cluster.proxy) as client:
        source, sink = topic_name("insp-in"), topic_name("insp-out")
        topic = client.admin.create_topic(source, partitions=4)
        client.admin.create_topic(sink, partitions=4)
        assert {shard_of(cluster.proxy, topic.topic_id, p) for p in range(4)} == {0, 1}
        consumer = client.subscribe(source, "etl", initial_position="earliest")
        with client.producer(source, name="feeder") as feeder:
            for p in range(4):
                feeder.send(b"in", partition=p)
        received = []
        for _ in range(4):
            message = consumer.receive(timeout=RECEIVE_TIMEOUT)
            assert message is not None
            received.append(message)
        producer = client.producer(sink, transactional_id=topic_name("insp"))
        txn = client.new_transaction(timeout="5m")
        for p in range(4):
            producer.send(b"out", partition=p, txn=txn)
        consumer.acknowledge(received, txn=txn)
        yield Work(client, txn, producer, sink, source)
        producer.close()
        consumer.close()


def _on_shards(
    cluster: Cluster, query: str, params: tuple[Any, ...]
) -> list[list[tuple[Any, ...]]]:
    rows = []
    for shard in range(len(cluster.shards)):
        with cluster.shard_conn(shard) as conn:
            rows.append([tuple(r) for r in conn.execute(query, params)])
    return rows


def _on_proxy(cluster: Cluster, query: str, params: tuple[Any, ...]) -> list[tuple[Any, ...]]:
    with cluster.proxy_conn() as conn:
        return [tuple(r) for r in conn.execute(query, params)]


def _described(cluster: Cluster, txn_id: TxnId) -> None:
    """The proxy's row of the transaction is the home shard's, its counts
    the sums of every shard's; the view says the same."""
    key = (txn_id.tc_id, txn_id.seq)
    home = txn_id.tc_id & 1
    with cluster.shard_conn(home) as conn:  # a prepared mirror's timeout_at is infinity
        fixed = [
            tuple(r) for r in conn.execute(f"SELECT {FIXED} FROM txnq.txn_describe_v1(%s, %s)", key)
        ]
    counts = _on_shards(cluster, f"SELECT {COUNTS} FROM txnq.txn_describe_v1(%s, %s)", key)
    assert all(len(rows) == 1 for rows in counts)  # home row and mirror
    summed = tuple(sum(rows[0][i] for rows in counts) for i in range(4))
    expected = [fixed[0] + summed]
    query = f"SELECT {FIXED}, {COUNTS} FROM txnq.txn_describe_v1(%s, %s)"
    assert _on_proxy(cluster, query, key) == expected
    view = (
        f"SELECT {FIXED}, {COUNTS} FROM txnq.transaction_status WHERE tc_id = %s AND txn_seq = %s"
    )
    assert _on_proxy(cluster, view, key) == expected


def test_a_transaction_over_both_shards_is_its_home_row_with_the_counts_added_up(
    cluster: Cluster, work: Work
) -> None:
    txn_id = work.txn_id
    home = txn_id.tc_id & 1
    _described(cluster, txn_id)
    described = work.client.admin.describe_transaction(txn_id)
    info = described.transaction
    assert (info.state, info.partitions, info.subscriptions) == ("OPEN", 4, 4)
    assert (info.partitions_marked, info.subscriptions_done) == (0, 0)
    assert info.transactional_id is not None and info.transactional_id.startswith("insp")
    # Every shard's partitions and subscriptions, each from its owner.
    assert [(p.topic, p.partition) for p in described.partitions] == [
        (work.output, p) for p in range(4)
    ]
    assert [
        (s.topic, s.partition, s.subscription, s.pending_acks) for s in described.subscriptions
    ] == [(work.input, p, "etl", 1) for p in range(4)]
    key = (txn_id.tc_id, txn_id.seq)
    for name in ("txn_describe_partitions_v1", "txn_describe_subscriptions_v1"):
        per_shard = _on_shards(cluster, f"SELECT * FROM txnq.{name}(%s, %s)", key)
        assert all(len(rows) == 2 for rows in per_shard), name  # two partitions each
        union = sorted(per_shard[0] + per_shard[1], key=repr)
        assert (
            sorted(_on_proxy(cluster, f"SELECT * FROM txnq.{name}(%s, %s)", key), key=repr) == union
        )

    work.txn.commit()
    _described(cluster, txn_id)
    info = work.client.admin.get_transaction(txn_id)
    assert (info.state, info.reason) == ("COMMITTED", "client")
    assert (info.partitions_marked, info.subscriptions_done) == (4, 4)
    described = work.client.admin.describe_transaction(txn_id)
    assert all(p.marker_offset is not None for p in described.partitions)
    # The history: the home shard's lines as they are, the participant's marked.
    history = described.history
    home_lines = [
        (h.state, h.reason, h.detail)
        for h in history
        if h.detail is None or not h.detail.startswith("shard ")
    ]
    assert home_lines == [
        (s, r, d)
        for s, r, d in _on_shards(
            cluster, "SELECT state, reason, detail FROM txnq.txn_history_v1(%s, %s)", key
        )[home]
    ]
    participant = [h.detail for h in history if h.detail and h.detail.startswith("shard ")]
    assert participant and all(d.startswith(f"shard {1 - home} (participant)") for d in participant)
    assert any("prepared" in d for d in participant)
    assert [h.at for h in history] == sorted(h.at for h in history)
    assert history[-1].state == "COMMITTED"


def test_list_shows_each_transaction_once_newest_first_filtered_after_merging(
    cluster: Cluster, work: Work
) -> None:
    admin = work.client.admin
    first = work.txn_id
    second = work.client.new_transaction()
    work.producer.send(b"two", partition=1, txn=second)
    listed = admin.list_transactions(limit=100_000)
    ids = [t.txn_id for t in listed]
    assert ids.count(first) == 1 and ids.count(second.txn_id) == 1
    assert ids.index(second.txn_id) < ids.index(first)  # newest first
    assert [t.opened_at for t in listed] == sorted((t.opened_at for t in listed), reverse=True)
    mine = {t.txn_id: t for t in listed}
    assert (mine[first].partitions, mine[first].subscriptions) == (4, 4)
    assert (mine[second.txn_id].partitions, mine[second.txn_id].subscriptions) == (1, 0)
    # The limit applies to the merged list: the newest one of all shards.
    assert [t.txn_id for t in admin.list_transactions(limit=1)] == [second.txn_id]
    # The state filter reads the home row: after the commit the transaction is
    # COMMITTED (its mirror too), no longer OPEN.
    work.txn.commit()
    committed = [t.txn_id for t in admin.list_transactions(state="COMMITTED", limit=100_000)]
    assert first in committed and second.txn_id not in committed
    still_open = [t.txn_id for t in admin.list_transactions(state="open", limit=100_000)]
    assert second.txn_id in still_open and first not in still_open
    assert admin.list_transactions(older_than="1h") == [] or all(
        t.age_seconds >= 3600 for t in admin.list_transactions(older_than="1h")
    )
    # The view holds each transaction once, and lists what txn_list_v1 lists.
    every = _on_proxy(cluster, "SELECT id FROM txnq.transaction_status", ())
    assert len(every) == len({row[0] for row in every})
    assert {row[0] for row in every} >= {str(first), str(second.txn_id)}
    second.abort()


def test_an_abort_through_the_proxy_aborts_on_every_shard(cluster: Cluster, work: Work) -> None:
    txn_id = work.txn_id
    info = work.client.admin.abort_transaction(txn_id)
    assert (info.state, info.reason) == ("ABORTED", "admin")
    assert (info.partitions, info.partitions_marked) == (4, 4)
    assert (info.subscriptions, info.subscriptions_done) == (4, 4)
    key = (txn_id.tc_id, txn_id.seq)
    per_shard = _on_shards(
        cluster,
        "SELECT t.state, t.reason, (SELECT count(*) FROM txnq.txn_partitions p "
        "WHERE p.tc_id = t.tc_id AND p.txn_seq = t.txn_seq AND p.marker_offset IS NOT NULL), "
        "(SELECT count(*) FROM txnq.pending_acks a "
        "WHERE a.tc_id = t.tc_id AND a.txn_seq = t.txn_seq) "
        "FROM txnq.transactions t WHERE t.tc_id = %s AND t.txn_seq = %s",
        key,
    )
    assert per_shard == [[("ABORTED", "admin", 2, 0)], [("ABORTED", "admin", 2, 0)]]
    with pytest.raises(errors.TransactionEndedError):
        work.txn.commit()
    # Nothing of it is readable; the acks were released (the backlog is back).
    subs = {s.name: s for s in work.client.admin.list_subscriptions(work.input)}
    assert subs["etl"].backlog_entries == 4
    # A committed transaction cannot be aborted.
    done = work.client.new_transaction()
    work.producer.send(b"kept", partition=2, txn=done)
    done.commit()
    with pytest.raises(errors.TransactionError, match="COMMITTED"):
        work.client.admin.abort_transaction(done.txn_id)


def test_find_hanging_unions_the_shards_rows(cluster: Cluster, work: Work) -> None:
    client = work.client
    late = client.new_transaction(timeout=1.0)
    for p in range(4):
        work.producer.send(b"late", partition=p, txn=late)
    idle = client.new_transaction(timeout=1.0)  # writes nothing
    time.sleep(1.3)  # no scheduler runs here: both stay OPEN past their timeout
    hanging = client.admin.find_hanging_transactions(grace=0)
    mine = sorted((h.topic, h.partition) for h in hanging if h.id == str(late.txn_id))
    assert mine == [(work.output, p) for p in range(4)]  # two partitions from each shard
    idle_rows = [h for h in hanging if h.id == str(idle.txn_id)]
    assert len(idle_rows) == 1 and idle_rows[0].partition is None  # once, not per shard
    assert str(work.txn_id) not in {h.id for h in hanging}  # in time
    # Each shard's own rows, unioned.
    per_shard = _on_shards(
        cluster,
        "SELECT topic, partition FROM txnq.txn_find_hanging_v1(0) WHERE id = %s",
        (str(late.txn_id),),
    )
    assert all(len(rows) == 2 for rows in per_shard)
    # Oldest first (no transaction row, no age: first, as on one server).
    ages = [float("inf") if h.age_seconds is None else h.age_seconds for h in hanging]
    assert ages == sorted(ages, reverse=True)
    for txn in (late, idle):
        client.admin.abort_transaction(txn.txn_id)
    again = client.admin.find_hanging_transactions(grace=0)
    assert not {str(late.txn_id), str(idle.txn_id)} & {h.id for h in again}


def test_the_command_line_lists_describes_and_aborts_through_the_proxy(
    cluster: Cluster, work: Work
) -> None:
    runner = CliRunner(env={"COLUMNS": "160", "TXNQ_DSN": cluster.proxy, "TXNQ_CONFIG": None})

    def ok(*args: str) -> str:
        result = runner.invoke(app, list(args))
        assert result.exit_code == 0, (args, result.output)
        return result.stdout

    txn_id = str(work.txn_id)
    listed = json.loads(ok("txn", "list", "--state", "OPEN", "--json"))
    rows = [t for t in listed if t["id"] == txn_id]
    assert len(rows) == 1 and (rows[0]["partitions"], rows[0]["subscriptions"]) == (4, 4)
    described = json.loads(ok("txn", "describe", txn_id, "--json"))
    assert described["transaction"]["id"] == txn_id
    assert len(described["partitions"]) == 4 and len(described["subscriptions"]) == 4
    assert any("participant" in (h["detail"] or "") for h in described["history"])
    table = ok("txn", "describe", txn_id)
    assert txn_id in table and work.output in table
    assert txn_id in ok("txn", "list")
    aborted = json.loads(ok("txn", "abort", txn_id, "--json"))
    assert (aborted["state"], aborted["reason"]) == ("ABORTED", "admin")
    states = _on_shards(
        cluster,
        "SELECT state FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s",
        (work.txn_id.tc_id, work.txn_id.seq),
    )
    assert states == [[("ABORTED",)], [("ABORTED",)]]
    missing = runner.invoke(app, ["txn", "describe", "0:999999999"])
    assert missing.exit_code == 1 and "does not exist" in missing.output


def test_bad_input_through_the_proxy(cluster: Cluster) -> None:
    with cluster.proxy_conn() as conn:
        for statement in (
            "SELECT * FROM txnq.txn_list_v1('BAD', 0, 10)",
            "SELECT * FROM txnq.txn_list_v1(NULL, 0, 0)",
            "SELECT * FROM txnq.txn_list_v1(NULL, 0, -1)",
            "SELECT * FROM txnq.txn_list_v1(NULL, 0, NULL)",
            "SELECT * FROM txnq.txn_list_v1(NULL, -1, 10)",
            "SELECT * FROM txnq.txn_list_v1(NULL, 'NaN', 10)",
            "SELECT * FROM txnq.txn_find_hanging_v1(-1)",
            "SELECT * FROM txnq.txn_find_hanging_v1(NULL)",
            "SELECT * FROM txnq.txn_find_hanging_v1('Infinity')",
        ):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute(statement)
            assert raised.value.sqlstate == "TQ005", statement
        # Unknown or NULL ids describe nothing, as on one server.
        for args in ("NULL, 1", "0, NULL", "0, 999999999", "-1, 1"):
            for name in (
                "txn_describe_v1",
                "txn_describe_partitions_v1",
                "txn_describe_subscriptions_v1",
                "txn_history_v1",
            ):
                assert conn.execute(f"SELECT * FROM txnq.{name}({args})").fetchall() == [], name
    with txnq.Client(cluster.proxy) as client:
        with pytest.raises(errors.TransactionNotFoundError):
            client.admin.describe_transaction("0:999999999")
        with pytest.raises(errors.TransactionNotFoundError):
            client.admin.abort_transaction("1:999999999")
        with pytest.raises(errors.InvalidArgumentError):
            client.admin.list_transactions(state="LATER")
        with pytest.raises(errors.InvalidArgumentError):
            client.admin.list_transactions(limit=0)
        with pytest.raises(errors.InvalidArgumentError):
            client.admin.find_hanging_transactions(grace=-1)
        with pytest.raises(errors.InvalidArgumentError):
            client.admin.describe_transaction("not an id")
