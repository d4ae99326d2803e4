"""The proxy's append_v5 and fetch_v4 cross to the shard packed (revision
0028, docs/cluster.md "Throughput"): what a client sends and reads through
the proxy is byte for byte what it would send and read on the shard, keys,
properties, event times and publish times included; what the shard's
append_v5 refuses is refused through the proxy with the same SQLSTATE; the
packed shard functions themselves are refused on the proxy (TQ030)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import psycopg
import pytest

import txnq
from tests.cluster.conftest import Cluster
from txnq.cluster.setup import shard_of
from txnq.database.arrays import ByteaArray

APPEND = (
    "SELECT entry_offset, publish_time, duplicate FROM txnq.append_v5(%s, %s, NULL, NULL, NULL, "
    "%s, %s, %s::jsonb[], %s::timestamptz[])"
)
FETCH = (
    "SELECT entry_offset, publish_time, producer_id, first_sequence, message_count, payloads, "
    "keys, properties, event_times, acked_batch_indexes "
    "FROM txnq.fetch_v4(%s, %s, %s, -1, 100, 8388608, false)"
)


def test_what_crosses_the_packed_hop_is_what_the_shard_holds(
    cluster: Cluster, topic_name: Callable[[str], str]
) -> None:
    name = topic_name("packed")
    with txnq.Client(cluster.proxy) as client:
        topic_id = client.admin.create_topic(name, partitions=2).topic_id
        client.subscribe(name, "packed", "exclusive", initial_position="earliest").close()
    payloads = ByteaArray([b"", b"\x00", b"\\x41\xff" * 50, b"plain", bytes(range(256))])
    keys = ByteaArray([None, b"k1", None, b"\x00k", None])
    properties = [None, '{"a": "1"}', None, None, '{"b": "\\u2713"}']
    event_times = [None, datetime(2024, 1, 1, 12, 0, 0, 123456, tzinfo=UTC), None, None, None]
    with cluster.proxy_conn() as conn:
        row = conn.execute(
            "SELECT subscription_id FROM txnq.subscription_by_name_v1(%s, 'packed')", (topic_id,)
        ).fetchone()
        assert row is not None
        subscription_id = row[0]
        for partition in (0, 1):
            conn.execute(APPEND, (topic_id, partition, payloads, keys, properties, event_times))
            conn.execute(APPEND, (topic_id, partition, ByteaArray([b"x"] * 3), None, None, None))
        through_proxy = {
            p: conn.execute(FETCH, (topic_id, p, subscription_id), binary=True).fetchall()
            for p in (0, 1)
        }
    for partition in (0, 1):
        owner = shard_of(cluster.proxy, topic_id, partition)
        with cluster.shard_conn(owner) as conn:
            on_shard = conn.execute(FETCH, (topic_id, partition, subscription_id), binary=True)
            assert through_proxy[partition] == on_shard.fetchall()
        first = through_proxy[partition][0]
        assert [bytes(p) for p in first[5]] == list(payloads)
        assert first[7][1] == {"a": "1"} and first[8][1] == event_times[1]
        assert through_proxy[partition][1][6] is None and through_proxy[partition][1][7] is None


@pytest.mark.parametrize(
    ("payloads", "sqlstate"),
    [
        (ByteaArray([b"a", None]), "TQ005"),
        (ByteaArray([]), "TQ005"),
        (None, "TQ005"),
        ([[b"a"], [b"b"]], "TQ005"),
    ],
    ids=["null-payload", "empty", "null", "two-dimensional"],
)
def test_the_shards_refusals_come_through_the_packed_hop(
    cluster: Cluster, topic_name: Callable[[str], str], payloads: object, sqlstate: str
) -> None:
    name = topic_name("packed-bad")
    with txnq.Client(cluster.proxy) as client:
        topic_id = client.admin.create_topic(name, partitions=1).topic_id
    with cluster.proxy_conn() as conn, pytest.raises(psycopg.Error) as caught:
        conn.execute(
            "SELECT * FROM txnq.append_v5(%s, 0, NULL, NULL, NULL, %s::bytea[])",
            (topic_id, payloads),
        )
    assert caught.value.sqlstate == sqlstate
    owner = shard_of(cluster.proxy, topic_id, 0)
    with cluster.shard_conn(owner) as conn:
        row = conn.execute(
            "SELECT next_offset FROM txnq.partitions WHERE topic_id = %s AND partition = 0",
            (topic_id,),
        ).fetchone()
        assert row is not None and row[0] == 0


def test_the_packed_shard_functions_are_refused_on_the_proxy(cluster: Cluster) -> None:
    with cluster.proxy_conn() as conn:
        for statement in (
            "SELECT * FROM txnq.append_packed_v1(1, 0, NULL, NULL, NULL, 'a', '{1}')",
            "SELECT * FROM txnq.fetch_packed_v1(1, 0, 1, -1)",
        ):
            with pytest.raises(psycopg.Error) as caught:
                conn.execute(statement)
            assert caught.value.sqlstate == "TQ030"
