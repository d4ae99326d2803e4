"""txnq.end_and_complete_txn_v1 (revision 0029): a client's commit() and
abort() in one function. It must leave exactly what end_txn_v3 followed by
complete_txn_v2 leave (the split path the coordinator workers and
commit(wait=False) keep): the same states, log rows, markers, aborted ranges,
cursors and pending acks, on every kind of subscription, and it must finish
what a worker started."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import txnq
from tests.helpers import receive_messages, sql, sql_value

FUSED = "SELECT state, reason, final_state FROM txnq.end_and_complete_txn_v1(%s, %s, %s)"
SPLIT = (
    "SELECT e.state, e.reason, txnq.complete_txn_v2(%s, %s) AS final_state"
    " FROM txnq.end_txn_v3(%s, %s, %s, 'client', false) AS e"
)


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as c:
        yield c


def _work(client: txnq.Client, topic: str, subscription_type: str) -> txnq.Transaction:
    """A transaction that produced to two partitions of ``topic`` and acknowledged
    two messages of its input topic (``topic``-in) in a ``subscription_type``
    subscription: open, not ended."""
    client.admin.create_topic(topic, partitions=2)
    client.admin.create_topic(f"{topic}-in", partitions=1)
    with client.producer(f"{topic}-in") as source:
        for i in range(3):
            source.send(f"in-{i}".encode())
    consumer = client.subscribe(
        f"{topic}-in", "copier", subscription_type=subscription_type, initial_position="earliest"
    )
    received = receive_messages(consumer, 3)
    txn = client.new_transaction()
    with client.producer(topic) as producer:
        producer.send(b"a", partition=0, txn=txn)
        producer.send(b"b", partition=1, txn=txn)
    consumer.acknowledge(received[:2], txn=txn)
    return txn


def _outcome(dsn: str, topic: str, tc: int, seq: int) -> dict[str, Any]:
    """What the end of the transaction left, named so two topics compare."""
    return {
        "log": [r[0] for r in sql(
            dsn, "SELECT state FROM txnq.txn_log WHERE tc_id = %s AND txn_seq = %s ORDER BY at",
            (tc, seq))],
        "state": sql(dsn, "SELECT state, reason, decided_at IS NOT NULL, completed_at IS NOT NULL"
                     " FROM txnq.transactions WHERE tc_id = %s AND txn_seq = %s", (tc, seq)),
        "markers": sql(dsn, "SELECT e.partition, e.marker FROM txnq.entries e JOIN txnq.topics t"
                       " ON t.topic_id = e.topic_id WHERE t.name = %s AND e.marker > 0"
                       " ORDER BY e.partition", (topic,)),
        "unmarked": sql_value(dsn, "SELECT count(*) FROM txnq.txn_partitions WHERE tc_id = %s"
                              " AND txn_seq = %s AND marker_offset IS NULL", (tc, seq)),
        "aborted": sql(dsn, "SELECT a.partition, a.first_offset, a.marker_offset"
                       " FROM txnq.aborted_txns a JOIN txnq.topics t ON t.topic_id = a.topic_id"
                       " WHERE t.name = %s ORDER BY a.partition", (topic,)),
        "heads": sql(dsn, "SELECT h.partition, h.next_offset, h.max_read_offset, h.ongoing_txns"
                     " FROM txnq.partitions h JOIN txnq.topics t ON t.topic_id = h.topic_id"
                     " WHERE t.name = %s ORDER BY h.partition", (topic,)),
        "pending_acks": sql_value(dsn, "SELECT count(*) FROM txnq.pending_acks WHERE tc_id = %s"
                                  " AND txn_seq = %s", (tc, seq)),
        "subscriptions_open": sql_value(dsn, "SELECT count(*) FROM txnq.txn_subscriptions"
                                        " WHERE tc_id = %s AND txn_seq = %s AND NOT done",
                                        (tc, seq)),
        "ongoing": sql_value(dsn, "SELECT count(*) FROM txnq.txn_buffer_ongoing WHERE tc_id = %s"
                             " AND txn_seq = %s", (tc, seq)),
        "backlog": sql_value(dsn, "SELECT backlog_messages FROM txnq.subscription_status"
                             " WHERE topic = %s", (f"{topic}-in",)),
    }  # fmt: skip


@pytest.mark.parametrize("subscription_type", ["exclusive", "shared"])
@pytest.mark.parametrize("commit", [True, False])
def test_one_call_leaves_what_the_split_decision_and_marker_phase_leave(
    dsn: str, client: txnq.Client, subscription_type: str, commit: bool
) -> None:
    fused = _work(client, "fused", subscription_type)
    split = _work(client, "split", subscription_type)
    with psycopg.connect(dsn, autocommit=True) as conn:
        tc, seq = fused.txn_id.tc_id, fused.txn_id.seq
        row = conn.execute(FUSED, (tc, seq, commit)).fetchone()
        stc, sseq = split.txn_id.tc_id, split.txn_id.seq
        split_row = conn.execute(SPLIT, (stc, sseq, stc, sseq, commit)).fetchone()
    decided = "COMMITTING" if commit else "ABORTING"
    final = "COMMITTED" if commit else "ABORTED"
    assert row == split_row == (decided, "client", final)
    fused_outcome = _outcome(dsn, "fused", tc, seq)
    split_outcome = _outcome(dsn, "split", stc, sseq)
    assert fused_outcome == split_outcome
    assert fused_outcome["log"] == ["OPEN", decided, final]
    assert [m for _, m in fused_outcome["markers"]] == ([1, 1] if commit else [2, 2])
    assert fused_outcome["unmarked"] == fused_outcome["pending_acks"] == 0
    assert fused_outcome["backlog"] == (1 if commit else 3)


def test_it_finishes_a_transaction_a_worker_decided_and_partly_marked(
    dsn: str, client: txnq.Client
) -> None:
    txn = _work(client, "halfway", "exclusive")
    tc, seq = txn.txn_id.tc_id, txn.txn_id.seq
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT * FROM txnq.end_txn_v3(%s, %s, true, 'client', true)", (tc, seq))
        topic_id = sql_value(dsn, "SELECT topic_id FROM txnq.topics WHERE name = 'halfway'")
        conn.execute("SELECT txnq.complete_txn_partition_v2(%s, %s, %s, 0)", (tc, seq, topic_id))
        # The client's commit (a retry, or the first call after wait=False).
        row = conn.execute(FUSED, (tc, seq, True)).fetchone()
        again = conn.execute(FUSED, (tc, seq, False)).fetchone()
    assert row == ("COMMITTING", "client", "COMMITTED")
    assert again == ("COMMITTED", "client", "COMMITTED")  # decided: an abort changes nothing
    outcome = _outcome(dsn, "halfway", tc, seq)
    assert outcome["log"] == ["OPEN", "COMMITTING", "COMMITTED"]  # one decision row, one final
    assert outcome["markers"] == [(0, 1), (1, 1)]  # each partition marked once
    assert outcome["unmarked"] == outcome["pending_acks"] == outcome["subscriptions_open"] == 0


def test_a_commit_past_the_timeout_aborts(dsn: str, client: txnq.Client) -> None:
    txn = _work(client, "late", "exclusive")
    tc, seq = txn.txn_id.tc_id, txn.txn_id.seq
    sql(dsn, "UPDATE txnq.transactions SET timeout_at = now() - interval '1 second'"
        " WHERE tc_id = %s AND txn_seq = %s", (tc, seq))  # fmt: skip
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(FUSED, (tc, seq, True)).fetchone()
    assert row == ("ABORTING", "timeout", "ABORTED")
    outcome = _outcome(dsn, "late", tc, seq)
    assert outcome["log"] == ["OPEN", "ABORTING", "ABORTED"]
    assert [p for p, _, _ in outcome["aborted"]] == [0, 1]
    assert outcome["backlog"] == 3


@pytest.mark.parametrize(
    ("args", "sqlstate", "says"),
    [
        ((None, 1, True, "client"), "TQ005", "must not be NULL"),
        ((0, None, True, "client"), "TQ005", "must not be NULL"),
        ((0, 1, None, "client"), "TQ005", "must not be NULL"),
        ((0, 1, True, None), "TQ005", "reason must be client or admin"),
        ((0, 1, True, "timeout"), "TQ005", "reason must be client or admin"),
        ((0, 987654, True, "client"), "TQ014", "does not exist"),
    ],
)
def test_bad_input_is_refused_and_decides_nothing(
    dsn: str, args: tuple[Any, ...], sqlstate: str, says: str
) -> None:
    before = sql_value(dsn, "SELECT count(*) FROM txnq.txn_log")
    with psycopg.connect(dsn, autocommit=True) as conn, pytest.raises(psycopg.Error) as caught:
        conn.execute("SELECT * FROM txnq.end_and_complete_txn_v1(%s, %s, %s, %s)", args)
    assert caught.value.sqlstate == sqlstate
    assert says in str(caught.value)
    assert sql_value(dsn, "SELECT count(*) FROM txnq.txn_log") == before
