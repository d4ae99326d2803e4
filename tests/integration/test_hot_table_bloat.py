"""A held snapshot lets the hot small tables grow (no row version can be
pruned while it lasts); once it ends, the vacuum job brings their files back
within twice their live size (issue 20: txnq.partitions went from 56 kB to
552 kB and stayed so after VACUUM)."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

import txnq
from tests.helpers import sql_value
from txnq import errors, lifecycle
from txnq.lifecycle.vacuum import HOT_TABLES

SHRUNK_TABLES = ("partitions", "producer_sequences")


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    client = txnq.Client(dsn)
    yield client
    client.close()


def total_bytes(dsn: str, table: str) -> int:
    return int(sql_value(dsn, "SELECT pg_total_relation_size(%s::regclass)", (f"txnq.{table}",)))


def test_hot_tables_return_within_twice_their_live_size_after_a_held_snapshot(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("bloat", partitions=2)
    with client.producer("bloat") as producer:
        producer.send(b"first")
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in SHRUNK_TABLES:
            conn.execute(f"VACUUM FULL txnq.{table}")
    live = {table: total_bytes(dsn, table) for table in SHRUNK_TABLES}

    holder = psycopg.connect(dsn)
    try:
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM txnq.topics")  # the snapshot is taken
        with client.producer("bloat") as producer:
            for i in range(4000):
                producer.send(b"m%d" % i)
        grown = {table: total_bytes(dsn, table) for table in SHRUNK_TABLES}
        for table in SHRUNK_TABLES:
            assert grown[table] > 4 * live[table], (table, live[table], grown[table])
        # While the snapshot lasts a rewrite would keep every version: none is done.
        lifecycle.vacuum_hot_tables(client, min_dead=0)
        assert not [s for s in lifecycle.shrink_hot_tables(client) if s.table in SHRUNK_TABLES]
    finally:
        holder.rollback()
        holder.close()

    lifecycle.vacuum_hot_tables(client, min_dead=0)
    shrunk = {s.table: s for s in lifecycle.shrink_hot_tables(client)}

    for table in SHRUNK_TABLES:
        assert table in shrunk, (table, shrunk)
        assert shrunk[table].bytes_after < shrunk[table].bytes_before
        assert total_bytes(dsn, table) <= 2 * live[table], (table, live[table])
    # A second run finds nothing more to rewrite, and the data path still works.
    assert lifecycle.shrink_hot_tables(client) == []
    with client.producer("bloat") as producer:
        assert producer.send(b"after").offset > 0


def test_shrink_hot_tables_checks_its_argument_and_leaves_small_tables_alone(
    client: txnq.Client,
) -> None:
    with pytest.raises(errors.InvalidArgumentError):
        lifecycle.shrink_hot_tables(client, min_bytes=-1)
    with pytest.raises(errors.InvalidArgumentError):
        lifecycle.shrink_hot_tables(client, min_bytes=True)
    # A fresh database: nothing is over twice its live size.
    assert lifecycle.shrink_hot_tables(client, min_bytes=0) == []
    assert set(HOT_TABLES) >= set(SHRUNK_TABLES)
