"""LISTEN on a cluster's shards: the wake-ups of a consumer whose DSN is a
cluster's proxy (docs/cluster.md).

An append notifies ``txnq_topic_<id>`` on the server that runs it
(``append_v6``, when a consumer registered as a waiter: through a proxy
``register_waiters_v1`` runs on every shard), and a LISTEN on the proxy never
hears a shard's NOTIFY. So a consumer through a proxy LISTENs on a connection
of its own to each shard that owns one of the partitions it waits for, as a
Pulsar or Kafka client talks to the broker that owns a partition after a
lookup: the shard map comes from the proxy once (txnq.database.shards: the
user's own DSN, only the location replaced), and the fetch loop waits on
those connections and on its fetch connection together (its own wake-ups,
from close and seek, still come through the proxy).

The poll every ``poll_interval`` stays the fallback: a shard that cannot be
reached for LISTEN (an address only the proxy's server resolves, a
firewall, the shard down) is left out, logged once, and tried again every
:data:`RETRY_SECONDS` while its partitions are polled; a LISTEN connection
that breaks is dropped the same way. Nothing here ever stops the consumer.

:class:`ShardListeners` decides (which shards, when to retry, what to log);
:class:`SyncShardListeners` and :class:`AsyncShardListeners` connect and wait.
On one server none of this runs: the session never names a shard.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
import time
from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql

from txnq.database.shards import shard_location

log = logging.getLogger("txnq.consumer")

#: Seconds a LISTEN connection to a shard may take to open: the fetch loop
#: waits for it, and the poll covers a shard that does not answer.
CONNECT_TIMEOUT = 3
#: Seconds before a shard that could not be reached is tried again.
RETRY_SECONDS = 30.0


class ShardListeners:
    """What both faces decide: which shards' LISTEN connections to open or
    close for the shards a wait names, when to try an unreachable shard
    again, and what to log (once per shard and outage)."""

    def __init__(self, channel: str, consumer: str, poll_interval: float) -> None:
        self.channel = channel
        self.consumer = consumer
        self.poll_interval = poll_interval
        #: The DSN each open connection (by shard) was made with.
        self._dsns: dict[int, str] = {}
        #: Shards that could not be reached: when (monotonic) to try again.
        self._retry_at: dict[int, float] = {}

    def _stale(self, wanted: Mapping[int, str]) -> list[int]:
        """Open shards the wait no longer names (or that moved)."""
        return [shard for shard, dsn in self._dsns.items() if wanted.get(shard) != dsn]

    def _due(self, wanted: Mapping[int, str]) -> list[tuple[int, str]]:
        """Shards to connect to now: named, not open, not waiting for a retry."""
        now = time.monotonic()
        return [
            (shard, dsn)
            for shard, dsn in sorted(wanted.items())
            if shard not in self._dsns and self._retry_at.get(shard, 0.0) <= now
        ]

    def _opened(self, shard: int, dsn: str) -> None:
        self._dsns[shard] = dsn
        if self._retry_at.pop(shard, None) is not None:
            log.info(
                "consumer %r LISTENs on shard %d (%s) again: woken by its NOTIFYs",
                self.consumer,
                shard,
                shard_location(dsn),
            )

    def _failed(self, shard: int, dsn: str, exc: BaseException) -> None:
        """Connecting or listening to ``shard`` failed: poll it; log the first time."""
        self._dsns.pop(shard, None)
        first = shard not in self._retry_at
        self._retry_at[shard] = time.monotonic() + RETRY_SECONDS
        if first:
            detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            log.warning(
                "consumer %r cannot LISTEN on shard %d (%s) of the cluster: %s. Its partitions "
                "are polled every %gs meanwhile (POLL_INTERVAL_SECONDS), and the LISTEN is "
                "tried again every %gs; a consumer through a proxy must reach the shards' "
                "addresses to be woken at once (docs/cluster.md)",
                self.consumer,
                shard,
                shard_location(dsn),
                detail,
                self.poll_interval,
                RETRY_SECONDS,
            )

    def _listen_statement(self) -> sql.Composed:
        return sql.SQL("LISTEN {}").format(sql.Identifier(self.channel))


class SyncShardListeners(ShardListeners):
    """The sync face's LISTEN connections to shards; :meth:`wait` runs on the
    fetch thread, :meth:`close` after it ended."""

    def __init__(self, channel: str, consumer: str, poll_interval: float) -> None:
        super().__init__(channel, consumer, poll_interval)
        self._conns: dict[int, psycopg.Connection[Any]] = {}

    @property
    def active(self) -> bool:
        """Whether a wait has a shard to listen on."""
        return bool(self._conns)

    def listen_on(self, wanted: Mapping[int, str]) -> None:
        for shard in self._stale(wanted):
            self._close(shard)
        for shard, dsn in self._due(wanted):
            try:
                conn = psycopg.connect(
                    dsn,
                    autocommit=True,
                    application_name=f"txnq-consumer-{self.consumer}",
                    connect_timeout=CONNECT_TIMEOUT,
                )
                try:
                    conn.execute(self._listen_statement())
                except BaseException:
                    conn.close()
                    raise
            except psycopg.Error as exc:
                self._failed(shard, dsn, exc)
                continue
            self._conns[shard] = conn
            self._opened(shard, dsn)

    def wait(self, own: psycopg.Connection[Any], timeout: float) -> None:
        """Wait up to ``timeout`` for a NOTIFY on ``own`` (the fetch connection:
        its errors are the caller's) or on any shard's connection."""
        deadline = time.monotonic() + timeout
        while True:
            # Every connection drained, not only up to the first that has one.
            woken = [self._received(own)]
            woken += [self._received_on(shard) for shard in list(self._conns)]
            remaining = deadline - time.monotonic()
            if any(woken) or remaining <= 0:
                return
            sockets = [own.fileno(), *(conn.fileno() for conn in self._conns.values())]
            select.select(sockets, [], [], remaining)

    @staticmethod
    def _received(conn: psycopg.Connection[Any]) -> bool:
        """Whether ``conn`` has a NOTIFY (read without waiting)."""
        received = False
        for _ in conn.notifies(timeout=0.0):
            received = True
        return received

    def _received_on(self, shard: int) -> bool:
        try:
            return self._received(self._conns[shard])
        except psycopg.Error as exc:
            self._failed(shard, self._dsns.get(shard, ""), exc)
            self._close(shard)
            return True  # a round now: what it missed is fetched

    def _close(self, shard: int) -> None:
        self._dsns.pop(shard, None)
        conn = self._conns.pop(shard, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        for shard in list(self._conns):
            self._close(shard)


class AsyncShardListeners(ShardListeners):
    """The asyncio face's LISTEN connections to shards; :meth:`wait` runs in
    the fetch task, :meth:`close` after it ended."""

    def __init__(self, channel: str, consumer: str, poll_interval: float) -> None:
        super().__init__(channel, consumer, poll_interval)
        self._conns: dict[int, psycopg.AsyncConnection[Any]] = {}

    @property
    def active(self) -> bool:
        return bool(self._conns)

    async def listen_on(self, wanted: Mapping[int, str]) -> None:
        for shard in self._stale(wanted):
            await self._close(shard)
        for shard, dsn in self._due(wanted):
            try:
                conn = await psycopg.AsyncConnection.connect(
                    dsn,
                    autocommit=True,
                    application_name=f"txnq-consumer-{self.consumer}",
                    connect_timeout=CONNECT_TIMEOUT,
                )
                try:
                    await conn.execute(self._listen_statement())
                except BaseException:
                    await conn.close()
                    raise
            except psycopg.Error as exc:
                self._failed(shard, dsn, exc)
                continue
            self._conns[shard] = conn
            self._opened(shard, dsn)

    async def wait(self, own: psycopg.AsyncConnection[Any], timeout: float) -> None:
        """Wait up to ``timeout`` for a NOTIFY on ``own`` (the fetch connection:
        its errors are the caller's) or on any shard's connection."""
        waits: dict[asyncio.Task[None], int | None] = {
            asyncio.ensure_future(self._notified(own, timeout)): None
        }
        for shard, conn in self._conns.items():
            waits[asyncio.ensure_future(self._notified(conn, timeout))] = shard
        try:
            done, _ = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            # The others stop waiting (a NOTIFY they had not read yet stays in
            # their connection's backlog for the next wait).
            for task in waits:
                task.cancel()
            await asyncio.gather(*waits, return_exceptions=True)
        for task in done:
            exc = None if task.cancelled() else task.exception()
            if exc is None:
                continue
            failed = waits[task]
            if failed is None:
                raise exc
            self._failed(failed, self._dsns.get(failed, ""), exc)
            await self._close(failed)

    @staticmethod
    async def _notified(conn: psycopg.AsyncConnection[Any], timeout: float) -> None:
        async for _ in conn.notifies(timeout=timeout, stop_after=1):
            pass

    async def _close(self, shard: int) -> None:
        self._dsns.pop(shard, None)
        conn = self._conns.pop(shard, None)
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()

    async def close(self) -> None:
        for shard in list(self._conns):
            await self._close(shard)
