"""The scheduler's jobs: what each periodic maintenance job does, and the
table (:data:`JOBS`) the scheduler (workers/scheduler.py) runs. A job is a
function of a :class:`JobContext` that returns what it did, for the log (None
when it found nothing to do); adding a job is one line in :data:`JOBS`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from txnq import errors, lifecycle
from txnq.client import Client
from txnq.database import migrate
from txnq.database.connections import create_engine_for
from txnq.metrics import JobMetrics
from txnq.settings import Settings

log = logging.getLogger("txnq.workers.scheduler")

#: How often the entry log is checked for rollover by age or size.
ENTRY_LOG_CHECK_SECONDS = 60.0

#: How often the hot tables' dead tuples are checked (lifecycle.vacuum_hot_tables).
VACUUM_CHECK_SECONDS = 60.0

#: How often open transactions are checked against their timeout: a transaction
#: is aborted within about this long after its deadline (invariant 5).
TXN_TIMEOUT_CHECK_SECONDS = 1.0

#: Transactions aborted per call of abort_timed_out_v2, and calls per run: a
#: run is bounded even when a crowd of clients vanished at once.
TXN_TIMEOUT_BATCH = 1000
TXN_TIMEOUT_MAX_CALLS = 20


@dataclass
class JobContext:
    """What a job runs with: the scheduler's client, and ``state`` that the job
    keeps between its runs in this process (e.g. what it saw last time);
    ``metrics`` and ``job`` (its name) to count what it failed on."""

    client: Client
    state: dict[str, Any] = field(default_factory=dict)
    metrics: JobMetrics | None = None
    job: str = ""

    @property
    def settings(self) -> Settings:
        return self.client.settings

    def failures(self, report: lifecycle.LifecycleReport) -> str:
        """Count the topics (entry logs) the run failed on -- it went on with
        the others -- in txnq_job_topic_failures_total; "" when none, else
        what to add to the run's log line."""
        if not report.failures:
            return ""
        if self.metrics is not None:
            for failure in report.failures:
                self.metrics.topic_failed(self.job, failure.topic)
        shown = "; ".join(f"{f.where}: {f.error}" for f in report.failures[:3])
        more = f" and {len(report.failures) - 3} more" if len(report.failures) > 3 else ""
        return (
            f"{len(report.failures)} failed, the others were processed ({shown}{more}; "
            "txnq.job_failure_status)"
        )


@dataclass(frozen=True)
class Job:
    """A maintenance job: ``run`` returns a one-line account of what it did, or
    None when there was nothing to do."""

    name: str
    run: Callable[[JobContext], str | None]
    # Seconds between runs, or a function of the settings giving them;
    # None: once, when the scheduler starts.
    every: float | Callable[[Settings], float] | None = None

    @property
    def lock_key(self) -> str:
        return f"txnq.job.{self.name}"

    def interval(self, settings: Settings) -> float | None:
        return self.every(settings) if callable(self.every) else self.every


# -- the jobs -----------------------------------------------------------------


def publish_settings(context: JobContext) -> str:
    """Write this process's server-side settings (rollover, transaction limits)
    where the SQL functions read them."""
    settings = context.settings
    engine = create_engine_for(context.client.dsn, pool_size=1, application_name="txnq-scheduler")
    try:
        with engine.connect() as connection:
            migrate.publish_settings(connection, settings)
            connection.commit()
    finally:
        engine.dispose()
    return (
        "published the server-side settings: entry logs roll at "
        f"{settings.entry_log_max_bytes} bytes or {settings.entry_log_max_age_seconds:g}s, "
        f"ledgers at {settings.ledger_max_entries} entries or {settings.ledger_max_bytes} bytes "
        f"(after {settings.ledger_min_rollover_seconds:g}s to "
        f"{settings.ledger_max_rollover_seconds:g}s); {settings.tc_count} transaction "
        f"coordinators, transaction timeouts up to {settings.txn_max_timeout:g}s"
    )


