"""Spark through a txnq cluster's proxy: every partition read on its shard.

With the DSN at a cluster's proxy (docs/cluster.md), a read fixes its range
through the proxy as on one server (each partition's bounds come from the
shard that owns it), then asks the proxy which shard owns each partition and
where that shard is (``txnq.cluster_shard_map_v1``: host, hostaddr, port and
dbname, nothing else), and reads each piece of the range on its shard
directly: Spark's tasks read the shards in parallel, and the messages never
cross the proxy. A task connects to a shard with the caller's own DSN, only
its location replaced: the same user, password, sslmode and options.

On one server this is a single catalog lookup (``to_regprocedure``) that
answers "not a proxy": the read goes on as before.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from txnq.database.connections import libpq_dsn
from txnq.database.queries import QUERIES
from txnq.errors import NotSupportedThroughProxyError

#: The words of a DSN that say where a server is: the proxy gives a shard's.
LOCATION_WORDS = ("host", "hostaddr", "port", "dbname")


def is_proxy(conn: psycopg.Connection[Any]) -> bool:
    """Whether ``conn`` is connected to a txnq cluster's proxy database."""
    row = conn.execute(QUERIES["spark_cluster_proxy"]).fetchone()
    return bool(row and row[0])


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


def partition_dsns(
    conn: psycopg.Connection[Any], dsn: str, topic_id: int, partitions: int
) -> dict[int, str]:
    """Per partition of the topic, the DSN of the shard that owns it, when
    ``conn`` is a proxy's connection (``dsn`` its DSN, with the caller's
    credentials); an empty dict on one server (read everything at ``dsn``)."""
    if not is_proxy(conn):
        return {}
    rows = conn.execute(
        QUERIES["spark_cluster_shard_map"], {"topic_id": topic_id, "partitions": partitions}
    ).fetchall()
    return {
        int(partition): shard_dsn(
            dsn, {"host": host, "hostaddr": hostaddr, "port": port, "dbname": dbname}
        )
        for partition, _shard, host, hostaddr, port, dbname in rows
    }


def refuse_writes_through_proxy(conn: psycopg.Connection[Any]) -> None:
    """Raise NotSupportedThroughProxyError when ``conn`` is a proxy's: a Spark
    write is one txnq transaction over every task, and transactions are not
    routed through a proxy yet (docs/cluster.md, "Not there yet")."""
    if is_proxy(conn):
        raise NotSupportedThroughProxyError(
            "writing a DataFrame to txnq (df.write.format('txnq'), write_dataframe, "
            "TwoPhaseCommitSink) through a txnq cluster proxy is not supported yet: a Spark write "
            "is one txnq transaction across the topic's partitions under the sink's own "
            "two-phase protocol (sink_begin / sink_prepare), which is not routed across shards "
            "yet (docs/cluster.md). Produce with a txnq producer through "
            "the proxy instead (client.producer(topic).send_async / flush: routed, idempotent, "
            "not atomic across partitions); nothing was written"
        )
