"""Set a txnq cluster up and report on it (docs/cluster.md).

A cluster is one proxy database (routing and cluster metadata only, on
PL/Proxy) and N shard databases (N a power of two), each a complete txnq
schema. :func:`init` migrates every shard, installs the proxy's schema from
``sql/proxy/*.sql`` and checks the result; :func:`status` reads each shard's
health, partitions and backlog through the proxy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from txnq import errors
from txnq.database.connections import connect, libpq_dsn, translated_errors
from txnq.database.migrate import head_revision, upgrade
from txnq.database.queries import QUERIES

#: The files of the proxy's schema, in the order they run.
PROXY_FILES = (
    "cluster.sql",
    "routed.sql",
    "routed_ids.sql",
    "shared.sql",
    "routing.sql",
    "spark.sql",
    "transactions.sql",
    "refused.sql",
)
#: Run after txnq_cluster.install_refusals: the views (and the transaction
#: inspection functions) answered over the whole cluster replace their
#: refusing copies.
VIEWS_FILES = ("views.sql", "views_shards.sql", "txn_inspection.sql")
#: The views of schema txnq the proxy answers (views.sql, views_shards.sql,
#: txn_inspection.sql): every view of a shard's schema txnq.
ROUTED_VIEWS = (
    "partition_status",
    "ledger_status",
    "topic_status",
    "cursor_status",
    "subscription_status",
    "messages",
    "committed_messages",
    "entry_log_status",
    "job_failure_status",
    "gc_history",
    "storage_history",
    "topic_history",
    "console_action_log",
    "topic_grants",
    "transaction_status",
)
#: The most shards a cluster has (PL/Proxy takes more; the status and the
#: per-shard loops of the proxy are sized for this).
MAX_SHARDS = 1024
#: The id kinds the proxy allocates, as cluster_shard_max_ids names them.
ID_KINDS = ("topic_id", "subscription_id", "producer_id", "consumer_id")


@dataclass(frozen=True)
class InitReport:
    """What :func:`init` did: the shards, their revision, the routed and refused functions."""

    shards: list[str]
    revision: str
    routed: int
    refused: int
    refused_views: int
    left_out: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class ShardStatus:
    """One shard as :func:`status` saw it through the proxy."""

    shard: int
    dsn: str
    healthy: bool
    error: str | None = None
    schema_revision: str | None = None
    server_version: str | None = None
    database_bytes: int | None = None
    topics: int = 0
    partitions: int = 0
    entries: int = 0
    backlog_entries: int = 0
    #: Lifecycle jobs failing on this shard now, and the latest recorded run
    #: (ISO 8601; None: none recorded, e.g. no scheduler on this shard yet).
    job_failures: int = 0
    last_lifecycle_run: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def proxy_sql(name: str) -> str:
    """The text of ``sql/proxy/<name>`` (shipped as ``txnq.sql.proxy``): a file
    of the package, never a user's string."""
    return resources.files("txnq.sql").joinpath("proxy", name).read_text(encoding="utf-8")


def partition_dsn(dsn: str) -> str:
    """A shard DSN as libpq key=value words, with a user: PL/Proxy appends
    ``user=...`` to a partition string that has none, which would break a URL."""
    words = conninfo_to_dict(libpq_dsn(dsn))
    return make_conninfo(**{key: str(value) for key, value in words.items()})


def _check_shard_count(count: int) -> None:
    if count < 1 or count > MAX_SHARDS or count & (count - 1):
        raise errors.InvalidArgumentError(
            f"a cluster has a power of two shards (1, 2, 4 ... {MAX_SHARDS}), not {count}: "
            "PL/Proxy places a partition on shard hash & (N - 1)"
        )


def _check_same_topics(shard_dsns: list[str]) -> None:
    """Refuse shards that hold different topics: a topic must be on every shard alike."""
    seen: list[tuple[Any, ...]] | None = None
    for dsn in shard_dsns:
        with connect(dsn, application_name="txnq-cluster-init") as conn:
            topics = [tuple(row) for row in conn.execute(QUERIES["cluster_shard_topics"])]
        if seen is not None and topics != seen:
            raise errors.ConfigurationError(
                f"shard {dsn} holds other topics than the first shard: a cluster's shards start "
                "empty (or as copies of each other); create topics through the proxy"
            )
        seen = topics