def roll_entry_log(context: JobContext) -> str:
    """Start a new entry log when the active one is older or larger than allowed."""
    rows = context.client.query("roll_entry_log", {"force": False})
    active = int(next(iter(rows[0].values())))
    previous = context.state.get("active_entry_log")
    context.state["active_entry_log"] = active
    if previous is not None and previous != active:
        return f"the active entry log is now {active} (was {previous})"
    return f"the active entry log {active} is neither full nor old: nothing to roll"


def abort_timed_out(context: JobContext) -> str | None:
    """Decide ABORTING (reason ``timeout``) for open transactions past their
    timeout. The decision wakes the coordinator workers (NOTIFY), which write
    the ABORT markers and release the pending acks, as for a client's abort."""
    aborted: list[str] = []
    for _ in range(TXN_TIMEOUT_MAX_CALLS):
        rows = context.client.query("abort_timed_out", {"max_count": TXN_TIMEOUT_BATCH})
        aborted.extend(f"{row['tc_id']}:{row['txn_seq']}" for row in rows)
        if len(rows) < TXN_TIMEOUT_BATCH:
            break
    if not aborted:
        return None
    more = f" and {len(aborted) - 10} more" if len(aborted) > 10 else ""
    shown = ", ".join(aborted[:10]) + more
    return f"aborted {len(aborted)} transaction(s) past their timeout: {shown}"


def expire_ttl(context: JobContext) -> str | None:
    """TTL: acknowledge messages older than their topic's TTL."""
    report = lifecycle.expire_ttl(context.client)
    failed = context.failures(report)
    if not report.items:
        return failed or None
    moved = sum(i.mark_delete_after - i.mark_delete_before for i in report.items)
    return f"expired {moved} entries on {len(report.items)} cursor(s)" + (
        f"; {failed}" if failed else ""
    )


def apply_retention(context: JobContext) -> str | None:
    """Retention: delete consumed ledgers that retention no longer keeps."""
    report = lifecycle.apply_retention(context.client)
    failed = context.failures(report)
    if not report.items:
        return failed or None
    return (
        f"deleted {len(report.items)} ledger(s) of "
        f"{len({i.topic for i in report.items})} topic(s), {report.reclaimed_bytes} bytes"
    ) + (f"; {failed}" if failed else "")


def _gc(context: JobContext, compaction: lifecycle.Compaction) -> str | None:
    try:
        report = lifecycle.collect_entry_logs(context.client, compaction=compaction)
    except errors.GcBusyError as exc:
        return f"skipped: {exc}"
    failed = context.failures(report)
    if not report.items:
        return failed or None
    done = [i for i in report.items if i.action in ("dropped", "compacted")]
    kept = ", ".join(f"{i.entry_log_id} ({i.action})" for i in report.items if i not in done)
    return (
        f"{compaction} GC: "
        + ", ".join(
            f"entry log {i.entry_log_id} {i.action}"
            + (
                f" into {i.compacted_into} ({i.moved_bytes} bytes moved)"
                if i.compacted_into
                else ""
            )
            for i in done
        )
        + f"{'; ' if done else ''}{report.reclaimed_bytes} bytes reclaimed; kept {kept or 'none'}"
        + (f"; {failed}" if failed else "")
    )


def collect_entry_logs(context: JobContext) -> str | None:
    """Entry-log GC, minor: drop sealed entry logs whose ledgers are all deleted,
    and compact those under GC_MINOR_THRESHOLD live."""
    return _gc(context, "minor")


def compact_entry_logs_major(context: JobContext) -> str | None:
    """Entry-log GC, major: as the minor run, compacting up to GC_MAJOR_THRESHOLD."""
    return _gc(context, "major")


