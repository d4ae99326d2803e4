"""Spark through a txnq cluster's proxy: every partition read on its shard.

With the DSN at a cluster's proxy (docs/cluster.md), a read fixes its range
through the proxy as on one server (each partition's bounds come from the
shard that owns it), then asks the proxy which shard owns each partition and
where that shard is (``txnq.cluster_shard_map_v1``: host, hostaddr, port and
dbname, nothing else), and reads each piece of the range on its shard
directly: Spark's tasks read the shards in parallel, and the messages never
cross the proxy. A task connects to a shard with the caller's own DSN, only
its location replaced: the same user, password, sslmode and options.

On one server this is a single catalog lookup (``cluster_is_proxy``) that
answers "not a proxy": the read goes on as before.
"""

from __future__ import annotations

from typing import Any

import psycopg

# The lookup itself (partition_dsns, is_proxy) is the cluster's, shared with
# the consumers' wake-ups: txnq.database.shards.
from txnq.database.shards import is_proxy
from txnq.errors import NotSupportedThroughProxyError


def refuse_writes_through_proxy(conn: psycopg.Connection[Any]) -> None:
    """Raise NotSupportedThroughProxyError when ``conn`` is a proxy's: a Spark
    write is one txnq transaction over every task under the sink's own
    two-phase protocol, which is not routed through a proxy yet
    (docs/cluster.md, "Not there yet")."""
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
