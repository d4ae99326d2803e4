"""A coordinator worker in a thread of this process, with a bounded stop
(``txnq standalone``, ``txnq worker coordinator``): apart from
workers/coordinator.py, which is the worker's protocol (leases, rebalancing,
the marker phase), this is how a process starts and stops it."""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from txnq.workers.coordinator import CoordinatorWorker

log = logging.getLogger("txnq.workers.coordinator")

#: The part of the shutdown bound kept for the stop itself: a loop still
#: waiting on a statement this long before the bound has it cancelled
#: (a quarter of the bound when that is shorter).
CANCEL_RESERVE_SECONDS = 5.0


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

    def stop(self, timeout: float = 30.0) -> bool:
        """Ask the loop to stop and wait for it, at most ``timeout`` seconds;
        True when it stopped (its leases are unlocked).

        The worker's session has no statement or lock timeout (a marker-phase
        step may rightly wait for a producer's lock), so a loop can be stuck
        in a statement when the stop comes (issue 20: a step or a rebalance
        waiting on a row lock another session held). When it is still busy
        with ``CANCEL_RESERVE_SECONDS`` of the time left, its statement is cancelled,
        so it still hands its leases back (and logs it) within ``timeout``.
        A loop busy even then (PostgreSQL unreachable) is a daemon thread: its
        session, and the leases, end with the process."""
        deadline = time.monotonic() + timeout
        reserve = min(CANCEL_RESERVE_SECONDS, timeout / 4)
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(max(0.0, timeout - reserve))
        if self._thread.is_alive():
            log.warning(
                "%s still busy %gs into its stop; cancelling its statement",
                self.worker.name,
                timeout - reserve,
            )
            self.worker.cancel(timeout=reserve / 2)
            self._thread.join(max(0.0, deadline - time.monotonic()))
        return not self._thread.is_alive()
