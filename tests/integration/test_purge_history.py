"""The history purge (txnq.purge_history_v1, lifecycle.purge_history, the
scheduler's purge_history job): what txnq keeps only as history is deleted
once older than its retention, and nothing a reader, GC or a sink still
needs (issue 20: txn_log and DELETED ledgers grew forever)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import psycopg
import pytest

import txnq
from tests.helpers import receive_messages, sql, sql_value
from txnq import errors, lifecycle
from txnq.database.migrate import upgrade
from txnq.settings import load_settings

FAST = {"poll_interval": 0.05}


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    # Ledgers of five entries, rolled at once: retention deletes them in steps.
    upgrade(dsn, settings=load_settings(ledger_max_entries=5, ledger_min_rollover_seconds=0))
    with txnq.Client(dsn) as client:
        yield client


def count(dsn: str, table: str, where: str = "true") -> int:
    return int(sql_value(dsn, f"SELECT count(*) FROM txnq.{table} WHERE {where}"))


def finished_transactions(client: txnq.Client) -> None:
    """One committed and one aborted transaction on topic 'orders'."""
    producer = client.producer("orders")
    with client.new_transaction() as txn:
        producer.send(b"kept", txn=txn)
    txn = client.new_transaction()
    producer.send(b"dropped", txn=txn)
    txn.abort()
    producer.close()


def test_finished_transactions_go_whole_after_their_retention_and_open_ones_stay(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("orders", partitions=2)
    finished_transactions(client)
    still_open = client.new_transaction()
    with client.producer("orders") as producer:
        producer.send(b"pending", txn=still_open)
    assert count(dsn, "transactions") == 3
    assert count(dsn, "txn_log") > 0

    kept = lifecycle.purge_history(client, finished_txn_seconds=3600, history_seconds=3600)
    assert not [p for p in kept.items if getattr(p, "relation", "") == "transactions"]
    assert count(dsn, "transactions") == 3

    time.sleep(1.1)
    report = lifecycle.purge_history(client, finished_txn_seconds=1, history_seconds=3600)

    assert {p.relation: p.rows for p in report.items if isinstance(p, lifecycle.Purged)}[
        "transactions"
    ] == 2
    assert count(dsn, "transactions") == 1
    open_row = "tc_id = %s AND txn_seq = %s" % still_open.txn_id  # noqa: UP031 - integers
    assert count(dsn, "transactions", open_row) == 1
    assert count(dsn, "txn_partitions", f"NOT ({open_row})") == 0
    # Their log rows fell in the default partition (no partition was made
    # for the current day: it began before this database existed) and went
    # with them; the open transaction's stay.
    assert count(dsn, "txn_log", f"NOT ({open_row})") == 0
    assert count(dsn, "txn_log", open_row) >= 1
    still_open.commit()
    # The committed message is still read; the aborted one is still hidden
    # (its range stays in aborted_txns while its entries exist).
    reader = client.subscribe("orders", "r", initial_position="earliest", **FAST)
    values = sorted(m.value for m in receive_messages(reader, 2))
    assert values == [b"kept", b"pending"]
    assert count(dsn, "aborted_txns") == 1
    assert sql_value(dsn, "SELECT count(*) FROM txnq.gc_runs WHERE job = 'purge'") >= 1


def test_history_goes_after_its_retention_but_a_ledger_row_outlives_its_entries(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("orders", partitions=1)
    reader = client.subscribe("orders", "r", initial_position="earliest", **FAST)
    with client.producer("orders") as producer:
        for i in range(12):
            producer.send(b"m%d" % i)
    received = receive_messages(reader, 12)
    reader.acknowledge_cumulative(received[-1])
    assert lifecycle.apply_retention(client).items
    deleted = count(dsn, "ledgers", "state = 'DELETED'")
    assert deleted >= 2
    # An expired consumer with no claim, and a GC run to remember.
    sql(dsn, "UPDATE txnq.consumers SET lease_expires_at = now() - interval '2 hours'")
    lifecycle.collect_entry_logs(client)
    sql(dsn, "UPDATE txnq.gc_runs SET finished_at = now() - interval '2 hours'")
    sql(
        dsn,
        "UPDATE txnq.ledgers SET deleted_at = now() - interval '2 hours' WHERE state = 'DELETED'",
    )

    report = lifecycle.purge_history(client, finished_txn_seconds=3600, history_seconds=3600)

    purged = {p.relation: p.rows for p in report.items if isinstance(p, lifecycle.Purged)}
    # The entries of the deleted ledgers are still in the active entry log:
    # their rows stay, or GC would count those entries live forever.
    assert "ledgers" not in purged
    assert count(dsn, "ledgers", "state = 'DELETED'") == deleted
    assert purged["consumers"] == 1 and count(dsn, "consumers") == 0
    assert purged["gc_runs"] >= 1

    # Once GC compacted the log that held them (the live entries move to a
    # new log, the old one is dropped), the rows go.
    assert sql_value(dsn, "SELECT txnq.roll_entry_log_v2(true)") == 2
    sql(
        dsn,
        "UPDATE txnq.entry_logs SET sealed_at = now() - interval '1 hour' WHERE entry_log_id = 1",
    )
    lifecycle.collect_entry_logs(client, compaction="major")
    assert sql_value(dsn, "SELECT state FROM txnq.entry_logs WHERE entry_log_id = 1") == "DROPPED"
    sql(
        dsn,
        "UPDATE txnq.entry_logs SET dropped_at = now() - interval '2 hours' "
        "WHERE state = 'DROPPED'",
    )
    report = lifecycle.purge_history(client, finished_txn_seconds=3600, history_seconds=3600)
    purged = {p.relation: p.rows for p in report.items if isinstance(p, lifecycle.Purged)}
    assert purged["ledgers"] == deleted
    assert purged["entry_logs"] == 1
    assert count(dsn, "ledgers", "state = 'DELETED'") == 0
    assert count(dsn, "ledgers") >= 1  # the open ledger


def test_purge_history_checks_its_arguments(dsn: str, client: txnq.Client) -> None:
    bad_arguments = (
        {"finished_txn_seconds": 0},
        {"history_seconds": -1},
        {"producer_seconds": 0},
        {"batch_rows": 0},
    )
    for bad in bad_arguments:
        with pytest.raises(errors.InvalidArgumentError):
            lifecycle.purge_history(client, **bad)  # type: ignore[arg-type]
    with psycopg.connect(dsn, autocommit=True) as conn:
        for args in ((None, 1, 1, 10), (1, 0, 1, 10), (1, 1, 0, 10), (1, 1, 1, 0), (1, 2e9, 1, 9)):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute("SELECT * FROM txnq.purge_history_v1(%s, %s, %s, %s)", args)
            assert raised.value.sqlstate == "TQ005"


def test_an_idle_producer_is_purged_and_registers_again_at_its_next_send(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("orders", partitions=2)
    reader = client.subscribe("orders", "r", initial_position="earliest", **FAST)
    idle = client.producer("orders", name="idle")
    idle.send(b"before", partition=0)
    with client.producer("orders", name="busy") as busy:
        busy.send(b"busy-old", partition=1)
    sql(dsn, "UPDATE txnq.producers SET last_seen_at = now() - interval '2 hours'")
    with client.producer("orders", name="busy2") as busy2:
        busy2.send(b"busy-new", partition=1)
    sql(dsn, "UPDATE txnq.producers SET last_seen_at = now() - interval '2 hours'")
    # busy2's last entry is new: it stays; the other two wrote nothing since.
    time.sleep(0.01)
    sql(
        dsn,
        "UPDATE txnq.entries SET publish_time = now() - interval '2 hours' "
        "WHERE payloads[1] <> 'busy-new'::bytea",
    )

    report = lifecycle.purge_history(
        client, finished_txn_seconds=3600, history_seconds=3600, producer_seconds=3600
    )

    assert {p.relation: p.rows for p in report.items if isinstance(p, lifecycle.Purged)}[
        "producers"
    ] == 2
    assert sorted(r[0] for r in sql(dsn, "SELECT name FROM txnq.producers")) == ["busy2"]
    assert (
        count(
            dsn, "producer_sequences", "producer_id NOT IN (SELECT producer_id FROM txnq.producers)"
        )
        == 0
    )
    # The idle producer's next send registers it again and is written once.
    idle.send(b"after", partition=0)
    idle.send(b"after2", partition=0)
    idle.close()
    values = [m.value for m in receive_messages(reader, 5)]
    assert sorted(values) == sorted([b"before", b"busy-old", b"busy-new", b"after", b"after2"])
    assert count(dsn, "producers", "name = 'idle'") == 1


def test_txn_log_is_partitioned_by_time_and_a_partition_goes_whole_once_purged(
    dsn: str, client: txnq.Client
) -> None:
    """Partitions are made ahead; the log rows of new transactions land in
    them, not in the default; once a period ended and its transactions were
    purged, its partition is dropped (no row-by-row delete)."""
    assert (
        sql_value(dsn, "SELECT relkind FROM pg_class WHERE oid = 'txnq.txn_log'::regclass") == "p"
    )
    client.admin.create_topic("orders", partitions=1)
    with txnq.Client(dsn, txn_log_partition_seconds=2) as fast:
        made = lifecycle.purge_history(fast, finished_txn_seconds=3600, history_seconds=3600)
        created = [p.partition for p in made.items if isinstance(p, lifecycle.TxnLogPartition)]
        # Periods starting a second or more from now, two or three of them:
        # the current period is never attached under running inserts.
        assert 2 <= len(created) <= 3, created
        time.sleep(3.1)  # into the first period made ahead
        finished_transactions(fast)
        assert count(dsn, "txn_log_default") == 0
        assert count(dsn, "txn_log") >= 4
        kept = lifecycle.purge_history(fast, finished_txn_seconds=1, history_seconds=3600)
        assert not [p for p in kept.items if getattr(p, "action", "") == "dropped"]
        time.sleep(4.2)  # their period ended, and the keep time after it

        report = lifecycle.purge_history(fast, finished_txn_seconds=1, history_seconds=3600)

    dropped = [p.partition for p in report.items if getattr(p, "action", "") == "dropped"]
    assert dropped, report.items
    assert count(dsn, "transactions") == 0
    assert count(dsn, "txn_log") == 0
    for name in dropped:
        assert sql_value(dsn, "SELECT to_regclass(%s) IS NULL", (f"txnq.{name}",))
    with psycopg.connect(dsn, autocommit=True) as conn:
        for args in ((None, 2, 1), (0, 2, 1), (1, -1, 1), (1, 2, 0), (3e6, 2, 1)):
            with pytest.raises(psycopg.Error) as raised:
                conn.execute("SELECT * FROM txnq.txn_log_maintain_v1(%s, %s, %s)", args)
            assert raised.value.sqlstate == "TQ005"


def test_a_forgotten_transactional_id_starts_above_its_old_epochs(
    dsn: str, client: txnq.Client
) -> None:
    """Kafka's transactional.id.expiration: an id idle for
    PRODUCER_EXPIRY_SECONDS is forgotten; the epoch floor rises above its
    epochs, so the id's next session starts above them and a session of the
    old one that wakes up is fenced, not taken for the new one."""
    init = "SELECT epoch FROM txnq.init_transactional_id_v3(%s)"
    assert sql_value(dsn, init, ("tid",)) == 0
    assert sql_value(dsn, init, ("tid",)) == 1  # the zombie-to-be's session
    sql(dsn, "UPDATE txnq.transactional_ids SET updated_at = now() - interval '2 hours'")

    report = lifecycle.purge_history(
        client, finished_txn_seconds=3600, history_seconds=3600, producer_seconds=3600
    )

    purged = {p.relation: p.rows for p in report.items if isinstance(p, lifecycle.Purged)}
    assert purged["transactional_ids"] == 1
    assert count(dsn, "transactional_ids") == 0
    assert sql_value(dsn, "SELECT transactional_epoch_floor FROM txnq.config") == 2
    assert sql_value(dsn, init, ("tid",)) == 2
    with psycopg.connect(dsn, autocommit=True) as conn:
        tc_id, txn_seq = conn.execute(
            "SELECT tc_id, txn_seq FROM txnq.open_txn_v2(0, 60)"
        ).fetchone()
        with pytest.raises(psycopg.Error) as raised:
            conn.execute("SELECT txnq.bind_txn_v2(%s, %s, 'tid', 1)", (tc_id, txn_seq))
    assert raised.value.sqlstate == "TQ002"  # fenced: epoch 2 took over
    # An id in use is kept: a transaction of it opened since.
    sql(dsn, "UPDATE txnq.transactional_ids SET updated_at = now() - interval '2 hours'")
    sql(dsn, "SELECT txnq.bind_txn_v2(%s, %s, 'tid', 2)", (tc_id, txn_seq))
    lifecycle.purge_history(
        client, finished_txn_seconds=3600, history_seconds=3600, producer_seconds=3600
    )
    assert count(dsn, "transactional_ids") == 1