def vacuum_hot_tables(context: JobContext) -> str | None:
    """VACUUM the small hot tables whose dead tuples piled up (autovacuum off or
    behind), then rewrite those a held snapshot left far larger than their rows."""
    done = lifecycle.vacuum_hot_tables(context.client)
    shrunk = lifecycle.shrink_hot_tables(context.client)
    said = []
    if done:
        said.append(
            "vacuumed " + ", ".join(f"{v.table} ({v.dead_tuples} dead tuples)" for v in done)
        )
    if shrunk:
        said.append(
            "rewrote "
            + ", ".join(f"{s.table} ({s.bytes_before} -> {s.bytes_after} bytes)" for s in shrunk)
        )
    return "; ".join(said) or None


def purge_history(context: JobContext) -> str | None:
    """Delete the history older than its retention (finished transactions, GC
    runs, dropped entry logs, deleted ledgers, long-expired consumers)."""
    report = lifecycle.purge_history(context.client)
    said = [f"{p.rows} {p.relation}" for p in report.items if isinstance(p, lifecycle.Purged)]
    partitions = [p for p in report.items if isinstance(p, lifecycle.TxnLogPartition)]
    if partitions:
        said.append(", ".join(f"txn_log partition {p.partition} {p.action}" for p in partitions))
    return ("purged " + "; ".join(said)) if said else None


def gc_doctor(context: JobContext) -> str | None:
    """The dirty-data sweep, reporting only: removal is `txnq gc doctor --remove`."""
    report = lifecycle.doctor(context.client)
    if report.clean:
        return None
    return (
        f"dirty data: {len(report.orphan_ledgers)} orphan ledger(s), "
        f"{len(report.entries_without_ledger)} ledger(s) of entries without metadata, "
        f"{len(report.inactive_subscriptions)} inactive subscription(s); "
        "see `txnq gc doctor`, remove with `txnq gc doctor --remove`"
    )


def backlog_quota(context: JobContext) -> str | None:
    """Backlog quotas: evict (consumer_backlog_eviction) or record the topics
    over quota, where producers look (producer_hold, producer_error)."""
    from txnq.lifecycle.backlog_quota import check_backlog_quotas

    report = check_backlog_quotas(context.client)
    failed = context.failures(report)
    if not report.items:
        return failed or None
    evicted = sum(b.evicted_entries for b in report.items)
    over = ", ".join(f"{b.topic}/{b.subscription} ({b.policy})" for b in report.items[:10])
    return (
        f"{len(report.items)} subscription(s) over their backlog quota: {over}; "
        f"evicted {evicted} entries"
    ) + (f"; {failed}" if failed else "")


def console_sample(context: JobContext) -> str | None:
    """One sample of the web console's chart history (and its bound: samples and
    console actions older than CONSOLE_HISTORY_SECONDS go). Says nothing: it
    runs every few seconds and always does the same."""
    from txnq.console.samples import sample_history

    sample_history(context.client)
    return None


#: The jobs every scheduler runs. Adding a job is one line here.
JOBS: tuple[Job, ...] = (
    Job("publish_settings", publish_settings),
    Job("roll_entry_log", roll_entry_log, every=ENTRY_LOG_CHECK_SECONDS),
    Job("abort_timed_out", abort_timed_out, every=TXN_TIMEOUT_CHECK_SECONDS),
    Job("expire_ttl", expire_ttl, every=lambda s: s.ttl_check_interval_seconds),
    Job("apply_retention", apply_retention, every=lambda s: s.retention_check_interval_seconds),
    Job("collect_entry_logs", collect_entry_logs, every=lambda s: s.gc_minor_interval_seconds),
    Job(
        "compact_entry_logs_major",
        compact_entry_logs_major,
        every=lambda s: s.gc_major_interval_seconds,
    ),
    Job("gc_doctor", gc_doctor, every=lambda s: s.gc_major_interval_seconds),
    Job("vacuum_hot_tables", vacuum_hot_tables, every=VACUUM_CHECK_SECONDS),
    Job("purge_history", purge_history, every=lambda s: s.purge_interval_seconds),
    Job("backlog_quota", backlog_quota, every=lambda s: s.backlog_quota_check_interval_seconds),
    Job("console_sample", console_sample, every=lambda s: s.console_sample_interval_seconds),
)
