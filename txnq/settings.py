"""Settings: every name has an environment variable ``TXNQ_<NAME>``, a key in the
config file and, where it matters, a CLI flag. The names are part of the
contract (DESIGN.md, "Settings").

Precedence, highest first: explicit keyword arguments (CLI flags), environment
variables, the config file (``TXNQ_CONFIG``, ``txnq --config FILE``, or
``./txnq.toml``; keys are the names in lower case, e.g. ``tc_count = 16``,
at the top level or under ``[txnq]``), then the defaults below.

An unusable value stops the process at start with an error that names the
setting and its environment variable. ``txnq config show`` prints the
effective settings and where each came from (:func:`resolve_settings`), with
the secrets (:data:`SECRET_SETTINGS`) masked.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from txnq.durations import parse_duration, parse_size
from txnq.errors import ConfigurationError, InvalidArgumentError
from txnq.policies import POLICIES, parse_limit_bytes, parse_limit_seconds, parse_policy

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True)
class Settings:
    """Resolved settings of one process. Field names are the lower-case setting names."""

    dsn: str | None = None
    home: str = ".txnq"
    # The TCP port of the embedded server under HOME (txnq.database.embedded):
    # unset, the port that home used before, else 5477. The home keeps it, so a
    # DSN stays valid across restarts.
    embedded_port: int | None = None
    tc_count: int = 16
    txn_default_timeout: float = 60.0
    txn_max_timeout: float = 900.0
    max_message_bytes: int = 5 * MiB
    ledger_max_entries: int = 50_000
    ledger_max_bytes: int = 2 * GiB
    ledger_min_rollover_seconds: float = 600.0
    ledger_max_rollover_seconds: float = 14_400.0
    entry_log_max_bytes: int = GiB
    entry_log_max_age_seconds: float = 86_400.0
    gc_minor_threshold: float = 0.2
    gc_major_threshold: float = 0.8
    gc_minor_interval_seconds: float = 3600.0
    gc_major_interval_seconds: float = 86_400.0
    # Entry-log compaction: each GC run stops starting new work after this long
    # (0: no limit) and copies live rows at most this fast (bytes of payload per
    # second, throttled by bytes as BookKeeper's compactionRateByBytes; 0: no
    # limit). An unfinished compaction resumes at the next run.
    gc_time_budget_seconds: float = 900.0
    gc_max_bytes_per_second: int = 32 * MiB
    # The dirty-data sweep (`txnq gc doctor`) reports a subscription as inactive
    # when no consumer is connected and its cursor has not moved for this long.
    inactive_cursor_seconds: float = 7 * 86_400.0
    retention_check_interval_seconds: float = 120.0
    # The history purge (docs/lifecycle.md, "Every table bounded"): finished
    # transactions, with their log, are kept this long (Kafka forgets a
    # transactional id's state after 7 days); GC runs, DROPPED entry logs,
    # DELETED ledgers and consumers whose lease expired this long; the job
    # runs this often. A producer that has neither registered nor sent for
    # PRODUCER_EXPIRY_SECONDS is forgotten (Kafka's producer.id.expiration.ms);
    # the Python producer registers again at its next send.
    finished_txn_retention_seconds: float = 7 * 86_400.0
    history_retention_seconds: float = 7 * 86_400.0
    producer_expiry_seconds: float = 7 * 86_400.0
    purge_interval_seconds: float = 600.0
    # txnq.txn_log is partitioned by time, one partition per this long; a
    # partition is dropped whole once its transactions are purged.
    txn_log_partition_seconds: float = 86_400.0
    ttl_check_interval_seconds: float = 300.0
    # Consumer liveness: a consumer that has not renewed its lease for this long
    # is gone, and failover hands its partitions to the next consumer.
    consumer_lease_seconds: float = 10.0
    # Polling fallback when LISTEN/NOTIFY is unavailable (e.g. behind PgBouncer).
    poll_interval_seconds: float = 1.0
    # The Prometheus endpoint of a worker (docs/metrics.md): unset, none; 0,
    # any free port. Loopback by default: the metrics name topics and
    # subscriptions, so exposing them beyond the host is a decision.
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"
    # Backlog quotas (docs/backlog-quota.md): the defaults of topics that set
    # none (-1: no limit; Pulsar's backlogQuotaDefaultLimitBytes/Second and
    # backlogQuotaDefaultRetentionPolicy), published into txnq.config; how
    # often the scheduler checks; how long producer_hold blocks a send.
    backlog_quota_default_limit_bytes: int = -1
    backlog_quota_default_limit_seconds: float = -1.0
    backlog_quota_default_policy: str = "producer_hold"
    backlog_quota_check_interval_seconds: float = 60.0
    backlog_quota_hold_timeout_seconds: float = 30.0
    # Workers as services (docs/operations.md): log lines as JSON, text or
    # auto (JSON unless standard error is a terminal); how long a worker
    # stopping on SIGTERM may take to finish or hand back its work before it
    # exits anyway (below the orchestrator's grace period: compose gives 30s);
    # how long a coordinator worker acts on a lease it has not confirmed
    # (it confirms every POLL_INTERVAL_SECONDS; a connection silent this long
    # is given up, and the leases with it).
    log_format: str = "auto"
    shutdown_timeout_seconds: float = 20.0
    coordinator_lease_seconds: float = 10.0
    # The web console (docs/console.md): `txnq console` and `txnq standalone`
    # serve it on this port, on loopback unless CONSOLE_HOST says otherwise
    # (it shows topics and, to admins, payloads and actions); the scheduler's
    # console_sample job samples the charts' history this often and keeps it
    # (and the console's audit trail) this long.
    console_port: int = 8470
    console_host: str = "127.0.0.1"
    console_sample_interval_seconds: float = 10.0
    console_history_seconds: float = 86_400.0
    # Spark (docs/spark.md): the PostgreSQL JDBC jar (unset: the distribution's,
    # e.g. /usr/share/java/postgresql.jar), and the Maven coordinates Spark
    # fetches (spark.jars.packages) when there is no jar.
    spark_jdbc_jar: str | None = None
    spark_jdbc_package: str = "org.postgresql:postgresql:42.7.4"
    # A cluster (docs/cluster.md): with the DSN at its proxy, a client runs
    # its hot path (non-transactional appends, fetches and acks) on the shard
    # that owns the partition, as Pulsar and Kafka clients do after a lookup
    # ("direct"; txnq.database.routes), or every call through the proxy
    # ("proxy": for shards the clients cannot reach).
    cluster_route: str = "direct"

    def __post_init__(self) -> None:
        if not 0 <= self.gc_minor_threshold < self.gc_major_threshold <= 1:
            raise ConfigurationError(
                "GC thresholds must satisfy 0 <= GC_MINOR_THRESHOLD < GC_MAJOR_THRESHOLD <= 1, "
                f"got minor={self.gc_minor_threshold} major={self.gc_major_threshold}"
            )
        if self.txn_default_timeout > self.txn_max_timeout:
            raise ConfigurationError(
                f"TXN_DEFAULT_TIMEOUT ({self.txn_default_timeout}s) is above TXN_MAX_TIMEOUT "
                f"({self.txn_max_timeout}s): lower the default or raise the maximum"
            )
        if self.ledger_min_rollover_seconds > self.ledger_max_rollover_seconds:
            raise ConfigurationError(
                "LEDGER_MIN_ROLLOVER_SECONDS must not exceed LEDGER_MAX_ROLLOVER_SECONDS"
            )
        for name in ("gc_time_budget_seconds", "gc_max_bytes_per_second"):
            if getattr(self, name) < 0:
                raise ConfigurationError(f"{name.upper()} must not be negative (0: no limit)")
        if self.inactive_cursor_seconds <= 0:
            raise ConfigurationError("INACTIVE_CURSOR_SECONDS must be positive")
        if self.metrics_port is not None and not 0 <= self.metrics_port <= 65535:
            raise ConfigurationError(
                f"METRICS_PORT must be a TCP port from 1 to 65535 (0: any free port), "
                f"not {self.metrics_port}"
            )
        if self.embedded_port is not None and not 0 < self.embedded_port <= 65535:
            raise ConfigurationError(
                f"EMBEDDED_PORT must be a TCP port from 1 to 65535, not {self.embedded_port}"
            )
        if not 0 <= self.console_port <= 65535:
            raise ConfigurationError(
                f"CONSOLE_PORT must be a TCP port from 1 to 65535 (0: any free port), "
                f"not {self.console_port}"
            )
        if not self.console_host.strip():
            raise ConfigurationError(
                "CONSOLE_HOST is empty: give an address to bind, e.g. 127.0.0.1"
            )
        if not self.metrics_host.strip():
            raise ConfigurationError(
                "METRICS_HOST is empty: give an address to bind, e.g. 127.0.0.1 or 0.0.0.0"
            )
        for name in ("tc_count", "ledger_max_entries", "max_message_bytes"):
            if getattr(self, name) < 1:
                raise ConfigurationError(f"{name.upper()} must be at least 1")
        for name in ("backlog_quota_default_limit_bytes", "backlog_quota_default_limit_seconds"):
            value = getattr(self, name)
            if not (value == -1 or value > 0):
                raise ConfigurationError(
                    f"{name.upper()} must be -1 (no limit) or a positive "
                    f"{'size' if name.endswith('bytes') else 'duration'}, got {value!r}"
                )
        if self.backlog_quota_default_policy not in POLICIES:
            raise ConfigurationError(
                f"BACKLOG_QUOTA_DEFAULT_POLICY must be one of {', '.join(POLICIES)}, "
                f"got {self.backlog_quota_default_policy!r}"
            )
        for name in (
            "backlog_quota_check_interval_seconds",
            "backlog_quota_hold_timeout_seconds",
            "finished_txn_retention_seconds",
            "history_retention_seconds",
            "producer_expiry_seconds",
            "purge_interval_seconds",
            "console_sample_interval_seconds",
            "console_history_seconds",
            "txn_log_partition_seconds",
            "shutdown_timeout_seconds",
            "poll_interval_seconds",
        ):
            if getattr(self, name) <= 0:
                raise ConfigurationError(f"{name.upper()} must be longer than zero")
        if not 1 <= self.txn_log_partition_seconds <= 31 * 86_400:
            raise ConfigurationError(
                "TXN_LOG_PARTITION_SECONDS must be from 1 second to 31 days, "
                f"not {self.txn_log_partition_seconds:g}"
            )
        if self.cluster_route not in ("direct", "proxy"):
            raise ConfigurationError(
                f"CLUSTER_ROUTE must be direct or proxy, not {self.cluster_route!r}"
            )
        if self.log_format not in ("auto", "json", "text"):
            raise ConfigurationError(
                f"LOG_FORMAT must be one of auto, json, text, not {self.log_format!r}"
            )
        if self.coordinator_lease_seconds < 2 * self.poll_interval_seconds:
            raise ConfigurationError(
                f"COORDINATOR_LEASE_SECONDS ({self.coordinator_lease_seconds:g}s) must be at "
                f"least twice POLL_INTERVAL_SECONDS ({self.poll_interval_seconds:g}s): a worker "
                "confirms its leases once per poll interval"
            )

    def replace(self, **changes: Any) -> Settings:
        return load_settings(base=self, **changes)


_BYTE_SETTINGS = {
    "max_message_bytes",
    "ledger_max_bytes",
    "entry_log_max_bytes",
    "gc_max_bytes_per_second",
}
_SECOND_SETTINGS = {
    f.name for f in fields(Settings) if f.type in ("float", float) and "threshold" not in f.name
}


def setting_unit(name: str) -> str | None:
    """``bytes`` or ``seconds`` for a setting measured in them, else None (how
    ``txnq config show`` writes its value: 1GiB, 600s)."""
    if name in _BYTE_SETTINGS or name == "backlog_quota_default_limit_bytes":
        return "bytes"
    if name in _SECOND_SETTINGS:
        return "seconds"
    return None


def _coerce(name: str, value: Any) -> Any:
    kind = {f.name: f.type for f in fields(Settings)}[name]
    where = f"setting {name.upper()} (env TXNQ_{name.upper()})"
    try:
        if value is None:
            return None
        if name == "backlog_quota_default_limit_bytes":
            return parse_limit_bytes(value, what=where)
        if name == "backlog_quota_default_limit_seconds":
            return parse_limit_seconds(value, what=where)
        if name == "backlog_quota_default_policy":
            return parse_policy(value, what=where)
        if name in _BYTE_SETTINGS:
            return parse_size(value, what=where)
        if name in _SECOND_SETTINGS:
            return parse_duration(value, what=where)
        if kind in ("int", int, "int | None"):
            if isinstance(value, bool):
                raise ValueError(value)
            return int(value)
        if kind in ("float", float):
            return float(value)
        return str(value)
    except (ValueError, TypeError, OverflowError, InvalidArgumentError) as exc:
        raise ConfigurationError(f"{where} has an unusable value {value!r}: {exc}") from None


#: Settings whose values are secret: shown masked (a DSN's password).
SECRET_SETTINGS = frozenset({"dsn"})


def config_file_path() -> Path | None:
    """The config file in use: TXNQ_CONFIG, else ./txnq.toml if it exists."""
    explicit = os.environ.get("TXNQ_CONFIG")
    if explicit:
        return Path(explicit)
    default = Path("txnq.toml")
    return default if default.exists() else None


def _config_file_values() -> dict[str, Any]:
    path = config_file_path()
    if path is None:
        return {}
    if not path.exists():
        raise ConfigurationError(f"TXNQ_CONFIG names {path}, which does not exist")
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"config file {path} is not valid TOML: {exc}") from None
    section = data.get("txnq", data)
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(section) - known)
    if unknown:
        raise ConfigurationError(
            f"config file {path} has unknown keys {unknown}; known keys: {sorted(known)}"
        )
    return dict(section)


def load_settings(base: Settings | None = None, **overrides: Any) -> Settings:
    """Resolve settings from overrides, environment, config file and defaults."""
    return resolve_settings(base, **overrides)[0]


def resolve_settings(
    base: Settings | None = None, **overrides: Any
) -> tuple[Settings, dict[str, str]]:
    """The settings, and where each came from: ``default``, ``file <path>``,
    ``env TXNQ_<NAME>``, ``flag`` (an override) or ``base``."""
    known = {f.name for f in fields(Settings)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigurationError(f"unknown settings {unknown}; known: {sorted(known)}")
    values: dict[str, Any] = dataclasses.asdict(base) if base else {}
    sources = dict.fromkeys(known, "base" if base else "default")
    if base is None:
        path = config_file_path()
        for name, value in _config_file_values().items():
            values[name] = value
            sources[name] = f"file {path}"
        for name in known:
            env = os.environ.get(f"TXNQ_{name.upper()}")
            if env is not None and env != "":
                values[name] = env
                sources[name] = f"env TXNQ_{name.upper()}"
    for name, value in overrides.items():
        if value is not None:
            values[name] = value
            sources[name] = "flag"
    return Settings(**{k: _coerce(k, v) for k, v in values.items()}), sources
