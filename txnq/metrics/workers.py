"""What the worker processes measure themselves: the scheduler's job runs
(:class:`JobMetrics`) and a coordinator worker's leases and completions
(:class:`CoordinatorCollector`)."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Protocol

from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

#: Buckets of the job duration histogram: one-second jobs to an hour-long GC.
JOB_BUCKETS: tuple[float, ...] = (
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    900.0,
    3600.0,
)


class JobMetrics:
    """The scheduler's job runs: durations, failures, skips, last success."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.duration = Histogram(
            "txnq_job_duration_seconds",
            "How long a run of a scheduler job took (runs that failed included).",
            ["job"],
            buckets=JOB_BUCKETS,
            registry=registry,
        )
        self.failures = Counter(
            "txnq_job_failures",
            "Runs of a scheduler job that raised an error.",
            ["job"],
            registry=registry,
        )
        self.skipped = Counter(
            "txnq_job_skipped",
            "Runs of a scheduler job skipped: another process was running it, or "
            "PostgreSQL was unavailable.",
            ["job"],
            registry=registry,
        )
        self.last_success = Gauge(
            "txnq_job_last_success_timestamp_seconds",
            "When a run of the job last succeeded (Unix time; 0: not yet in this process).",
            ["job"],
            registry=registry,
        )
        self.topic_failures = Counter(
            "txnq_job_topic_failures",
            "Topics a run of a job could not process (the run went on with the others and "
            "counts as a success): TTL, retention, backlog quota; GC counts entry logs and "
            'the coordinators\' marker_phase transactions, with topic "" when no topic is '
            "known. txnq.job_failure_status shows what is failing now.",
            ["job", "topic"],
            registry=registry,
        )

    def declare(self, job: str) -> None:
        """Make the job's series exist (at 0) before its first run."""
        self.duration.labels(job)
        self.failures.labels(job)
        self.skipped.labels(job)
        self.last_success.labels(job)

    def observe(self, job: str, seconds: float, *, ok: bool) -> None:
        self.duration.labels(job).observe(seconds)
        if ok:
            self.last_success.labels(job).set(time.time())
        else:
            self.failures.labels(job).inc()

    def skip(self, job: str) -> None:
        self.skipped.labels(job).inc()

    def topic_failed(self, job: str, topic: str | None) -> None:
        self.topic_failures.labels(job, topic or "").inc()


class CoordinatorWorker(Protocol):
    """What the collector reads of a coordinator worker (workers/coordinator.py)."""

    name: str
    owned: set[int]
    completed: int


class CoordinatorCollector(Collector):
    """A coordinator worker's share of the work: its leases and what it completed."""

    def __init__(self, worker: CoordinatorWorker) -> None:
        self.worker = worker

    def collect(self) -> Iterable[Metric]:
        leases = GaugeMetricFamily(
            "txnq_coordinator_leases",
            "Transaction coordinators this worker holds.",
            labels=["worker"],
        )
        leases.add_metric([self.worker.name], len(self.worker.owned))
        completed = CounterMetricFamily(
            "txnq_coordinator_transactions_completed",
            "Decided transactions whose marker phase this worker finished (clients finish "
            "their own commits; the workers finish what a dead client or a timeout left).",
            labels=["worker"],
        )
        completed.add_metric([self.worker.name], self.worker.completed)
        return [leases, completed]
