"""Prometheus metrics: the HTTP endpoint of a worker (docs/metrics.md).

A worker started with ``--metrics-port N`` (or ``TXNQ_METRICS_PORT``) serves
``http://METRICS_HOST:N/metrics`` (host 127.0.0.1 unless ``--metrics-host`` /
``TXNQ_METRICS_HOST`` says otherwise). What it serves:

- **From the database, read at scrape time** (``database``,
  :class:`DatabaseCollector`): produce and acknowledge rates from positions
  PostgreSQL keeps, backlogs, consumers, transactions in flight and
  completed, lifecycle totals; never from ``txnq.entries``.
- **Health** at ``/healthz`` on the same port (``server``,
  :meth:`MetricsServer.add_health`):
  200 and ``{"status": "ok", ...}`` when every check the workers of the
  process registered passes (connected to PostgreSQL, leases confirmed), 503
  and ``"status": "unavailable"`` with each check's details otherwise; for an
  orchestrator's liveness/readiness probe or a load balancer.
- **From the process** (``workers``): the scheduler's job runs (:class:`JobMetrics`), a
  coordinator worker's leases and completions (:class:`CoordinatorCollector`),
  and prometheus_client's process and Python collectors.

Every worker serves the database metrics, so with several workers scraped the
same database-derived series appear once per worker: aggregate them with
``max`` (docs/metrics.md has PromQL).
"""

from __future__ import annotations

from txnq.metrics.database import (
    COMPLETION_BUCKETS,
    LOCK_TIMEOUT_SECONDS,
    SNAPSHOT_METRICS,
    STATEMENT_TIMEOUT_SECONDS,
    TRANSACTIONS_PER_SCRAPE,
    DatabaseCollector,
)
from txnq.metrics.server import DEFAULT_HOST, HealthCheck, MetricsServer, check_port, serve
from txnq.metrics.workers import JOB_BUCKETS, CoordinatorCollector, CoordinatorWorker, JobMetrics

__all__ = [
    "COMPLETION_BUCKETS",
    "DEFAULT_HOST",
    "JOB_BUCKETS",
    "LOCK_TIMEOUT_SECONDS",
    "SNAPSHOT_METRICS",
    "STATEMENT_TIMEOUT_SECONDS",
    "TRANSACTIONS_PER_SCRAPE",
    "CoordinatorCollector",
    "CoordinatorWorker",
    "DatabaseCollector",
    "HealthCheck",
    "JobMetrics",
    "MetricsServer",
    "check_port",
    "serve",
]
