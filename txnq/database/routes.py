"""The direct route: the hot path of a client whose DSN is a txnq cluster's
proxy runs on the shard that owns the partition (docs/cluster.md, "The
direct route").

Through a proxy, every call crosses two hops: client to proxy, and the
proxy's PL/Proxy function to the shard, which re-encodes the call's
arguments and results on the proxy's CPU (docs/benchmarks.md measured the
hop at half the direct rate for consume + ack). Pulsar and Kafka clients do
not send their data through the broker they bootstrapped from: they look up
the broker that owns a partition and talk to it. A txnq client does the
same for the calls that the proxy forwards unchanged to the owning shard
(``Call.shard_key`` set: a non-transactional append, a fetch, a
non-transactional ack and the cursor check that goes with it): it looks the
shard map up once (``cluster_partition_shards``, the proxy's
``txnq.cluster_shard_map_v1``: host, port and dbname only) and connects to
the shard with its own DSN, only the location replaced
(txnq.database.shards). Every other call (transactions, registrations,
shared subscriptions, administration) still goes through the proxy, which
keeps the cluster's bookkeeping.

What decides that this is safe: the proxy's function for such a call is
``RUN ON txnq_cluster.route(topic, partition)`` with the same statement,
so the shard runs the same function with the same arguments either way; and
the placement is fixed while a cluster keeps its shard count (adding a
shard does not move partitions yet, docs/cluster.md, limits).

Never a reason to fail: a shard that cannot be reached directly (an
address only the proxy's server resolves, a firewall, the shard down), or
where the client's role may not run the hot path's functions (the proxy may
log in to the shards as another user: the named query
``cluster_direct_route_usable``, checked once per connection), is left to
the proxy's route, logged once, and tried again after :data:`RETRY_SECONDS`.
Setting ``CLUSTER_ROUTE=proxy`` turns the direct route off (every call
through the proxy, as before 2026-11-27).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

import psycopg

from txnq.database.connections import libpq_dsn
from txnq.database.plans import Call, Plan
from txnq.database.queries import QUERIES
from txnq.database.shards import partition_shards, shard_location
from txnq.settings import Settings

log = logging.getLogger("txnq.cluster")

#: Why a shard that let the client in is not used directly (the named query
#: cluster_direct_route_usable said no).
_NOT_USABLE = RuntimeError(
    "the client's role may not run txnq's append_v6, fetch_v4 and ack_v3 there, or the "
    "database holds no txnq schema: grant the role txnq_client on the shard (docs/security.md)"
)

#: Seconds a direct connection to a shard may take to open before the call
#: goes through the proxy instead.
CONNECT_TIMEOUT = 3
#: Seconds before a shard that could not be reached directly is tried again.
RETRY_SECONDS = 30.0

#: Where a partition's shard is: (shard number, DSN), or None (the proxy's route).
Owner = Callable[[tuple[int, int]], "tuple[int, str] | None"]


#: Partitions past a topic's count whose shard a producer looks up too: the
#: placement is a function of (topic, partition) alone, so partitions added
#: later (up to this many) go to their shard directly as well; beyond, they
#: go through the proxy until the producer is created again.
ROUTE_AHEAD = 64


class ClusterClient(Protocol):
    """What :func:`owners_plan` needs of a client (sync or asyncio)."""

    dsn: str
    settings: Settings

    def _cluster_proxy_plan(self) -> Plan[bool]: ...


def owners_plan(
    client: ClusterClient, topic_id: int, partitions: int
) -> Plan[dict[int, tuple[int, str]]]:
    """Per partition of the topic (and :data:`ROUTE_AHEAD` more), its shard's
    number and DSN, when the client's DSN is a cluster's proxy and its
    CLUSTER_ROUTE is direct; else empty (every call through the client's DSN)."""
    if client.settings.cluster_route != "direct" or not (yield from client._cluster_proxy_plan()):
        return {}
    rows = yield Call(
        "cluster_partition_shards",
        {"topic_id": topic_id, "partitions": partitions + ROUTE_AHEAD},
        "all",
    )
    return partition_shards(client.dsn, rows)


def topic_owner(topic_id: int, owners: Callable[[], dict[int, tuple[int, str]] | None]) -> Owner:
    """An :data:`Owner` for one topic's calls: ``owners()`` is the face's
    current map (looked up again when it changes, e.g. after partitions
    were added)."""

    def owner(key: tuple[int, int]) -> tuple[int, str] | None:
        known = owners()
        if not known or key[0] != topic_id:
            return None
        return known.get(key[1])

    return owner


#: The shards' locations this process said it cannot use directly: said once
#: (every producer and consumer connection finds it out on its own), and
#: again after one reached it.
_SAID: set[str] = set()


class Routes:
    """What both faces decide: which shard a keyed call goes to, and whether
    to try it directly now (not while an unreachable shard waits for its
    retry). One per connection a face keeps (a producer's, a consumer's
    fetch and ack connections): a connection is used by one thread at a
    time, as the face's own is."""

    def __init__(self, owner: Owner, application_name: str) -> None:
        self._owner = owner
        self._application_name = application_name
        self._away: dict[int, float] = {}
        self._conns: dict[int, Any] = {}

    def _target(self, key: tuple[int, int]) -> tuple[int, str] | None:
        where = self._owner(key)
        if where is None:
            return None
        shard = where[0]
        if time.monotonic() < self._away.get(shard, 0.0):
            return None
        return where

    def _unreachable(self, shard: int, dsn: str, exc: BaseException) -> None:
        where = shard_location(dsn)
        if where not in _SAID:
            _SAID.add(where)
            log.warning(
                "shard %d (%s) cannot be reached directly (%s): its partitions' calls go "
                "through the proxy, and the shard is tried again every %gs",
                shard,
                where,
                str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc),
                RETRY_SECONDS,
            )
        self._away[shard] = time.monotonic() + RETRY_SECONDS

    def _reached(self, shard: int, dsn: str) -> None:
        self._away.pop(shard, None)
        where = shard_location(dsn)
        if where in _SAID:
            _SAID.discard(where)
            log.info("shard %d (%s) is reached directly again", shard, where)

    def _wanted(self, key: tuple[int, int]) -> tuple[int, str, Any] | None:
        """For a keyed call: (shard, DSN, its live connection or None to open
        one), or None when the call goes through the proxy."""
        target = self._target(key)
        if target is None:
            return None
        shard, dsn = target
        conn = self._conns.get(shard)
        live = conn is not None and not (conn.closed or conn.broken)
        return shard, dsn, conn if live else None

    def _opened(self, shard: int, dsn: str, conn: Any, usable: Any) -> bool:
        """Keep a connection just opened to ``shard`` if the named query
        cluster_direct_route_usable said yes (``usable``, its row); say so if not."""
        if not (usable and usable[0]):
            self._unreachable(shard, dsn, _NOT_USABLE)
            return False
        self._reached(shard, dsn)
        self._conns[shard] = conn
        return True

    def _connect_kwargs(self, dsn: str) -> dict[str, Any]:
        return {
            "conninfo": libpq_dsn(dsn),
            "autocommit": True,
            "application_name": self._application_name,
            "connect_timeout": CONNECT_TIMEOUT,
        }


