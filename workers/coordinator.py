"""The coordinator worker: runs the marker phase (protocol steps 6-7) of the
decided transactions of the transaction coordinators it owns.

    txnq worker coordinator --dsn postgresql://...

Ownership of a coordinator is a lease: a session-level advisory lock on this
worker's session connection (sql/queries/coordinator.sql). Every worker also
holds a membership lock, so each can count the live workers and hold its fair
share, ``ceil(coordinators / workers)``: start three workers and the 16
coordinators split 6/6/4; stop one (or kill it: PostgreSQL drops its locks with
its session) and the others take its coordinators over at their next
rebalance, within ``poll_interval`` seconds.

Work comes from the transaction log: transactions in state COMMITTING or
ABORTING of an owned coordinator. A client runs the marker phase of its own
commit inline, so the periodic scan leaves decisions younger than
``grace_seconds`` alone; a NOTIFY on channel ``txnq_coordinator`` (sent by a
``commit(wait=False)``, by the scheduler's timeout aborts and by ``txnq txn
abort``) makes the worker look at once, with no grace. Each step runs in its
own PostgreSQL transaction and is idempotent, so a worker killed at any
instant leaves nothing another worker cannot finish.

With ``--metrics-port`` (``TXNQ_METRICS_PORT``) the worker serves Prometheus
metrics (txnq/metrics.py): its leases and completions, besides the database
metrics.

For crash tests, ``TXNQ_FAILPOINT`` names a step after which the process
exits at once (txnq/failpoints.py): ``after_partition_marker``,
``after_subscription``, ``before_finish``, ``after_finish``.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import random
import select
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

import psycopg

from txnq import errors
from txnq.failpoints import failpoint
from txnq.metrics import MetricsServer, serve
from txnq.queries import QUERIES
from txnq.settings import Settings, load_settings
from txnq.storage import connect, scalar
from txnq.transaction import TxnId, run_marker_phase

log = logging.getLogger("txnq.workers.coordinator")

#: Decided transactions handled per scan.
BATCH = 100


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
        self.grace_seconds = grace_seconds
        self.owned: set[int] = set()
        self.completed = 0
        self._member_key = random.randrange(1, 1 << 31)
        self._conn: psycopg.Connection[Any] | None = None
        if metrics is not None:
            metrics.add_coordinator(self)

    # -- the loop -------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
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
            except (psycopg.OperationalError, errors.ServerUnavailableError) as exc:
                log.warning("lost PostgreSQL (%s); reconnecting in %.1fs", exc, backoff)
                self._disconnect()
                stop.wait(backoff)
                backoff = min(backoff * 2, 10.0)
        self._disconnect()

    def _connect(self) -> None:
        conn = connect(self.dsn, application_name="txnq-coordinator")
        conn.execute("LISTEN txnq_coordinator")
        if not scalar(conn, QUERIES["coordinator_join"], {"member_key": self._member_key}):
            self._member_key = random.randrange(1, 1 << 31)  # taken: another key next time
            conn.close()
            raise errors.ServerUnavailableError("membership key taken")
        self._conn = conn
        self.owned = set()
        log.info("%s joined", self.name)

    def _disconnect(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()  # releases every lease with the session
            except psycopg.Error:
                pass
            self._conn = None
            if self.owned:
                log.info("%s released coordinators %s", self.name, sorted(self.owned))
            self.owned = set()

    def _wait(self, stop: threading.Event) -> bool:
        """Sleep until a NOTIFY or the poll interval; True when woken by a NOTIFY."""
        conn = self._conn
        assert conn is not None
        deadline = time.monotonic() + self.poll_interval
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            ready, _, _ = select.select([conn.fileno()], [], [], min(remaining, 0.25))
            if ready:
                notified = list(conn.notifies(timeout=0, stop_after=100))
                if notified:
                    return True
        return False

    # -- leases ---------------------------------------------------------------

    def rebalance(self) -> None:
        """Hold this worker's fair share of the coordinators: release extras, take free ones."""
        conn = self._conn
        assert conn is not None
        workers = max(1, int(scalar(conn, QUERIES["coordinator_live_workers"])))
        tc_ids = [row[0] for row in conn.execute(QUERIES["coordinator_ids"]).fetchall()]
        fair = math.ceil(len(tc_ids) / workers)
        for tc_id in sorted(self.owned, reverse=True)[: max(0, len(self.owned) - fair)]:
            conn.execute(QUERIES["coordinator_release_lease"], {"tc_id": tc_id})
            self.owned.discard(tc_id)
            log.info("%s handed coordinator %s back (fair share %s)", self.name, tc_id, fair)
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
            rows = conn.execute(
                QUERIES["coordinator_decided"],
                {"tc_ids": sorted(self.owned), "grace_seconds": grace, "limit": BATCH},
            ).fetchall()
            for tc_id, txn_seq, _state in rows:
                txn_id = TxnId(tc_id, txn_seq)
                try:
                    state = run_marker_phase(conn, txn_id, on_step=self._on_step)
                except psycopg.errors.DeadlockDetected:
                    continue  # retried at the next scan
                except psycopg.Error as exc:
                    if isinstance(exc, psycopg.OperationalError):
                        raise
                    log.error("transaction %s: marker phase failed: %s", txn_id, exc)
                    continue
                done += 1
                self.completed += 1
                log.info("transaction %s %s", txn_id, state.lower())
            if len(rows) < BATCH or done == done_before:
                return done  # the rest (or the failed ones) at the next scan

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


class CoordinatorThread:
    """A :class:`CoordinatorWorker` running in a daemon thread of this process
    (``txnq standalone``, ``txnq worker coordinator``): ``start()``, ``stop()``."""

    def __init__(self, worker: CoordinatorWorker) -> None:
        self.worker = worker
        self._stop = threading.Event()
        self._thread = threading.Thread(target=worker.run, args=(self._stop,), daemon=True)

    def start(self) -> CoordinatorThread:
        self._thread.start()
        return self

    def stop(self, timeout: float = 30.0) -> None:
        """Ask the loop to stop and wait for it; its leases go with its session."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout)


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m txnq.workers.coordinator``: a coordinator worker in the
    foreground until SIGINT/SIGTERM (``txnq worker coordinator`` is the same)."""
    from txnq.workers.scheduler import StopSignal, add_metrics_arguments

    parser = argparse.ArgumentParser(
        prog="python -m txnq.workers.coordinator", description="Run a txnq coordinator worker."
    )
    parser.add_argument("--dsn", help="PostgreSQL URL (default: TXNQ_DSN)")
    parser.add_argument("--log-level", default="INFO", help="python logging level (INFO)")
    add_metrics_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    try:
        settings = load_settings(metrics_port=args.metrics_port, metrics_host=args.metrics_host)
        dsn = args.dsn or settings.dsn
        if dsn is None:
            raise errors.ConfigurationError(
                "the coordinator worker needs a database: pass --dsn or set TXNQ_DSN"
            )
        metrics = serve(dsn, settings)
        try:
            with StopSignal() as stop:
                worker = CoordinatorWorker(dsn, settings, metrics=metrics)
                thread = CoordinatorThread(worker).start()
                stop.wait()
                thread.stop()
        finally:
            if metrics is not None:
                metrics.stop()
    except errors.TxnqError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