def init(proxy_dsn: str, shard_dsns: list[str]) -> InitReport:
    """Migrate every shard, install the proxy's schema and cluster configuration, check.

    Re-runnable: a second run migrates what is behind and reinstalls the
    proxy's functions. Raises InvalidArgumentError (shard count),
    ConfigurationError (a proxy database that is a txnq shard, shards that
    disagree) or ServerUnavailableError (a server that does not answer).
    """
    _check_shard_count(len(shard_dsns))
    if len(set(shard_dsns)) != len(shard_dsns):
        raise errors.InvalidArgumentError(
            "a shard DSN is given twice: every shard is its own database"
        )
    revisions = {dsn: upgrade(dsn) for dsn in shard_dsns}
    head = head_revision()
    behind = [dsn for dsn, revision in revisions.items() if revision != head]
    if behind:
        raise errors.SchemaOutdatedError(f"shards not at revision {head} after migrating: {behind}")
    _check_same_topics(shard_dsns)
    max_ids = dict.fromkeys(ID_KINDS, 0)
    for dsn in shard_dsns:
        with connect(dsn, application_name="txnq-cluster-init") as conn:
            row = conn.execute(QUERIES["cluster_shard_max_ids"]).fetchone()
        assert row is not None
        for kind, value in zip(ID_KINDS, row, strict=True):
            max_ids[kind] = max(max_ids[kind], int(value))
    with connect(proxy_dsn, application_name="txnq-cluster-init") as conn, translated_errors():
        has_tables = conn.execute(QUERIES["cluster_proxy_has_txnq_tables"]).fetchone()
        if has_tables is not None and has_tables[0]:
            raise errors.ConfigurationError(
                "the proxy database holds a txnq schema (txnq.topics): a proxy holds routing "
                "and cluster metadata only; give `txnq cluster init --proxy` an empty database"
            )
        try:
            conn.execute(proxy_sql("cluster.sql"))
        except psycopg.errors.UndefinedFile as error:
            raise errors.ConfigurationError(
                "PL/Proxy is not installed on the proxy's server: install postgresql-15-plproxy "
                f"(`make install-plproxy`) or your version's package ({error})"
            ) from None
        wanted = [partition_dsn(d) for d in shard_dsns]
        configured = [str(row[1]) for row in conn.execute(QUERIES["cluster_shards"])]
        if configured and configured != wanted and any(max_ids.values()):
            raise errors.ConfigurationError(
                f"the proxy routes to {len(configured)} other shard(s) ({', '.join(configured)}) "
                "and the shards hold topics: changing a cluster's shards moves partitions, "
                "which txnq does not do yet (docs/cluster.md, adding a shard); pass the same "
                "shards in the same order"
            )
        conn.execute(QUERIES["cluster_configure"], {"shards": wanted})
        conn.execute(QUERIES["cluster_align_ids"], max_ids)
        for name in PROXY_FILES[1:]:
            conn.execute(proxy_sql(name))
        refusals = conn.execute(QUERIES["cluster_install_refusals"]).fetchone()
        assert refusals is not None
        for name in VIEWS_FILES:
            conn.execute(proxy_sql(name))
        routing = conn.execute(QUERIES["cluster_routing"]).fetchall()
    report = InitReport(
        shards=list(shard_dsns),
        revision=head,
        routed=sum(1 for row in routing if row[1] != "refused" and row[0] not in ROUTED_VIEWS),
        # views_shards.sql routes a function install_refusals made refuse first.
        refused=sum(1 for row in routing if row[1] == "refused"),
        refused_views=int(refusals[1]) - len(ROUTED_VIEWS),
        left_out=list(refusals[2]),
    )
    unhealthy = [s for s in status(proxy_dsn) if not s.healthy or s.schema_revision != head]
    if unhealthy:
        which = "; ".join(f"shard {s.shard} ({s.dsn}): {s.error}" for s in unhealthy)
        raise errors.ServerUnavailableError(
            "the cluster was installed but these shards do not answer through the proxy "
            f"at revision {head}: {which}"
        )
    return report


def routing(proxy_dsn: str) -> list[tuple[str, str, str]]:
    """The proxy's routing table: (function, rule, note) by function name."""
    with connect(proxy_dsn, application_name="txnq-cluster") as conn:
        return [(str(a), str(b), str(c)) for a, b, c in conn.execute(QUERIES["cluster_routing"])]


