"""The cluster pass: the core API tests once more, with the client's DSN at the
proxy of a two-shard PL/Proxy cluster (issue 19; docs/cluster.md, The tests;
docs/development.md).

``pytest --cluster tests/conformance ...`` (``make test-cluster``, which
``make test`` runs after the main pass) makes the ``dsn`` fixture, and
``make_module_database``, hand out the DSN of a proxy database instead of a
plain txnq database: each test gets a cluster of its own, a proxy and two
shard databases cloned from templates that ``txnq.cluster.setup.init`` built
once per session on three throwaway PostgreSQL 15 servers
(``txnq.cluster.servers.ThrowawayServers``), so the tests keep their own topic
names and isolation. Cloning the three databases (at once) and pointing the
proxy's PL/Proxy server at the clones takes 0.3 s on a quiet machine, 1 to 2 s
on a loaded one, and runs in the background for the next test.

What the proxy does not route yet is refused there (TQ030), so a test that
needs it is marked ``@needs_cluster_slice("transactions")`` (one of
:data:`SLICES`): in the cluster pass it is skipped with a reason that names
the missing slice; everywhere else the mark does nothing. When a slice lands,
add its name to :data:`ROUTED_SLICES` and its tests run through the proxy.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from psycopg import sql

from tests.one_ahead import OneAhead

#: The command-line flag that turns the cluster pass on.
OPTION = "--cluster"
#: Shards of the pass's clusters (a power of two; two is the smallest that
#: spreads a topic's partitions over servers).
SHARDS = 2
#: The template databases' name on each throwaway server.
TEMPLATE = "txnq_cluster_template"

#: The slices of issue 19 a test may need, and what they cover; those not in
#: ROUTED_SLICES are refused through the proxy (TQ030).
SLICES = {
    "transactions": "transactions across shards (new_transaction, a transactional producer, "
    "writes to partitions of several shards that commit or fail together)",
    "attach": "application transactions (attach, consumer.process on the application's "
    "connection): refused through a proxy by design, the partitions and the application's tables "
    "must be in one database (docs/cluster.md)",
    "shared": "shared and key_shared subscriptions (claim_v5), their nacks, backoff, ack timeouts",
    "dead_letters": "dead letters and retry topics (reconsume_later), on shared subscriptions",
    "delayed": "delayed delivery (append_delayed_v2)",
    "txn_inspection": "transaction inspection over the whole cluster (txn_describe_v1, "
    "txn_list_v1, transaction_status, describe_transaction, abort_transaction: the home "
    "shard's row, counts added up over the shards)",
    "atomic_acks": "a list of acks over partitions of several shards applied all or nothing "
    "(each shard commits its own; a transaction makes them atomic)",
}
#: The slices routed through the proxy: their tests run in the cluster pass.
#: Add a slice's name here when it lands. "attach" stays out: refused for good.
ROUTED_SLICES: frozenset[str] = frozenset(
    {"transactions", "shared", "dead_letters", "delayed", "txn_inspection"}
)

MARK = "needs_cluster_slice"


def needs_cluster_slice(*slices: str) -> pytest.MarkDecorator:
    """Mark a test (or a parameter, with ``pytest.param(..., marks=...)``) that
    needs slices the proxy does not route yet: skipped in the cluster pass,
    naming them, until every one is in :data:`ROUTED_SLICES`."""
    unknown = set(slices) - set(SLICES)
    assert slices and not unknown, f"unknown cluster slice(s) {sorted(unknown)}: see SLICES"
    return pytest.mark.needs_cluster_slice(*slices)


def missing_slices(item: pytest.Item) -> list[str]:
    """The slices ``item`` needs that are not routed yet, in mark order."""
    needed = [s for mark in item.iter_markers(MARK) for s in mark.args]
    return [s for s in dict.fromkeys(needed) if s not in ROUTED_SLICES]


def unrouted_slices(config: pytest.Config) -> frozenset[str]:
    """The slices a test cannot use in this session: in the cluster pass those
    not routed yet, otherwise none."""
    return frozenset(SLICES) - ROUTED_SLICES if active(config) else frozenset()


class Unrouted:
    """Stands for an object a test's setup could not make through the proxy
    (its slice is not routed): any use fails, naming the slice, so a test that
    uses it without ``needs_cluster_slice`` fails instead of passing wrongly."""

    def __init__(self, slice_name: str) -> None:
        self.slice_name = slice_name

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(
            f"{self.slice_name!r} is not routed through the proxy: mark the test "
            f"needs_cluster_slice({self.slice_name!r})"
        )


def skip_reason(slices: list[str]) -> str:
    return "cluster pass: the proxy does not do this yet (TQ030 or not atomic across shards), " + (
        "the slice(s) of issue 19 " + "; ".join(f"{s}: {SLICES[s]}" for s in slices)
    )


def active(config: pytest.Config) -> bool:
    """Whether this session is the cluster pass."""
    return bool(config.getoption(OPTION, default=False))


def addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        action="store_true",
        default=False,
        help="the cluster pass: run the given tests with the client's DSN at the proxy of a "
        "two-shard PL/Proxy cluster of throwaway PostgreSQL 15 servers (tests/cluster_pass.py)",
    )


def configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARK}(*slices): needs slices of issue 19 the cluster proxy does not route yet "
        "(tests/cluster_pass.py SLICES): skipped in the cluster pass (--cluster), naming them",
    )


def mark_missing_slices(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the cluster pass, skip the tests whose slices are not routed yet."""
    if not active(config):
        return
    for item in items:
        missing = missing_slices(item)
        if missing:
            item.add_marker(pytest.mark.skip(reason=skip_reason(missing)))


