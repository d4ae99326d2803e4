"""The coordinator worker: runs the marker phase (protocol steps 6-7) of the
decided transactions of the transaction coordinators it owns.

    txnq worker coordinator --dsn postgresql://...

Ownership of a coordinator is a lease: a session-level advisory lock on this
worker's session connection (sql/queries/coordinator.sql). Every worker also
holds a membership lock, so each can count the live workers and hold its fair
share (the shares differ by one at most): start three workers and the 16
coordinators split 6/5/5; stop one (or kill it: PostgreSQL drops its locks with
its session) and the others take its coordinators over at their next
rebalance, within ``poll_interval`` seconds. A worker that joins, hands
coordinators back or stops says so with a NOTIFY on channel
``txnq_coordinator_rebalance``, and its peers rebalance on it at once: the
split settles in a few round trips, not a few poll intervals.

A worker never acts on a lease it cannot renew: every rebalance (each poll
interval) asks PostgreSQL which leases its session holds, and it runs a marker
phase step only for those, and only until ``COORDINATOR_LEASE_SECONDS`` after
the last answer; a session that went silent fails within about that long
(TCP keepalives and user timeout), and the worker reconnects with backoff and
starts over. On SIGTERM it finishes the step in progress, unlocks its leases
and exits, within ``SHUTDOWN_TIMEOUT_SECONDS`` (docs/operations.md); a step
still waiting on a lock near the end of that time is cancelled (it rolls back,
the next owner redoes it), so the leases are handed back all the same.

Work comes from the transaction log: transactions in state COMMITTING or
ABORTING of an owned coordinator. A client runs the marker phase of its own
commit inline, so the periodic scan leaves decisions younger than
``grace_seconds`` alone; a NOTIFY on channel ``txnq_coordinator`` (sent by a
``commit(wait=False)``, by the scheduler's timeout aborts and by ``txnq txn
abort``) makes the worker look at once, with no grace. Each step runs in its
own PostgreSQL transaction and is idempotent, so a worker killed at any
instant leaves nothing another worker cannot finish.

With ``--metrics-port`` (``TXNQ_METRICS_PORT``) the worker serves Prometheus
metrics (txnq/metrics/): its leases and completions, besides the database
metrics.

For crash tests, ``TXNQ_FAILPOINT`` names a step after which the process
exits at once (txnq/failpoints.py): ``after_partition_marker``,
``after_subscription``, ``before_finish``, ``after_finish``.
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import select
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict
from txnq.workers.coordinator_thread import CoordinatorThread

from txnq import errors
from txnq.cluster.transactions import is_proxy, run_cluster_marker_phase
from txnq.database.connections import is_outage, libpq_dsn, scalar
from txnq.database.queries import QUERIES
from txnq.failpoints import failpoint
from txnq.lifecycle.job_failures import JobFailure, error_text, rows
from txnq.metrics import JobMetrics, MetricsServer, serve
from txnq.settings import Settings, load_settings
from txnq.transaction import MarkerPhaseError, TxnId, run_marker_phase

log = logging.getLogger("txnq.workers.coordinator")


class LeaseLostError(errors.TxnqError):
    """The worker's session no longer holds what the worker thought: start over."""


#: Decided transactions handled per scan.
BATCH = 100

#: A transaction whose marker phase failed is tried again after this long,
#: doubling up to the second (the scans go on with the others meanwhile).
RETRY_MIN_SECONDS = 1.0
RETRY_MAX_SECONDS = 60.0

#: The job name of a failed marker phase in txnq.job_failures and the metrics.
JOB = "marker_phase"

#: Work to do at once: a decision whose marker phase is left to the workers.
WORK_CHANNEL = "txnq_coordinator"
#: The shares changed: a worker joined, handed coordinators back or left.
#: Its peers rebalance on it at once rather than at their next poll, so a
#: split settles in a few round trips whatever ``poll_interval`` is (issue 20:
#: each step of a 6/5/5 split waited a poll of the worker that had to act).
REBALANCE_CHANNEL = "txnq_coordinator_rebalance"