class SyncRoutes(Routes):
    """The sync face's direct connections to the shards, by shard number."""

    def connection(self, key: tuple[int, int]) -> psycopg.Connection[Any] | None:
        """The shard's connection for a call keyed ``key``, or None: through the proxy."""
        wanted = self._wanted(key)
        if wanted is None or wanted[2] is not None:
            return None if wanted is None else wanted[2]
        shard, dsn, _ = wanted
        try:
            conn = psycopg.connect(**self._connect_kwargs(dsn))
            usable = conn.execute(QUERIES["cluster_direct_route_usable"]).fetchone()
        except psycopg.Error as exc:
            self._unreachable(shard, dsn, exc)
            return None
        if self._opened(shard, dsn, conn, usable):
            return conn
        conn.close()
        return None

    def reset(self) -> None:
        """Close every direct connection (the face reconnects: one was lost);
        the next keyed call connects anew."""
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            with contextlib.suppress(Exception):
                conn.close()

    close = reset


class AsyncRoutes(Routes):
    """The asyncio face's direct connections to the shards, by shard number."""

    async def connection(self, key: tuple[int, int]) -> psycopg.AsyncConnection[Any] | None:
        """The shard's connection for a call keyed ``key``, or None: through the proxy."""
        wanted = self._wanted(key)
        if wanted is None or wanted[2] is not None:
            return None if wanted is None else wanted[2]
        shard, dsn, _ = wanted
        try:
            conn = await psycopg.AsyncConnection.connect(**self._connect_kwargs(dsn))
            usable = await (await conn.execute(QUERIES["cluster_direct_route_usable"])).fetchone()
        except psycopg.Error as exc:
            self._unreachable(shard, dsn, exc)
            return None
        if self._opened(shard, dsn, conn, usable):
            return conn
        await conn.close()
        return None

    async def reset(self) -> None:
        """Close every direct connection; the next keyed call connects anew."""
        conns, self._conns = self._conns, {}
        for conn in conns.values():
            with contextlib.suppress(Exception):
                await conn.close()

    close = reset
