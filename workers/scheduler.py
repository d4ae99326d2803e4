"""The scheduler worker: periodic maintenance jobs that call the library.

    txnq worker scheduler --dsn postgresql://...      # or: python -m txnq.workers.scheduler

A job is one line in :data:`JOBS` (workers/scheduler_jobs.py): a name, a
function of a :class:`JobContext` that returns what it did (for the log; None
when it found nothing to do, logged at DEBUG only, so a job that runs every
second does not flood the log), and how often it runs (``every``: a number of
seconds or a function of the settings; None runs it once, when the scheduler
starts). Jobs that exist today:

- ``publish_settings`` (once at start): write the server-side settings
  (ledger and entry-log rollover, transaction coordinators, maximum
  transaction timeout) into ``txnq.config``;
- ``roll_entry_log`` (every 60 s): ``txnq.roll_entry_log_v1(false)``. Appends
  check the entry log's size only on a sample, so an idle system rolls by age
  only through this job;
- ``abort_timed_out`` (every 1 s): ``txnq.abort_timed_out_v2`` decides ABORTING
  (reason ``timeout``) for open transactions past their deadline; coordinator
  workers then finish the abort (docs/transactions.md);
- ``expire_ttl`` (every ``TTL_CHECK_INTERVAL_SECONDS``, 300 s),
  ``apply_retention`` (every ``RETENTION_CHECK_INTERVAL_SECONDS``, 120 s) and
  ``collect_entry_logs`` (every ``GC_MINOR_INTERVAL_SECONDS``, 1 h: drop dead
  entry logs, compact those under GC_MINOR_THRESHOLD live),
  ``compact_entry_logs_major`` (every ``GC_MAJOR_INTERVAL_SECONDS``, 1 d: the
  same up to GC_MAJOR_THRESHOLD) and ``gc_doctor`` (daily, reporting dirty
  data only): the message lifecycle of txnq/lifecycle/ (docs/lifecycle.md);
- ``backlog_quota`` (every ``BACKLOG_QUOTA_CHECK_INTERVAL_SECONDS``, 60 s):
  checks each topic's backlog quota, evicts or records it for the producers
  (txnq/lifecycle/backlog_quota.py, docs/backlog-quota.md);

TTL, retention, the backlog quota check and GC go on when one topic (entry
log) fails: the run's report lists it, the log says it, and
``txnq_job_topic_failures_total{job, topic}`` counts it (txnq.lifecycle,
docs/lifecycle.md "When a job fails"); the run itself counts as a success.
- ``vacuum_hot_tables`` (every 60 s): VACUUM the small hot tables whose dead
  tuples piled up, where autovacuum is off or behind.

With ``--metrics-port`` (``TXNQ_METRICS_PORT``) the scheduler serves Prometheus
metrics (txnq/metrics/, docs/metrics.md): each job's run durations,
failures, skipped runs and last success, besides the database metrics.

Any number of scheduler processes may run against one database: each run of a
job first takes a session-level advisory lock for the job (on a connection the
job keeps for itself) and skips the run when another process holds it, so one
instance of a job runs at a time across processes. Within a process APScheduler
runs one instance of each job at a time (``max_instances=1``).
"""

from __future__ import annotations

import argparse
import logging
import os
import select
import signal
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import psycopg
from apscheduler.schedulers.background import BackgroundScheduler
from psycopg.conninfo import conninfo_to_dict
from txnq.workers.scheduler_jobs import JOBS, Job, JobContext

from txnq import errors
from txnq.client import Client
from txnq.database.connections import connect, libpq_dsn
from txnq.database.queries import QUERIES
from txnq.metrics import JobMetrics, MetricsServer, check_port, serve
from txnq.settings import Settings, load_settings

log = logging.getLogger("txnq.workers.scheduler")

#: /healthz reports the scheduler unhealthy when it has not reached PostgreSQL
#: for this long (the transaction-timeout job tries every second).
HEALTH_WINDOW_SECONDS = 15.0

# -- running jobs -------------------------------------------------------------