class CoordinatorWorker:
    """One coordinator worker process's loop. ``run(stop)`` returns when ``stop`` is set."""

    def __init__(
        self,
        dsn: str,
        settings: Settings | None = None,
        *,
        name: str | None = None,
        poll_interval: float | None = None,
        grace_seconds: float = 1.0,
        metrics: MetricsServer | None = None,
    ) -> None:
        self.dsn = dsn
        self.settings = settings or load_settings()
        self.name = name or f"coordinator-{socket.gethostname()}-{os.getpid()}"
        self.poll_interval = (
            self.settings.poll_interval_seconds if poll_interval is None else poll_interval
        )
        self.lease_seconds = max(self.settings.coordinator_lease_seconds, 2 * self.poll_interval)
        self.grace_seconds = grace_seconds
        self.owned: set[int] = set()
        self._cluster = False  # connected to a cluster's proxy (set at connect)
        self.share = 0
        self.completed = 0
        self._member_key = random.randrange(1, 1 << 31)
        self._conn: psycopg.Connection[Any] | None = None
        self._stop: threading.Event | None = None
        # Monotonic time until which the leases in self.owned may be acted on:
        # set when PostgreSQL confirmed them, lease_seconds after the question.
        self._lease_deadline = 0.0
        self._confirmed_at: float | None = None
        self._last_error: str | None = None
        # Transactions whose marker phase failed: (failures in a row, when
        # to try again, monotonic). Left out of the scans until then, so a
        # batch of them never starves the others.
        self._failing: dict[TxnId, tuple[int, float]] = {}
        self._job_metrics: JobMetrics | None = None
        if metrics is not None:
            metrics.add_coordinator(self)
            metrics.add_health("coordinator", self.health)
            self._job_metrics = metrics.add_jobs()

    # -- the loop -------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Serve until ``stop`` is set, reconnecting with backoff (0.5 s doubling
        to 10 s, with jitter) whenever PostgreSQL goes away; on ``stop``, finish
        the transaction step in progress and hand every lease back."""
        self._stop = stop
        backoff = 0.5
        while not stop.is_set():
            try:
                self._connect()
                backoff = 0.5
                urgent = True
                while not stop.is_set():
                    self.rebalance()
                    self.work(grace=0.0 if urgent else self.grace_seconds)
                    urgent = self._wait(stop)
            except Exception as exc:
                # Whatever went wrong, the thread must not die and leave a live
                # process doing nothing: start over on a new session, with backoff.
                self._last_error = str(exc).strip().splitlines()[0] if str(exc) else repr(exc)
                delay = backoff * random.uniform(0.8, 1.2)
                expected = (
                    psycopg.OperationalError,
                    psycopg.InterfaceError,
                    errors.ServerUnavailableError,
                    LeaseLostError,
                )
                if stop.is_set():
                    # Stopping: most likely the statement was cancelled to meet
                    # the shutdown bound (CoordinatorThread.stop); the leases go
                    # back as on any stop, and the loop ends.
                    log.info(
                        "%s stopping: %s",
                        self.name,
                        self._last_error,
                        exc_info=not isinstance(exc, expected),
                    )
                    self._disconnect(reason="stopping")
                    continue
                log.warning(
                    "%s lost PostgreSQL (%s); reconnecting in %.1fs",
                    self.name,
                    self._last_error,
                    delay,
                    exc_info=not isinstance(exc, expected),
                )
                self._disconnect(reason="connection lost")
                stop.wait(delay)
                backoff = min(backoff * 2, 10.0)
        self._disconnect(reason="stopping")

    def _connect(self) -> None:
        # TCP keepalives and a user timeout: a connection whose peer went
        # silent fails within about a lease, rather than when the kernel
        # gives up after many minutes, so the worker never acts for long on a
        # session PostgreSQL may already have ended.
        lease_ms = int(self.lease_seconds * 1000)
        try:
            conn = psycopg.connect(
                libpq_dsn(self.dsn),
                autocommit=True,
                # The process id: pg_stat_activity tells the workers apart.
                application_name=f"txnq-coordinator-{os.getpid()}",
                connect_timeout=max(2, int(self.lease_seconds)),
                keepalives=1,
                keepalives_idle=max(1, int(self.lease_seconds / 4)),
                keepalives_interval=1,
                keepalives_count=3,
                tcp_user_timeout=lease_ms,
            )
        except psycopg.OperationalError as exc:
            raise errors.ServerUnavailableError(f"cannot connect to PostgreSQL: {exc}") from exc
        conn.execute(f"LISTEN {WORK_CHANNEL}")
        conn.execute(f"LISTEN {REBALANCE_CHANNEL}")
        if not scalar(conn, QUERIES["coordinator_join"], {"member_key": self._member_key}):
            self._member_key = random.randrange(1, 1 << 31)  # taken: another key next time
            conn.close()
            raise errors.ServerUnavailableError("membership key taken")
        # Through a cluster's proxy the marker phase spans the shards
        # (docs/cluster.md, "Transactions across shards").
        self._cluster = is_proxy(conn)
        # After the membership lock: a peer that wakes on it counts this worker.
        conn.execute(f"NOTIFY {REBALANCE_CHANNEL}")
        self._conn = conn
        self.owned = set()
        self._last_error = None
        log.info("%s joined", self.name)

    def cancel(self, timeout: float) -> None:
        """Cancel the statement the loop is waiting on, if any (from another
        thread; waits at most ``timeout`` seconds to deliver the request). The
        loop then meets an error, hands the leases back and, when it is
        stopping, returns. The cancelled step rolls back: every step is
        idempotent, the next owner redoes it."""
        conn = self._conn
        if conn is None or conn.closed:
            return
        try:
            conn.cancel_safe(timeout=timeout)
        except (psycopg.Error, OSError) as exc:
            log.warning("%s could not cancel its statement: %s", self.name, exc)

    def _disconnect(self, reason: str) -> None:
        """Hand the leases back (explicitly, then with the session) and close."""
        conn, self._conn = self._conn, None
        owned, self.owned = sorted(self.owned), set()
        self._lease_deadline = 0.0
        self._confirmed_at = None
        if conn is None:
            return
        try:
            if not conn.closed and not conn.broken:
                conn.execute("SELECT pg_advisory_unlock_all()")
                # The peers take the leases over now, not at their next poll
                # (a worker that dies sends nothing: they see it at that poll).
                conn.execute(f"NOTIFY {REBALANCE_CHANNEL}")
        except psycopg.Error:
            pass  # closing the session releases them anyway
        try:
            conn.close()
        except psycopg.Error:
            pass
        if owned:
            log.info("%s released coordinators %s (%s)", self.name, owned, reason)

    def _wait(self, stop: threading.Event) -> bool:
        """Sleep until a NOTIFY or the poll interval; True when woken by work to
        do (channel ``txnq_coordinator``), False at the poll interval or when a
        peer asked for a rebalance (``txnq_coordinator_rebalance``, not this
        session's own)."""
        conn = self._conn
        assert conn is not None
        own_pid = conn.info.backend_pid
        deadline = time.monotonic() + self.poll_interval
        ready = True  # look first: psycopg may hold notifications already (below)
        while not stop.is_set():
            if ready:
                # Also what psycopg read while this session ran a statement (a
                # rebalance, a step): it keeps those in a backlog that
                # notifies() returns first, and the socket then has nothing
                # left for select to see. Reading only when select saw the
                # socket ready missed them until the poll interval (a peer's
                # join went unnoticed for 30 s under CPU load: issue 20).
                notified = list(conn.notifies(timeout=0, stop_after=100))
                if any(n.channel == WORK_CHANNEL for n in notified):
                    return True
                if any(n.channel == REBALANCE_CHANNEL and n.pid != own_pid for n in notified):
                    return False  # the caller rebalances first thing
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            ready = bool(select.select([conn.fileno()], [], [], min(remaining, 0.25))[0])
        return False

    # -- leases ---------------------------------------------------------------

    def confirm_leases(self) -> set[int]:
        """Ask PostgreSQL which leases this session holds; keep acting only on
        those, until ``lease_seconds`` after the question. Raises
        :class:`LeaseLostError` when the membership lock is gone too (the
        session is not the one the worker thinks it is)."""
        conn = self._conn
        assert conn is not None
        asked = time.monotonic()
        held = {row[0] for row in conn.execute(QUERIES["coordinator_held_leases"]).fetchall()}
        lost = self.owned - held
        if lost:
            log.warning("%s no longer holds coordinators %s", self.name, sorted(lost))
            self.owned -= lost
        self._lease_deadline = asked + self.lease_seconds
        self._confirmed_at = asked
        return held

    def lease_valid(self) -> bool:
        """Whether the leases were confirmed less than ``lease_seconds`` ago."""
        return time.monotonic() < self._lease_deadline

    def rebalance(self) -> None:
        """Hold this worker's fair share of the coordinators: release extras, take free ones.

        The shares differ by one at most: with N coordinators and W live
        workers (ordered by membership key), the first N mod W workers hold
        ceil(N / W) and the others floor(N / W)."""
        conn = self._conn
        assert conn is not None
        members = [row[0] for row in conn.execute(QUERIES["coordinator_members"]).fetchall()]
        if self._member_key not in members:
            raise LeaseLostError(f"{self.name}: PostgreSQL no longer has this worker's membership")
        self.confirm_leases()
        ids = QUERIES["cluster_coordinator_ids" if self._cluster else "coordinator_ids"]
        tc_ids = [row[0] for row in conn.execute(ids).fetchall()]
        workers, rank = len(members), members.index(self._member_key)
        fair = len(tc_ids) // workers + (1 if rank < len(tc_ids) % workers else 0)
        self.share = fair
        extra = sorted(self.owned, reverse=True)[: max(0, len(self.owned) - fair)]
        for tc_id in extra:
            conn.execute(QUERIES["coordinator_release_lease"], {"tc_id": tc_id})
            self.owned.discard(tc_id)
            log.info("%s handed coordinator %s back (fair share %s)", self.name, tc_id, fair)
        if extra:
            conn.execute(f"NOTIFY {REBALANCE_CHANNEL}")  # the short ones take them at once
        gained = []
        for tc_id in tc_ids:
            if len(self.owned) >= fair:
                break
            if tc_id in self.owned:
                continue
            if scalar(conn, QUERIES["coordinator_try_lease"], {"tc_id": tc_id}):
                self.owned.add(tc_id)
                gained.append(tc_id)
        if gained:
            conn.execute(
                QUERIES["coordinator_record_owner"], {"owner": self.name, "tc_ids": gained}
            )
            log.info("%s took coordinators %s", self.name, gained)

    def health(self) -> tuple[bool, dict[str, Any]]:
        """For /healthz: connected, and the leases confirmed within ``lease_seconds``."""
        confirmed = self._confirmed_at
        age = None if confirmed is None else round(time.monotonic() - confirmed, 3)
        ok = self._conn is not None and self.lease_valid()
        details: dict[str, Any] = {
            "worker": self.name,
            "connected": self._conn is not None,
            "coordinators": sorted(self.owned),
            "fair_share": self.share,
            "leases_confirmed_seconds_ago": age,
        }
        if not ok:
            details["error"] = self._last_error or (
                "not connected yet" if self._conn is None else "leases not confirmed in time"
            )
        return ok, details

    # -- work -----------------------------------------------------------------

    def work(self, grace: float) -> int:
        """Finish the decided transactions of the owned coordinators; returns how many."""
        conn = self._conn
        assert conn is not None
        if not self.owned:
            return 0
        done = 0
        while True:
            done_before = done
            now = time.monotonic()
            waiting = [txn for txn, (_, retry_at) in self._failing.items() if retry_at > now]
            rows = conn.execute(
                QUERIES["coordinator_decided"],
                {
                    "tc_ids": sorted(self.owned),
                    "grace_seconds": grace,
                    "limit": BATCH,
                    "skip_tc": [txn.tc_id for txn in waiting],
                    "skip_seq": [txn.seq for txn in waiting],
                },
            ).fetchall()
            for tc_id, txn_seq, _state in rows:
                if self._stop is not None and self._stop.is_set():
                    return done  # stopping: the step in progress is done, the rest is handed back
                if not self.lease_valid():
                    # Not confirmed for a while (a long batch): ask again, and
                    # act only on the leases PostgreSQL says this session holds.
                    self.confirm_leases()
                if tc_id not in self.owned:
                    continue
                txn_id = TxnId(tc_id, txn_seq)
                try:
                    marker_phase = run_cluster_marker_phase if self._cluster else run_marker_phase
                    state = marker_phase(conn, txn_id, on_step=self._on_step)
                except psycopg.errors.DeadlockDetected:
                    continue  # retried at the next scan
                except Exception as exc:
                    if is_outage(exc) or isinstance(exc, LeaseLostError):
                        raise
                    # Whatever this transaction's rows hold, the others go on.
                    self._failed(conn, txn_id, exc)
                    continue
                if txn_id in self._failing:
                    self._resolved(conn, txn_id)
                done += 1
                self.completed += 1
                log.info("transaction %s %s", txn_id, state.lower())
            if len(rows) < BATCH and self._failing:
                self._forget_finished(conn, {TxnId(tc, seq) for tc, seq, _ in rows}, now)
            if len(rows) < BATCH or done == done_before:
                return done  # the rest (or the failed ones) at the next scan

    def _failed(self, conn: psycopg.Connection[Any], txn_id: TxnId, exc: Exception) -> None:
        """The marker phase of ``txn_id`` failed (on some partitions, or as a
        whole): log it, count it per topic (txnq_job_topic_failures_total,
        job marker_phase), record it in txnq.job_failures, and leave the
        transaction out of the scans for a while (backoff)."""
        count = self._failing.get(txn_id, (0, 0.0))[0] + 1
        delay = min(RETRY_MIN_SECONDS * 2 ** min(count - 1, 16), RETRY_MAX_SECONDS)
        self._failing[txn_id] = (count, time.monotonic() + delay)
        steps = (
            [(f.topic_id, f.partition, f.error) for f in exc.failures]
            if isinstance(exc, MarkerPhaseError)
            else [(0, -1, exc)]
        )
        (log.error if count == 1 else log.warning)(
            "transaction %s: marker phase failed (%s time(s) in a row; the others go on, "
            "this one is tried again in %.0fs): %s",
            txn_id,
            count,
            delay,
            exc,
            exc_info=not isinstance(exc, psycopg.Error | errors.TxnqError),
        )
        if self._cluster:
            return  # the proxy holds no txnq.job_failures: the log says it (docs/cluster.md)
        try:
            names = dict(
                conn.execute(
                    QUERIES["topic_names"], {"topic_ids": sorted({s[0] for s in steps})}
                ).fetchall()
            )
            failures = [
                JobFailure(
                    JOB,
                    names.get(topic_id),
                    topic_id or None,
                    None if partition < 0 else partition,
                    f"transaction {txn_id}",
                    error_text(error),
                    error.sqlstate if isinstance(error, psycopg.Error) else None,
                )
                for topic_id, partition, error in steps
            ]
            if self._job_metrics is not None:
                for failure in failures:
                    self._job_metrics.topic_failed(JOB, failure.topic)
            conn.execute(QUERIES["record_job_failures"], {"job": JOB, **rows(failures)})
        except psycopg.Error as record_error:
            if is_outage(record_error):
                raise
            log.warning("transaction %s: could not record the failure: %s", txn_id, record_error)

    def _forget_finished(
        self, conn: psycopg.Connection[Any], seen: set[TxnId], asked: float
    ) -> None:
        """Failed transactions a complete scan no longer returns although they
        were due: finished by someone else (a client, another worker) or no
        longer this worker's. Their failure rows go (a new owner that fails
        on one records it again)."""
        for txn_id, (_, retry_at) in list(self._failing.items()):
            if retry_at <= asked and txn_id not in seen:
                del self._failing[txn_id]
                if self._cluster:
                    continue
                conn.execute(
                    QUERIES["clear_job_failures"], {"job": JOB, "subject": f"transaction {txn_id}"}
                )

    def _resolved(self, conn: psycopg.Connection[Any], txn_id: TxnId) -> None:
        """A transaction whose marker phase had failed is finished now."""
        count, _ = self._failing.pop(txn_id)
        if not self._cluster:
            conn.execute(
                QUERIES["clear_job_failures"], {"job": JOB, "subject": f"transaction {txn_id}"}
            )
        log.info("transaction %s finished after %s failed attempt(s)", txn_id, count)

    @staticmethod
    def _on_step(step: str) -> None:
        if step == "partition":
            failpoint("after_partition_marker")
        elif step == "subscription":
            failpoint("after_subscription")
        elif step == "markers":
            failpoint("before_finish")
        elif step == "finish":
            failpoint("after_finish")


def run_coordinator(dsn: str, settings: Settings, *, announce: Any = None) -> None:
    """Run a coordinator worker in the foreground until SIGINT or SIGTERM
    (``txnq worker coordinator``, ``python -m txnq.workers.coordinator``), with
    the metrics and health endpoint the settings ask for; then stop within
    SHUTDOWN_TIMEOUT_SECONDS. ``announce`` (a callable) gets a line for the user."""
    from txnq.workers.scheduler import StopSignal

    metrics = serve(dsn, settings)
    try:
        with StopSignal() as stop:
            worker = CoordinatorWorker(dsn, settings, metrics=metrics)
            thread = CoordinatorThread(worker).start()
            log.info(
                "coordinator worker %s running on %s; stop with Ctrl-C or SIGTERM",
                worker.name,
                where(dsn),
            )
            if announce is not None:
                announce(f"coordinator worker {worker.name} running; stop with Ctrl-C or SIGTERM")
            received = stop.wait()
            log.info(
                "%s stopping (%s), at most %gs",
                worker.name,
                received,
                settings.shutdown_timeout_seconds,
            )
            if thread.stop(settings.shutdown_timeout_seconds):
                log.info("%s stopped; %s transactions completed", worker.name, worker.completed)
            else:
                log.warning(
                    "%s did not stop within %gs; exiting, its leases end with its session",
                    worker.name,
                    settings.shutdown_timeout_seconds,
                )
    finally:
        if metrics is not None:
            metrics.stop()


def where(dsn: str) -> str:
    """host:port/dbname of a DSN: what a log line may say, never the password."""
    params = conninfo_to_dict(libpq_dsn(dsn))
    return f"{params.get('host', '?')}:{params.get('port', 5432)}/{params.get('dbname', '?')}"


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m txnq.workers.coordinator``: a coordinator worker in the
    foreground until SIGINT/SIGTERM (``txnq worker coordinator`` is the same)."""
    from txnq.workers.scheduler import add_metrics_arguments

    from txnq.logs import configure

    parser = argparse.ArgumentParser(
        prog="python -m txnq.workers.coordinator", description="Run a txnq coordinator worker."
    )
    parser.add_argument("--dsn", metavar="URL", help="PostgreSQL URL (default: TXNQ_DSN)")
    parser.add_argument("--log-level", default="INFO", help="python logging level (INFO)")
    parser.add_argument(
        "--log-format", choices=("auto", "json", "text"), help="default: TXNQ_LOG_FORMAT, else auto"
    )
    add_metrics_arguments(parser)
    args = parser.parse_args(argv)
    try:
        settings = load_settings(
            metrics_port=args.metrics_port,
            metrics_host=args.metrics_host,
            log_format=args.log_format,
        )
        configure(args.log_level, settings.log_format)
        dsn = args.dsn or settings.dsn
        if dsn is None:
            raise errors.ConfigurationError(
                "the coordinator worker needs a database: pass --dsn or set TXNQ_DSN"
            )
        run_coordinator(dsn, settings)
    except errors.TxnqError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
