"""The metrics read from PostgreSQL at scrape time (:class:`DatabaseCollector`).

Workers do not see client traffic, so the produce and acknowledge rates come
from monotonically increasing positions kept in PostgreSQL -- a partition's
next offset (offsets are gapless), a cursor's mark-delete offset -- exposed as
counters for Prometheus' ``rate()``; backlogs, consumers and transactions in
flight as gauges; lifecycle totals from ``txnq.gc_runs``; and, counted since
the endpoint started, the transactions that completed (by outcome and reason)
with a histogram of their completion time from the transaction log. One
scrape is two statements in one read-only transaction on the collector's own
connection, under a statement and a lock timeout, and never reads
``txnq.entries`` (sql/queries/metrics.sql).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import psycopg
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from txnq import errors
from txnq.database.connections import connect
from txnq.database.queries import QUERIES

log = logging.getLogger("txnq.metrics")

#: A scrape's statements give up after this long (Prometheus' default scrape
#: timeout is 10 s), and never wait longer than LOCK_TIMEOUT behind DDL such as
#: entry-log GC's DETACH/DROP.
STATEMENT_TIMEOUT_SECONDS = 5.0
LOCK_TIMEOUT_SECONDS = 1.0

#: New transactions examined per coordinator and scrape: under a burst the
#: completion counters catch up over the next scrapes instead of one scrape
#: reading without bound.
TRANSACTIONS_PER_SCRAPE = 10_000

#: Buckets of the completion histogram: from a one-statement commit inside
#: PostgreSQL (well under a millisecond) to a timeout abort a coordinator
#: finished minutes later.
COMPLETION_BUCKETS: tuple[float, ...] = (
    0.0005,
    0.001,
    0.0025,
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
)

#: The samples of ``metrics_snapshot``: its metric key -> (kind, Prometheus
#: name without ``_total``, help, label names).
SNAPSHOT_METRICS: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    "entries_appended": (
        "counter",
        "txnq_topic_entries_appended",
        "Entries appended to the topic's partitions: producer batches and transaction "
        "markers (the sum of the partitions' next offsets).",
        ("topic",),
    ),
    "bytes_appended": (
        "counter",
        "txnq_topic_payload_bytes_appended",
        "Payload bytes appended to the topic (its ledgers' sizes).",
        ("topic",),
    ),
    "partitions": ("gauge", "txnq_topic_partitions", "Partitions of the topic.", ("topic",)),
    "entries_acknowledged": (
        "counter",
        "txnq_subscription_entries_acknowledged",
        "Entries the subscription has passed (mark-delete offset + 1 per partition, plus "
        "whole entries acknowledged above it); includes markers, entries skipped by the "
        "initial position, seeks and TTL. A seek backwards shows as a counter reset.",
        ("topic", "subscription"),
    ),
    "backlog_entries": (
        "gauge",
        "txnq_subscription_backlog_entries",
        "Entries a consumer of the subscription can read and has not acknowledged "
        "(up to the max read offset, or the high watermark for read_uncommitted).",
        ("topic", "subscription"),
    ),
    "backlog_bytes": (
        "gauge",
        "txnq_subscription_backlog_bytes",
        "Payload bytes of the backlog, estimated from ledger sizes (exact when the backlog "
        "covers whole ledgers or the entries are of one size).",
        ("topic", "subscription"),
    ),
    "consumers": (
        "gauge",
        "txnq_subscription_consumers",
        "Consumers connected to the subscription (lease not expired).",
        ("topic", "subscription"),
    ),
    "transactions": (
        "gauge",
        "txnq_transactions",
        "Transactions in flight, by state (OPEN, COMMITTING, ABORTING).",
        ("state",),
    ),
    "oldest_open_transaction": (
        "gauge",
        "txnq_transaction_oldest_open_seconds",
        "Age of the oldest OPEN transaction (0 when none is open).",
        (),
    ),
    "transactions_opened": (
        "counter",
        "txnq_transactions_opened",
        "Transactions ever opened (transaction ids are never reused).",
        (),
    ),
    "gc_bytes": (
        "counter",
        "txnq_gc_reclaimed_bytes",
        "Bytes reclaimed by the lifecycle jobs (txnq.gc_runs, dry runs excluded): "
        "retention counts the payload bytes of the ledgers it deleted, gc the on-disk "
        "bytes of the entry logs it dropped.",
        ("job",),
    ),
    "gc_items": (
        "counter",
        "txnq_gc_items",
        "Items the lifecycle jobs handled: ttl cursors moved, retention ledgers deleted, "
        "gc entry logs dropped.",
        ("job",),
    ),
    "gc_runs": (
        "counter",
        "txnq_gc_runs",
        "Lifecycle job runs that did something (each is a row of txnq.gc_runs).",
        ("job",),
    ),
}


def _le(bound: float) -> str:
    """A bucket's ``le`` label as Prometheus clients write it: 0.5, 1.0, +Inf."""
    return "+Inf" if bound == float("inf") else repr(float(bound))


