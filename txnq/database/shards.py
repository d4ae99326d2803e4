"""Where a cluster's partitions live, seen from a client (docs/cluster.md).

With the DSN at a txnq cluster's proxy, a client may talk to the shard that
owns a partition directly, as a Pulsar or Kafka client talks to the broker
that owns a partition after a lookup: Spark's tasks read the shards
(txnq.spark), a consumer LISTENs on them for its wake-ups
(txnq.consumer.shard_listeners). The proxy answers the lookup,
``txnq.cluster_shard_map_v1``: per partition, the owning shard and that
shard's host, hostaddr, port and dbname, nothing else. The client connects
to a shard with its own DSN, only those location words replaced: the same
user, password, sslmode and options as for the proxy.

Whether a database is a proxy is one catalog lookup (the named query
``cluster_is_proxy``: schema ``txnq_cluster`` and no txnq tables).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from txnq.database.connections import libpq_dsn
from txnq.database.queries import QUERIES

#: The words of a DSN that say where a server is: the proxy gives a shard's.
LOCATION_WORDS = ("host", "hostaddr", "port", "dbname")


def is_proxy(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` is connected to a txnq cluster's proxy database."""
    row = conn.execute(QUERIES["cluster_is_proxy"]).fetchone()
    return bool(row and row[0])


def shard_location(dsn: str) -> str:
    """A shard's location for a log line: host:port/dbname, never its credentials."""
    words = conninfo_to_dict(dsn)
    host = words.get("hostaddr") or words.get("host") or "local socket"
    return f"{host}:{words.get('port') or 5432}/{words.get('dbname') or ''}"


def shard_dsn(dsn: str, location: dict[str, str | None]) -> str:
    """``dsn`` with its location words replaced by a shard's (the others,
    credentials included, kept): a libpq key=value DSN."""
    words = {
        key: str(value)
        for key, value in conninfo_to_dict(libpq_dsn(dsn)).items()
        if key not in LOCATION_WORDS and value is not None
    }
    words.update({key: value for key, value in location.items() if value})
    return make_conninfo(**words)


def partition_shards(dsn: str, rows: Iterable[Any]) -> dict[int, tuple[int, str]]:
    """Per partition, its shard's number and DSN (``dsn``, the caller's own,
    relocated), from the rows of the named query ``cluster_partition_shards``
    (partition, shard, host, hostaddr, port, dbname)."""
    return {
        int(partition): (
            int(shard),
            shard_dsn(dsn, {"host": host, "hostaddr": hostaddr, "port": port, "dbname": dbname}),
        )
        for partition, shard, host, hostaddr, port, dbname in rows
    }


def partition_dsns(
    conn: psycopg.Connection[Any], dsn: str, topic_id: int, partitions: int
) -> dict[int, str]:
    """Per partition of the topic, the DSN of the shard that owns it, when
    ``conn`` is a proxy's connection (``dsn`` its DSN, with the caller's
    credentials); an empty dict on one server (everything is at ``dsn``)."""
    if not is_proxy(conn):
        return {}
    rows = conn.execute(
        QUERIES["cluster_partition_shards"], {"topic_id": topic_id, "partitions": partitions}
    ).fetchall()
    return {partition: where[1] for partition, where in partition_shards(dsn, rows).items()}
