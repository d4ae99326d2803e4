"""Failures of background work, per topic: what a job could not process
while it went on with the others (docs/lifecycle.md, "When a job fails").

The lifecycle jobs (TTL, retention, the backlog quota check, GC) and the
coordinators' marker phase process each topic, entry log or transaction on
its own; one that fails becomes a :class:`JobFailure` (:func:`failure_of`,
which lets an outage -- PostgreSQL unreachable -- through, since that stops
the whole run). Failures are recorded in ``txnq.job_failures`` (the view
``txnq.job_failure_status``): a lifecycle run replaces its job's rows
(:func:`replace_failures`), a coordinator adds and clears a transaction's.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from txnq import errors
from txnq.database.connections import is_outage

if TYPE_CHECKING:
    from txnq.client import Client

log = logging.getLogger("txnq.job_failures")


@dataclass(frozen=True)
class JobFailure:
    """What a job could not process -- a topic (``subject`` ""), a partition,
    an entry log ("entry log 7"), a transaction ("transaction 3:17") -- and
    why; the job went on with the others."""

    job: str
    topic: str | None
    topic_id: int | None
    partition: int | None
    subject: str
    error: str
    sqlstate: str | None = None

    @property
    def where(self) -> str:
        parts = [] if self.topic is None else [f"topic {self.topic!r}"]
        if self.partition is not None:
            parts.append(f"partition {self.partition}")
        if self.subject:
            parts.append(self.subject)
        return ", ".join(parts) or "?"


def failure_of(
    job: str,
    exc: BaseException,
    *,
    topic: str | None = None,
    topic_id: int | None = None,
    partition: int | None = None,
    subject: str = "",
    hint: str = "",
) -> JobFailure:
    """``exc`` as a :class:`JobFailure` of ``job`` (the error's first line,
    PostgreSQL's hint, and ``hint``); raises ``exc`` itself when it is an
    outage (:func:`is_outage`)."""
    if is_outage(exc):
        raise exc
    sqlstate = exc.sqlstate if isinstance(exc, psycopg.Error) else None
    text = error_text(exc)
    if isinstance(exc, psycopg.Error) and exc.diag.message_hint:
        text += f" ({exc.diag.message_hint})"
    failure = JobFailure(job, topic, topic_id, partition, subject, text + hint, sqlstate)
    log.warning("job %s: %s failed, the others go on: %s", job, failure.where, failure.error)
    return failure


#: Seconds beyond which a lifecycle policy cannot be subtracted from now()
#: (PostgreSQL's timestamps start in 4713 BC): no topic means that.
POLICY_SECONDS_MAX = 1e11


def policy_hint(
    name: str, seconds: dict[str, Any], exc: BaseException, others: dict[str, Any] | None = None
) -> str:
    """What to add to a topic's failure when its lifecycle policy may be the
    cause: on a data exception (SQLSTATE class 22) or a value of ``seconds``
    that is not a finite number from -1 to POLICY_SECONDS_MAX (NaN, infinity,
    stored by an older version or by hand), the values of ``seconds`` and
    ``others``, and for the latter how to fix them. "" otherwise."""
    given = {column: value for column, value in seconds.items() if value is not None}
    suspect = any(
        not math.isfinite(value) or not -1 <= value <= POLICY_SECONDS_MAX
        for value in given.values()
    )
    data_error = isinstance(exc, psycopg.Error) and (exc.sqlstate or "").startswith("22")
    if not (suspect or data_error):
        return ""
    given |= {column: value for column, value in (others or {}).items() if value is not None}
    if not given:
        return ""
    shown = ", ".join(f"{column} = {value!r}" for column, value in given.items())
    if not suspect:
        return f"; the topic has {shown}"
    return (
        f"; the topic has {shown}: set a valid policy with `txnq topics set-policy {name}` "
        "(--ttl, --retention, --retention-size, --backlog-quota-age)"
    )


def rows(failures: list[JobFailure]) -> dict[str, list[Any]]:
    """The failures as the array parameters of record_job_failures and
    replace_job_failures (one per topic, partition and subject)."""
    unique = {
        (f.topic_id or 0, -1 if f.partition is None else f.partition, f.subject): f
        for f in failures
    }
    kept = list(unique.values())
    return {
        "topic_ids": [f.topic_id or 0 for f in kept],
        "partitions": [-1 if f.partition is None else f.partition for f in kept],
        "subjects": [f.subject for f in kept],
        "topics": [f.topic for f in kept],
        "errors": [f.error for f in kept],
        "sqlstates": [f.sqlstate for f in kept],
    }


def replace_failures(
    client: Client, job: str, failures: list[JobFailure], topic_id: int | None = None
) -> None:
    """After a run of ``job``: make txnq.job_failures say what it fails on
    now -- ``failures`` (counted up where they failed before) and nothing
    else of the job (of ``topic_id`` only, when the run checked that topic
    alone). One statement."""
    client.execute(
        "replace_job_failures", {"job": job, "scope_topic_id": topic_id, **rows(failures)}
    )


def error_text(exc: BaseException) -> str:
    """The first line of an error, after its class unless it is a txnq error
    (whose message says it all): "DatetimeFieldOverflow: interval out of range"."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    if isinstance(exc, errors.TxnqError):
        return text or type(exc).__name__
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
