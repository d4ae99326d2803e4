"""A two-shard txnq cluster on real, separate PostgreSQL 15 servers.

One session starts three throwaway servers of the machine's PostgreSQL 15
(txnq.cluster.servers: a proxy with PL/Proxy and two shards, on 127.0.0.1 and
free ports, in a temporary directory removed at the end) and sets the cluster
up with ``txnq.cluster.setup.init``. Tests keep to topics of their own
(``topic_name``), so they share the cluster. Where PostgreSQL 15 or PL/Proxy
is missing, every test here skips and says what to install.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

from txnq.cluster.servers import ThrowawayServers, missing_requirements
from txnq.cluster.setup import init

SHARDS = 2


@dataclass
class Cluster:
    """The running cluster: the proxy's DSN, the shards' DSNs (in shard order)."""

    servers: ThrowawayServers
    proxy: str
    shards: list[str]

    def shard_conn(self, shard: int) -> psycopg.Connection[Any]:
        return psycopg.connect(self.shards[shard], autocommit=True)

    def proxy_conn(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.proxy, autocommit=True)


@pytest.fixture(scope="session")
def cluster() -> Iterator[Cluster]:
    missing = missing_requirements()
    if missing:
        pytest.skip("cluster tests need " + "; ".join(missing))
    with ThrowawayServers(SHARDS) as servers:
        assert servers.proxy is not None
        shards = [shard.dsn for shard in servers.shards]
        init(servers.proxy.dsn, shards)
        yield Cluster(servers, servers.proxy.dsn, shards)


@pytest.fixture
def topic_name() -> Callable[[str], str]:
    """A topic name of this test's own: the tests share one cluster."""
    suffix = uuid.uuid4().hex[:8]
    return lambda base: f"{base}-{suffix}"