def advertise(proxy_dsn: str, shard: int, address: str | None) -> str:
    """Where clients reach ``shard`` (libpq words host, hostaddr, port, dbname;
    None clears it: the address in the proxy's DSN for it), for the direct
    route, Spark's reads and consumers' wake-ups, as Kafka's
    advertised.listeners; returns the shard's location as clients now get it."""
    if isinstance(shard, bool) or not isinstance(shard, int):
        raise errors.InvalidArgumentError(f"shard must be a shard number, not {shard!r}")
    if address is not None and not isinstance(address, str):
        raise errors.InvalidArgumentError(
            f"address must be libpq words such as 'host=10.0.0.7 port=5432', not {address!r}"
        )
    with connect(proxy_dsn, application_name="txnq-cluster") as conn, translated_errors():
        row = conn.execute(QUERIES["cluster_advertise"], {"shard": shard, "address": address})
        return str(row.fetchone()[0])  # type: ignore[index]


def status(proxy_dsn: str) -> list[ShardStatus]:
    """Each shard's health, partitions it owns, entries and subscription backlog."""
    result = []
    with connect(proxy_dsn, application_name="txnq-cluster-status") as conn:
        try:
            shards = conn.execute(QUERIES["cluster_shards"]).fetchall()
        except psycopg.errors.UndefinedTable:
            raise errors.ConfigurationError(
                f"{proxy_dsn} is no txnq cluster proxy: run `txnq cluster init` first"
            ) from None
        for shard, dsn in shards:
            result.append(_shard_status(conn, int(shard), str(dsn)))
    return result


def shards(proxy_dsn: str) -> list[tuple[int, str]]:
    """The cluster's shards as the proxy routes to them: (number, libpq DSN)."""
    with connect(proxy_dsn, application_name="txnq-cluster") as conn:
        return [(int(n), str(dsn)) for n, dsn in conn.execute(QUERIES["cluster_shards"])]


def scheduler_commands(
    proxy_dsn: str, metrics_port: int | None = None
) -> list[tuple[int, str, list[str]]]:
    """One ``txnq worker scheduler`` per shard (TTL, retention, GC, vacuum and
    history purge run on each shard's own database; the proxy has none):
    (shard, DSN, argv). With ``metrics_port``, shard i serves its metrics on
    ``metrics_port + i``."""
    commands = []
    for shard, dsn in shards(proxy_dsn):
        argv = ["txnq", "worker", "scheduler", "--dsn", dsn]
        if metrics_port is not None:
            argv += ["--metrics-port", str(metrics_port + shard)]
        commands.append((shard, dsn, argv))
    return commands


def _shard_status(conn: psycopg.Connection[Any], shard: int, dsn: str) -> ShardStatus:
    try:
        health = conn.execute(QUERIES["cluster_shard_health"], {"shard": shard}).fetchone()
        topics = conn.execute(QUERIES["cluster_shard_topics_on"], {"shard": shard}).fetchall()
        lifecycle = conn.execute(QUERIES["cluster_shard_lifecycle"], {"shard": shard}).fetchone()
    except psycopg.Error as error:
        message = (error.diag.message_primary or str(error)).strip()
        return ShardStatus(shard, dsn, healthy=False, error=message)
    assert health is not None and lifecycle is not None
    return ShardStatus(
        shard,
        dsn,
        healthy=True,
        schema_revision=health[0],
        server_version=health[1],
        database_bytes=int(health[2]),
        topics=len(topics),
        partitions=sum(int(row[4]) for row in topics),
        entries=sum(int(row[3]) for row in topics),
        backlog_entries=sum(int(row[5]) for row in topics),
        job_failures=int(lifecycle[0]),
        last_lifecycle_run=lifecycle[1].isoformat() if lifecycle[1] is not None else None,
    )


def shard_of(proxy_dsn: str, topic_id: int, partition: int) -> int:
    """The shard that owns ``(topic_id, partition)``, by the proxy's route."""
    with connect(proxy_dsn, application_name="txnq-cluster") as conn:
        row = conn.execute(
            QUERIES["cluster_shard_of"], {"topic_id": topic_id, "partition": partition}
        ).fetchone()
    assert row is not None
    return int(row[0])