class Contact:
    """When the scheduler last reached PostgreSQL, for /healthz and the log:
    the first failed run of an outage is a WARNING, the others DEBUG (one job
    runs every second), and the first success after it says PostgreSQL is back.
    Reconnecting is per job run: a job's next run connects again, so the retry
    interval is the job's own (1 s for transaction timeouts)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.last: float | None = None
        self.down_since: float | None = None
        self.error: str | None = None

    def made(self) -> None:
        with self._lock:
            self.last = time.monotonic()
            if self.down_since is not None:
                log.info(
                    "PostgreSQL is back after %.1fs; jobs run again",
                    self.last - self.down_since,
                )
            self.down_since, self.error = None, None

    def lost(self, job: str, exc: BaseException) -> None:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        with self._lock:
            first = self.down_since is None
            if first:
                self.down_since = time.monotonic()
            self.error = text
        if first:
            log.warning(
                "job %s: skipped, PostgreSQL is unavailable (%s); each job retries at its next run",
                job,
                text,
            )
        else:
            log.debug("job %s: skipped, PostgreSQL is still unavailable: %s", job, text)


class _JobRunner:
    """Runs one job under its advisory lock, on a connection kept for the lock."""

    def __init__(
        self,
        job: Job,
        client: Client,
        metrics: JobMetrics | None = None,
        contact: Contact | None = None,
    ) -> None:
        self.job = job
        self._metrics = metrics
        self._contact = contact or Contact()
        self._context = JobContext(client, metrics=metrics, job=job.name)
        self._client = client
        self._lock_conn: psycopg.Connection[Any] | None = None
        self._mutex = threading.Lock()  # a one-shot run and close() may overlap

    @property
    def busy(self) -> bool:
        return self._mutex.locked()

    def __call__(self) -> None:
        with self._mutex:
            self._run_once()

    def _run_once(self) -> None:
        name, key = self.job.name, self.job.lock_key
        try:
            if self._lock_conn is None or self._lock_conn.closed:
                self._lock_conn = connect(
                    self._client.dsn, application_name=f"txnq-scheduler-{name}"
                )
            row = self._lock_conn.execute(QUERIES["job_try_lock"], {"key": key}).fetchone()
        except (psycopg.Error, errors.TxnqError) as exc:
            self._contact.lost(name, exc)
            self._drop_connection()
            if self._metrics is not None:
                self._metrics.skip(name)
            return
        self._contact.made()
        if row is None or not row[0]:
            log.debug("job %s: skipped, another process is running it", name)
            if self._metrics is not None:
                self._metrics.skip(name)
            return
        started = time.monotonic()
        try:
            outcome = self.job.run(self._context)
        except Exception as exc:
            if self._metrics is not None:
                self._metrics.observe(name, time.monotonic() - started, ok=False)
            log.error(
                "job %s: failed after %.3fs: %s: %s",
                name,
                time.monotonic() - started,
                type(exc).__name__,
                exc,
                exc_info=not isinstance(exc, errors.TxnqError | psycopg.OperationalError),
            )
        else:
            elapsed = time.monotonic() - started
            if self._metrics is not None:
                self._metrics.observe(name, elapsed, ok=True)
            if outcome is None:
                log.debug("job %s: nothing to do (%.3fs)", name, elapsed)
            else:
                log.info("job %s: %s (%.3fs)", name, outcome, elapsed)
        finally:
            try:
                self._lock_conn.execute(QUERIES["job_release_lock"], {"key": key})
            except psycopg.Error:
                self._drop_connection()  # closing the session releases the lock

    def _drop_connection(self) -> None:
        if self._lock_conn is not None:
            try:
                self._lock_conn.close()
            except psycopg.Error:
                pass
            self._lock_conn = None

    def close(self) -> None:
        with self._mutex:
            self._drop_connection()


class Scheduler:
    """Runs :data:`JOBS` against one database.

    ``start()`` connects (``dsn``, else TXNQ_DSN, else the embedded server, as
    :class:`txnq.Client`), runs the one-shot jobs, then schedules the periodic
    ones in a background thread; ``shutdown()`` stops them and waits for runs in
    progress; ``run_forever()`` does both around a wait for SIGINT or SIGTERM.

    Job runs are measured on ``metrics`` (a :class:`txnq.metrics.MetricsServer`
    shared with other workers of the process), else on an endpoint of its own
    when the settings have METRICS_PORT (started and stopped with the scheduler).
    """

    def __init__(
        self,
        dsn: str | None = None,
        *,
        settings: Settings | None = None,
        jobs: Sequence[Job] = JOBS,
        metrics: MetricsServer | None = None,
    ) -> None:
        self._dsn = dsn
        self._settings = settings
        self.jobs = tuple(jobs)
        self.client: Client | None = None
        self.metrics = metrics
        self._own_metrics: MetricsServer | None = None
        self._runners: list[_JobRunner] = []
        self._scheduler: BackgroundScheduler | None = None
        self.contact = Contact()

    @property
    def dsn(self) -> str | None:
        return self.client.dsn if self.client is not None else self._dsn

    def start(self) -> None:
        if self.client is not None:
            raise errors.TxnqError("the scheduler is running already")
        settings = self._settings or load_settings()
        client = Client(self._dsn, settings=settings)
        self.client = client
        if self.metrics is None:
            try:
                self._own_metrics = self.metrics = serve(client.dsn, settings)
            except BaseException:
                self._close_connections()
                raise
        job_metrics = self.metrics.add_jobs() if self.metrics is not None else None
        if self.metrics is not None:
            self.metrics.add_health("scheduler", self.health)
        scheduler = BackgroundScheduler(
            timezone=UTC,
            # A run that was due while the previous one was still going is
            # dropped, not queued up; one run at a time per job and process.
            job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": None},
        )
        now = datetime.now(UTC)
        try:
            for job in self.jobs:
                if job_metrics is not None:
                    job_metrics.declare(job.name)
                runner = _JobRunner(job, client, job_metrics, self.contact)
                self._runners.append(runner)
                interval = job.interval(settings)
                if interval is None:
                    runner()
                    continue
                scheduler.add_job(
                    runner,
                    "interval",
                    seconds=interval,
                    id=job.name,
                    name=job.name,
                    next_run_time=now,
                )
                log.info("job %s: every %gs", job.name, interval)
            scheduler.start()
        except BaseException:
            self._close_connections()
            raise
        self._scheduler = scheduler

    def shutdown(self, wait: bool = True) -> None:
        """Stop scheduling, wait for runs in progress (``wait``), disconnect. Idempotent."""
        scheduler, self._scheduler = self._scheduler, None
        if scheduler is not None and scheduler.running:
            scheduler.shutdown(wait=wait)
        self._close_connections()

    def _close_connections(self) -> None:
        for runner in self._runners:
            runner.close()
        self._runners = []
        if self._own_metrics is not None:
            self._own_metrics.stop()
            self._own_metrics = self.metrics = None
        if self.client is not None:
            self.client.close()
            self.client = None

    def health(self) -> tuple[bool, dict[str, Any]]:
        """For /healthz: scheduling, and PostgreSQL reached within HEALTH_WINDOW_SECONDS
        (the transaction-timeout job asks every second)."""
        running = self._scheduler is not None and self._scheduler.running
        last = self.contact.last
        age = None if last is None else round(time.monotonic() - last, 3)
        ok = running and age is not None and age < HEALTH_WINDOW_SECONDS
        details: dict[str, Any] = {"running": running, "postgres_reached_seconds_ago": age}
        if self.contact.error is not None:
            details["error"] = self.contact.error
        return ok, details

    def run_forever(self, shutdown_timeout: float | None = None) -> None:
        """Start, run until SIGINT or SIGTERM, then shut down: wait for the job
        runs in progress at most ``shutdown_timeout`` seconds (default
        SHUTDOWN_TIMEOUT_SECONDS). A run still going then is abandoned: the
        process exits, and PostgreSQL ends its sessions, which releases the
        job's advisory lock; every job is safe to cut off (GC resumes an
        unfinished compaction at its next run)."""
        timeout = (
            (self._settings or load_settings()).shutdown_timeout_seconds
            if shutdown_timeout is None
            else shutdown_timeout
        )
        stop = StopSignal()
        with stop:
            self.start()
            try:
                log.info("scheduler running on %s; stop with Ctrl-C or SIGTERM", self._where())
                received = stop.wait()
                log.info("scheduler stopping (%s), at most %gs", received, timeout)
            except BaseException:
                self.shutdown()
                raise
            if not self.shutdown_within(timeout):
                busy = ", ".join(r.job.name for r in self._runners if r.busy) or "a job"
                log.warning(
                    "scheduler: %s still running after %gs; exiting without it (its "
                    "advisory lock ends with the session, its next run resumes the work)",
                    busy,
                    timeout,
                )
                logging.shutdown()
                os._exit(0)
            log.info("scheduler stopped")

    def shutdown_within(self, timeout: float) -> bool:
        """:meth:`shutdown`, waiting at most ``timeout`` seconds; True when it finished."""
        done = threading.Event()

        def stop() -> None:
            try:
                self.shutdown()
            finally:
                done.set()

        threading.Thread(target=stop, name="txnq-scheduler-shutdown", daemon=True).start()
        return done.wait(timeout)

    def _where(self) -> str:
        # host:port/dbname, never the password.
        params = conninfo_to_dict(libpq_dsn(self.dsn)) if self.dsn else {}
        return f"{params.get('host', '?')}:{params.get('port', 5432)}/{params.get('dbname', '?')}"


class StopSignal:
    """SIGINT and SIGTERM handled as a request to stop, while in the ``with`` block.

    ``wait()`` blocks until one arrives and returns its name. The previous
    handlers come back on exit. Only usable from the main thread (Python
    delivers signals there).

    The handler takes no lock. Python runs it in the main thread between two
    bytecodes of whatever that thread is doing, and the main thread spends its
    time in ``wait()``: were the handler to set a ``threading.Event`` (as it
    once did) while ``wait()`` was inside ``Event.wait`` holding the event's
    own non-reentrant lock, the handler would block on that lock forever and
    the process would never stop (issue 20: a coordinator worker that did not
    exit after SIGTERM, seen under CPU load, where the main thread is more
    often preempted inside that window). So the handler only records the
    signal and writes a byte to a pipe, and ``wait()`` sleeps in ``select`` on
    the pipe: woken at once, with no lock anywhere on the path.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self._received: str | None = None
        self._previous: dict[int, Any] = {}
        # The self-pipe: -1 outside the ``with`` block.
        self._reader = -1
        self._writer = -1

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        # No lock here (see the class docstring): an attribute and a
        # non-blocking write, both safe wherever the main thread was.
        if self._received is None:
            self._received = signal.Signals(signum).name
        if self._writer >= 0:
            try:
                os.write(self._writer, b"\0")
            except OSError:
                pass  # the pipe is full: a byte is there already, wait() wakes anyway

    def __enter__(self) -> StopSignal:
        self._reader, self._writer = os.pipe()
        os.set_blocking(self._writer, False)
        for signum in self.SIGNALS:
            self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        # Closed after the handlers are restored: ours can no longer run, so
        # it never writes to a descriptor number something else reused.
        reader, writer, self._reader, self._writer = self._reader, self._writer, -1, -1
        for fd in (reader, writer):
            if fd >= 0:
                os.close(fd)

    def is_set(self) -> bool:
        return self._received is not None

    def wait(self) -> str:
        """Block until SIGINT or SIGTERM arrives (at once if one did); its name."""
        while self._received is None:
            if self._reader < 0:
                raise RuntimeError("StopSignal.wait() outside its with block")
            # The handler runs when select is interrupted, writes to the pipe,
            # and the retried select (PEP 475) returns at once. The timeout is
            # only a backstop.
            ready, _, _ = select.select([self._reader], [], [], 1.0)
            if ready:
                os.read(self._reader, 512)
        return self._received


def add_metrics_arguments(parser: argparse.ArgumentParser) -> None:
    """--metrics-port and --metrics-host, as the workers' argparse mains take them."""

    def port(text: str) -> int:
        try:
            return check_port(text)
        except errors.ConfigurationError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parser.add_argument(
        "--metrics-port",
        type=port,
        metavar="PORT",
        help="serve Prometheus metrics on this port, at /metrics (default: TXNQ_METRICS_PORT; "
        "unset: no endpoint; 0: any free port); docs/metrics.md",
    )
    parser.add_argument(
        "--metrics-host",
        metavar="HOST",
        help="address the metrics endpoint binds (default: TXNQ_METRICS_HOST, else 127.0.0.1; "
        "0.0.0.0 in a container)",
    )


def main(argv: Sequence[str] | None = None) -> None:
    from txnq.logs import configure

    parser = argparse.ArgumentParser(
        prog="python -m txnq.workers.scheduler", description="Run the txnq scheduler worker."
    )
    parser.add_argument(
        "--dsn", metavar="URL", help="PostgreSQL URL (default: TXNQ_DSN, else the embedded server)"
    )
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
        Scheduler(args.dsn, settings=settings).run_forever()
    except errors.TxnqError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
