"""Failpoints: named places where a test can make the process die at once.

``TXNQ_FAILPOINT=<name>`` in the environment makes :func:`failpoint` with that
name end the process with ``os._exit(70)`` — no cleanup, no flush, no commit,
as a kill -9 would. The crash tests of the transaction protocol use them to
stop a client or a coordinator worker between two steps of a commit. Unset
(always, outside tests), a failpoint is one dictionary lookup.

The names: ``client_after_decision`` (Transaction.commit/abort, after the
decision, before the marker phase), ``after_partition_marker``,
``after_subscription``, ``before_finish``, ``after_finish`` (the coordinator
worker's marker phase, see txnq.transaction.run_marker_phase);
``spark_ingest_after_plan``, ``spark_ingest_after_sink`` (a Spark ingestion
run, see txnq.spark.ingestion).

:func:`raise_if_armed` raises instead of exiting, for tests of what happens
when a background thread or task meets an unexpected error: ``consumer_fetch``
and ``producer_flush``.
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger("txnq.failpoints")
EXIT_CODE = 70


def armed(name: str) -> bool:
    """Whether TXNQ_FAILPOINT names this place (a caller that has a faster path
    without the place takes the path that has it, so the test can stop there)."""
    return os.environ.get("TXNQ_FAILPOINT") == name


def failpoint(name: str) -> None:
    """Exit the process at once when TXNQ_FAILPOINT names this place."""
    if os.environ.get("TXNQ_FAILPOINT") == name:
        log.warning("failpoint %s: exiting now", name)
        os._exit(EXIT_CODE)


class FailpointError(RuntimeError):
    """The unexpected error :func:`raise_if_armed` raises: not a TxnqError, not
    a psycopg error, as a bug would raise."""


def raise_if_armed(name: str) -> None:
    """Raise :class:`FailpointError` when TXNQ_FAILPOINT names this place: a
    test makes a background thread or task fail there, in the process, and
    checks that the failure reaches the application. Places:
    ``consumer_fetch`` (each round of a consumer's fetch loop),
    ``producer_flush`` (each round of a producer's flush thread or task)."""
    if os.environ.get("TXNQ_FAILPOINT") == name:
        log.warning("failpoint %s: raising", name)
        raise FailpointError(f"failpoint {name}")