class _Histogram:
    """Cumulative bucket counts and a sum, kept here because the observations
    come from rows the collector reads (a prometheus_client Histogram would do
    too, but would have to live in a registry of its own)."""

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)  # the last one is +Inf
        self.sum = 0.0

    def observe(self, value: float) -> None:
        for index, bound in enumerate(self.bounds):
            if value <= bound:
                self.counts[index] += 1
                break
        else:
            self.counts[-1] += 1
        self.sum += value

    def buckets(self) -> list[tuple[str, float]]:
        cumulative, result = 0, []
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            cumulative += count
            result.append((_le(bound), float(cumulative)))
        return result


class DatabaseCollector(Collector):
    """The metrics read from PostgreSQL at scrape time (see the module docstring).

    Scrapes are serialised (one connection, and the completion counters keep
    state between scrapes). When PostgreSQL cannot be read, the database
    metrics are left out of that scrape, ``txnq_metrics_database_up`` is 0 and
    ``txnq_metrics_scrape_errors_total`` counts it; the next scrape reconnects.
    """

    def __init__(
        self,
        dsn: str,
        *,
        statement_timeout: float = STATEMENT_TIMEOUT_SECONDS,
        lock_timeout: float = LOCK_TIMEOUT_SECONDS,
        transactions_per_scrape: int = TRANSACTIONS_PER_SCRAPE,
    ) -> None:
        self.dsn = dsn
        self._session = {
            "statement_timeout_ms": max(1, int(statement_timeout * 1000)),
            "lock_timeout_ms": max(1, int(lock_timeout * 1000)),
        }
        self._limit = transactions_per_scrape
        self._lock = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        # Completion counting: per coordinator the first transaction number
        # not looked at yet, and the transactions seen in flight. None until
        # the starting point is read (start(), else the first scrape).
        self._next_seqs: dict[int, int] | None = None
        self._pending: set[tuple[int, int]] = set()
        self._completed: dict[tuple[str, str], int] = {}
        self._completion = {
            outcome: _Histogram(COMPLETION_BUCKETS) for outcome in ("committed", "aborted")
        }
        self._up = 0
        self._errors = 0
        self._scrape_seconds = 0.0
        self._failing = False

    # -- life cycle --

    def start(self) -> None:
        """Read where the completion counters start (now, rather than at the
        first scrape). PostgreSQL being unavailable is logged, not raised: the
        first scrape that reaches it starts them."""
        with self._lock:
            try:
                conn = self._connection()
                with conn.transaction():
                    self._start_counting(conn)
            except (psycopg.Error, errors.TxnqError) as exc:
                self._failed(exc)

    def close(self) -> None:
        with self._lock:
            self._drop_connection()

    # -- scraping --

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            started = time.monotonic()
            try:
                samples = self._scrape()
            except (psycopg.Error, errors.TxnqError) as exc:
                self._failed(exc)
                samples = None
            else:
                if self._failing:
                    log.info("metrics: PostgreSQL is readable again")
                self._failing = False
                self._up = 1
            self._scrape_seconds = time.monotonic() - started
            families = list(self._families(samples)) if samples is not None else []
            families.extend(self._own_families())
        return families

    def describe(self) -> Iterable[Metric]:
        # The families depend on the database: describing them would mean a
        # scrape at registration (prometheus_client calls collect() when a
        # collector has no describe()).
        return []

    def _connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed:
            conn = connect(self.dsn, application_name="txnq-metrics")
            try:
                conn.execute(QUERIES["metrics_session"], self._session)
                conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
                conn.read_only = True
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn

    def _drop_connection(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except psycopg.Error:
                pass
            self._conn = None

    def _failed(self, exc: BaseException) -> None:
        self._errors += 1
        self._up = 0
        self._drop_connection()
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        # One warning per outage, not one per scrape.
        log.log(
            logging.DEBUG if self._failing else logging.WARNING,
            "metrics: cannot read PostgreSQL, database metrics left out: %s",
            first_line,
        )
        self._failing = True

    def _scrape(self) -> list[tuple[str, str | None, str | None, str | None, float]]:
        conn = self._connection()
        # One snapshot for both statements; READ ONLY and the timeouts come
        # from the session (metrics_session).
        with conn.transaction():
            samples: list[tuple[str, str | None, str | None, str | None, float]] = [
                (row[0], row[1], row[2], row[3], float(row[4]))
                for row in conn.execute(QUERIES["metrics_snapshot"]).fetchall()
            ]
            if self._next_seqs is None:
                self._start_counting(conn)
            else:
                self._count_completions(conn)
        return samples

    # -- transaction completions --

    def _start_counting(self, conn: psycopg.Connection[Any]) -> None:
        next_seqs: dict[int, int] = {}
        pending: set[tuple[int, int]] = set()
        for tc_id, next_seq, txn_seq in conn.execute(QUERIES["metrics_transaction_start"]):
            if next_seq is not None:
                next_seqs[tc_id] = next_seq
            else:
                pending.add((tc_id, txn_seq))
        self._next_seqs, self._pending = next_seqs, pending

    def _count_completions(self, conn: psycopg.Connection[Any]) -> None:
        assert self._next_seqs is not None
        known = dict(self._next_seqs)
        pending = sorted(self._pending)
        rows = conn.execute(
            QUERIES["metrics_transactions"],
            {
                "tc_ids": list(known),
                "next_seqs": list(known.values()),
                "pending_tc_ids": [tc_id for tc_id, _ in pending],
                "pending_seqs": [seq for _, seq in pending],
                "limit": self._limit,
            },
        ).fetchall()
        seen: set[tuple[int, int]] = set()
        for tc_id, txn_seq, state, reason, seconds in rows:
            key = (tc_id, txn_seq)
            seen.add(key)
            if txn_seq >= known.get(tc_id, 1):
                self._next_seqs[tc_id] = max(self._next_seqs.get(tc_id, 1), txn_seq + 1)
            if state in ("COMMITTED", "ABORTED"):
                self._pending.discard(key)
                outcome = state.lower()
                label = (outcome, reason or "")
                self._completed[label] = self._completed.get(label, 0) + 1
                if seconds is not None:
                    self._completion[outcome].observe(max(0.0, float(seconds)))
            else:
                self._pending.add(key)
        # A transaction seen in flight whose row is gone is not waited for.
        self._pending.difference_update(set(pending) - seen)

    # -- families --

    @staticmethod
    def _families(
        samples: list[tuple[str, str | None, str | None, str | None, float]],
    ) -> Iterator[Metric]:
        families: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}
        for key, (kind, name, documentation, labels) in SNAPSHOT_METRICS.items():
            family_type = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
            families[key] = family_type(name, documentation, labels=list(labels))
        for key, topic, subscription, label, value in samples:
            _kind, _name, _doc, labels = SNAPSHOT_METRICS[key]
            given = {"topic": topic, "subscription": subscription, "job": label, "state": label}
            families[key].add_metric([str(given[name]) for name in labels], value)
        yield from families.values()

    def _own_families(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "txnq_metrics_database_up",
            "1 when this scrape read PostgreSQL, else 0 (the database metrics are left out).",
        )
        up.add_metric([], self._up)
        yield up
        errors_family = CounterMetricFamily(
            "txnq_metrics_scrape_errors",
            "Scrapes that could not read PostgreSQL (unavailable, timed out).",
        )
        errors_family.add_metric([], self._errors)
        yield errors_family
        duration = GaugeMetricFamily(
            "txnq_metrics_scrape_duration_seconds", "How long this scrape's queries took."
        )
        duration.add_metric([], self._scrape_seconds)
        yield duration
        if self._next_seqs is None:
            return  # not started: no honest zero to show
        completed = CounterMetricFamily(
            "txnq_transactions_completed",
            "Transactions that reached COMMITTED or ABORTED since this endpoint started, by "
            "outcome and reason (client, timeout, fenced, admin).",
            labels=["outcome", "reason"],
        )
        for outcome in ("committed", "aborted"):
            if not any(label[0] == outcome for label in self._completed):
                completed.add_metric([outcome, "client"], 0)
        for (outcome, reason), count in sorted(self._completed.items()):
            completed.add_metric([outcome, reason], count)
        yield completed
        histogram = HistogramMetricFamily(
            "txnq_transaction_completion_seconds",
            "Time from a transaction's decision (COMMITTING/ABORTING) to its completion "
            "(COMMITTED/ABORTED) in the transaction log, for transactions completed since "
            "this endpoint started: the marker phase, plus any wait for a coordinator worker.",
            labels=["outcome"],
        )
        for outcome, observed in self._completion.items():
            histogram.add_metric([outcome], observed.buckets(), observed.sum)
        yield histogram