@dataclass
class ClusterTemplate:
    """Throwaway servers (a proxy, :data:`SHARDS` shards) with a cluster set
    up in template databases, cloned per test by :meth:`clone`.

    A clone is three ``CREATE DATABASE ... TEMPLATE`` (under 10 MB on each
    shard once its catalogs are compacted), made on the three servers at
    once, and the next test's clone is made in the background while a test
    runs: a test's setup then mostly finds its cluster ready."""

    proxy_server: str
    shard_servers: list[str]
    _pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(SHARDS + 2, thread_name_prefix="cluster-pass")
    )
    _ahead: OneAhead = field(init=False)

    def __post_init__(self) -> None:
        self._ahead = OneAhead(self._make, self._drop)

    @property
    def servers(self) -> tuple[str, ...]:
        return (self.proxy_server, *self.shard_servers)

    def _dsn(self, server: str, database: str) -> str:
        from tests.conftest import dsn_for_database

        return dsn_for_database(server, database)

    def build(self) -> None:
        """The template cluster: empty databases, then ``cluster init``."""
        from txnq.cluster.setup import init

        for server in self.servers:
            _create_database(server, TEMPLATE)
        init(
            self._dsn(self.proxy_server, TEMPLATE),
            [self._dsn(s, TEMPLATE) for s in self.shard_servers],
        )
        from tests.conftest import compact_catalogs

        for server in self.servers:
            compact_catalogs(self._dsn(server, TEMPLATE))
            _end_sessions(server, TEMPLATE)  # CREATE DATABASE ... TEMPLATE needs none

    def _make(self) -> str:
        """A fresh cluster's database name (the same on each server), configured."""
        from txnq.cluster.setup import partition_dsn

        name = f"txnq_c_{uuid.uuid4().hex[:12]}"
        made = [
            self._pool.submit(_create_database, server, name, TEMPLATE) for server in self.servers
        ]
        failures = [f.exception() for f in made]
        try:
            for failure in failures:
                if failure is not None:
                    raise failure
            shards = [partition_dsn(self._dsn(s, name)) for s in self.shard_servers]
            with psycopg.connect(self._dsn(self.proxy_server, name), autocommit=True) as conn:
                conn.execute("SELECT txnq_cluster.configure(%s)", (shards,))
        except BaseException:
            self._drop(name)
            raise
        return name

    def _drop(self, name: str) -> None:
        for server in self.servers:  # the proxy first: its sessions hold the shards' connections
            _drop_database(server, name)

    @contextmanager
    def clone(self) -> Iterator[str]:
        """The proxy DSN of a fresh cluster, dropped afterwards."""
        with self._ahead.take() as name:
            yield self._dsn(self.proxy_server, name)

    def close(self) -> None:
        """Drop the cluster made ahead, if any, and stop the background threads."""
        self._ahead.close()
        self._pool.shutdown()


def _create_database(server: str, name: str, template: str | None = None) -> None:
    # WAL_LOG (PostgreSQL 15's default) copies the template through the WAL:
    # no checkpoint, so clones made at once on three servers do not stall each other.
    statement = sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name))
    if template is not None:
        statement = sql.SQL("{} TEMPLATE {}").format(statement, sql.Identifier(template))
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(statement)


def _end_sessions(server: str, name: str) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )


def _drop_database(server: str, name: str) -> None:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextmanager
def cluster_template() -> Iterator[ClusterTemplate]:
    """Start the throwaway servers and build the template cluster; stop and
    remove them at the end. Where PostgreSQL 15 or PL/Proxy is missing, every
    test of the pass skips and names what to install (as tests/cluster does)."""
    from txnq.cluster.servers import ThrowawayServers, missing_requirements

    missing = missing_requirements()
    if missing:
        pytest.skip("the cluster pass (--cluster) needs " + "; ".join(missing))
    with ThrowawayServers(SHARDS) as servers:
        assert servers.proxy is not None
        template = ClusterTemplate(servers.proxy.dsn, [s.dsn for s in servers.shards])
        try:
            template.build()
            yield template
        finally:
            template.close()


def header() -> str:
    return (
        f"txnq: cluster pass ({OPTION}): each test's DSN is the proxy of a {SHARDS}-shard "
        f"PL/Proxy cluster of throwaway PostgreSQL 15 servers; slices routed: "
        f"{', '.join(sorted(ROUTED_SLICES)) or 'none of ' + ', '.join(SLICES)}"
    )


__all__ = [
    "OPTION",
    "ROUTED_SLICES",
    "SLICES",
    "ClusterTemplate",
    "active",
    "cluster_template",
    "needs_cluster_slice",
]
