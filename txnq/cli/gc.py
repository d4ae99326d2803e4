"""``txnq gc``: the message lifecycle on demand, as the scheduler runs it on its
schedule (TTL, retention, the backlog quota check, entry-log GC), the sweep
for dirty data, and the history and failures of those runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from txnq.cli.help_format import Commands
from txnq.cli.options import DsnOption, JsonOption, LimitOption, open_client
from txnq.cli.output import (
    Column,
    console,
    count_text,
    duration_text,
    fail,
    note,
    print_json,
    print_tables,
    progress_bar,
    size_text,
    table,
)
from txnq.durations import parse_duration

if TYPE_CHECKING:
    from txnq import Client
    from txnq.lifecycle import DoctorReport, LifecycleReport

gc_app = Commands(
    help="The message lifecycle on demand: TTL, retention and entry-log GC; their history.",
    no_args_is_help=True,
)


def _gc_tables(reports: list[LifecycleReport]) -> list[Table]:
    tables: list[Table] = []
    for report in reports:
        if report.job == "ttl":
            tables.append(
                table(
                    "TTL: cursors moved",
                    ["Topic", "Partition", "Subscription id", "Mark delete before", "After"],
                    (
                        [
                            i.topic,
                            i.partition,
                            i.subscription_id,
                            i.mark_delete_before,
                            i.mark_delete_after,
                        ]
                        for i in report.items
                    ),
                )
            )
        elif report.job == "retention":
            tables.append(
                table(
                    "Retention: ledgers deleted",
                    ["Topic", "Partition", "Ledger", "Offsets", "Size"],
                    (
                        [
                            i.topic,
                            i.partition,
                            i.ledger_id,
                            f"{i.first_offset}-{i.last_offset}",
                            size_text(i.size_bytes),
                        ]
                        for i in report.items
                    ),
                )
            )
        elif report.job == "backlog_quota":
            tables.append(
                table(
                    "Backlog quota: subscriptions over",
                    [
                        "Topic",
                        "Subscription",
                        "Over",
                        "Backlog size",
                        "Oldest",
                        "Policy",
                        "Evicted entries",
                    ],
                    (
                        [
                            i.topic,
                            i.subscription,
                            " and ".join(
                                k
                                for k, over in (("size", i.over_size), ("age", i.over_age))
                                if over
                            ),
                            size_text(i.backlog_bytes),
                            duration_text(round(i.backlog_seconds or 0.0)),
                            i.policy,
                            i.evicted_entries,
                        ]
                        for i in report.items
                    ),
                )
            )
        else:
            tables.append(
                table(
                    "Entry-log GC" + (" (dry run)" if report.dry_run else ""),
                    [
                        "Entry log",
                        "Table",
                        "Entries",
                        "Live entries",
                        "Live share",
                        "On disk",
                        "Action",
                    ],
                    (
                        [
                            i.entry_log_id,
                            i.table_name,
                            i.entries,
                            i.live_entries,
                            f"{i.live_share:.0%}",
                            size_text(i.total_bytes),
                            i.action,
                        ]
                        for i in report.items
                    ),
                )
            )
    for report in reports:
        if report.failures:
            tables.append(
                _failures_table(f"{report.job}: failed, the others were processed", report)
            )
    return tables


def _failures_table(title: str, report: LifecycleReport) -> Table:
    return table(
        title,
        ["Topic", "Partition", "What", Column("Error", "payload")],
        ([f.topic, f.partition, f.subject, f.error] for f in report.failures),
    )


@gc_app.command("run")
def gc_run(
    minor: Annotated[
        bool,
        typer.Option(
            "--minor",
            help="Compact sealed entry logs whose live share is under GC_MINOR_THRESHOLD "
            "(0.2), as the hourly job does. The default.",
        ),
    ] = False,
    major: Annotated[
        bool,
        typer.Option(
            "--major",
            help="Compact sealed entry logs whose live share is under GC_MAJOR_THRESHOLD "
            "(0.8), as the daily job does.",
        ),
    ] = False,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Only report which sealed entry logs GC would drop or compact; TTL and "
            "retention do not run (they would move cursors and delete ledgers).",
        ),
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Run the lifecycle now, as the scheduler does on its schedule: TTL (acknowledge
    expired messages), retention (delete consumed ledgers retention no longer keeps),
    the backlog quota check (evict, or hold/refuse producers), then entry-log GC:
    seal the active entry log if it is over ENTRY_LOG_MAX_BYTES or ENTRY_LOG_MAX_AGE,
    drop sealed entry logs that hold nothing live, and compact those whose live
    share is under the threshold (live rows move to a new log, the old one is
    dropped), within GC_TIME_BUDGET_SECONDS and at most GC_MAX_BYTES_PER_SECOND.
    A topic (entry log) that fails does not stop the others: it is listed, and
    the exit status is 1 (`txnq gc failures` shows what keeps failing)."""
    from txnq import lifecycle

    if minor and major:
        fail("choose one of --minor and --major")
    compaction: lifecycle.Compaction = "major" if major else "minor"
    reports: list[LifecycleReport] = []
    with open_client(dsn) as client, progress_bar() as progress:
        steps: list[tuple[str, Callable[[], LifecycleReport]]] = [
            (
                "Entry-log GC",
                lambda: lifecycle.collect_entry_logs(
                    client, dry_run=dry_run, compaction=compaction
                ),
            )
        ]
        if not dry_run:
            steps[:0] = [
                ("TTL", lambda: lifecycle.expire_ttl(client)),
                ("Retention", lambda: lifecycle.apply_retention(client)),
                ("Backlog quota", lambda: lifecycle.check_backlog_quotas(client)),
            ]
        task = progress.add_task("Lifecycle", total=len(steps))
        for description, step in steps:
            progress.update(task, description=description)
            reports.append(step())
            progress.advance(task)
    failed = sum(len(r.failures) for r in reports)
    if as_json:
        print_json([r.to_dict() for r in reports])
    else:
        print_tables(*_gc_tables(reports))
        reclaimed = sum(r.reclaimed_bytes for r in reports if r.job == "gc")
        verb = "would reclaim" if dry_run else "reclaimed"
        examined = sum(len(r.items) for r in reports if r.job == "gc")
        console.print(
            f"Entry-log GC {verb} {size_text(reclaimed)} "
            f"({count_text(examined, 'entry log')} to drop or compact)",
            highlight=False,
        )
        rolled = [r.rolled_to_entry_log for r in reports if r.rolled_to_entry_log is not None]
        if rolled:
            console.print(
                f"Sealed the active entry log (over its size or age); entry log {rolled[0]} "
                "is now active",
                highlight=False,
            )
        if failed:
            note(
                f"{failed} topic(s) or entry log(s) failed (listed above); the others were "
                "processed. A data exception (SQLSTATE 22...) usually means a bad value in "
                "the topic's policy: fix it with `txnq topics set-policy`"
            )
    if failed:
        raise typer.Exit(1)


def _doctor_tables(report: DoctorReport) -> list[Table]:
    return [
        table(
            "Orphan ledgers",
            [
                "Topic id",
                "Partition",
                "Ledger",
                "State",
                "Offsets",
                Column("Reason", "text"),
                "Removed",
            ],
            (
                [
                    i.topic_id,
                    i.partition,
                    i.ledger_id,
                    i.state,
                    f"{i.first_offset}-{'' if i.last_offset is None else i.last_offset}",
                    i.reason,
                    "yes" if i.removed else "no",
                ]
                for i in report.orphan_ledgers
            ),
        ),
        table(
            "Entries without a ledger",
            [
                "Topic id",
                "Partition",
                "Ledger",
                "Entry logs",
                "Entries",
                "Offsets",
                "Size",
                "Removed",
            ],
            (
                [
                    i.topic_id,
                    i.partition,
                    i.ledger_id,
                    ", ".join(map(str, i.entry_logs)),
                    i.entries,
                    f"{i.first_offset}-{i.last_offset}",
                    size_text(i.bytes),
                    "yes" if i.removed else "no",
                ]
                for i in report.entries_without_ledger
            ),
        ),
        table(
            "Inactive subscriptions",
            ["Topic", "Subscription", "Type", "Last active", "Backlog entries", "Removed"],
            (
                [
                    i.topic,
                    i.subscription,
                    i.subscription_type,
                    i.last_active,
                    i.backlog,
                    "yes" if i.removed else "no",
                ]
                for i in report.inactive_subscriptions
            ),
        ),
    ]


@gc_app.command("doctor")
def gc_doctor(
    remove: Annotated[
        bool,
        typer.Option(
            "--remove",
            help="Remove what the sweep finds (each item checked again as it goes): orphan "
            "ledgers are marked DELETED, entries without a ledger get a DELETED ledger, "
            "inactive subscriptions are unsubscribed. Run without it first to see what "
            "would go.",
        ),
    ] = False,
    inactive_after: Annotated[
        str | None,
        typer.Option(
            "--inactive-after",
            metavar="DURATION",
            show_default=False,
            help="A subscription without consumers whose cursor has not moved for this "
            "long is inactive (default: INACTIVE_CURSOR_SECONDS, 7d).",
        ),
    ] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Sweep for dirty data: orphan ledgers (their topic or partition is gone, or
    an open ledger that is not its partition's current one), entries without a
    ledger, and inactive subscriptions. Reports only, unless --remove. Exits 1
    when it finds something and does not remove it."""
    from txnq import lifecycle

    inactive = (
        None if inactive_after is None else parse_duration(inactive_after, what="--inactive-after")
    )
    with open_client(dsn) as client, progress_bar() as progress:
        progress.add_task("Sweeping for dirty data", total=None)
        report = lifecycle.doctor(client, remove=remove, inactive_seconds=inactive)
    if as_json:
        print_json(report.to_dict())
    else:
        print_tables(*_doctor_tables(report))
        if report.clean:
            note("No dirty data found")
        elif not remove:
            note("Run again with --remove to remove what is listed above")
    if not report.clean and not remove:
        raise typer.Exit(1)


def _on_proxy(client: Client) -> bool:
    """Whether ``client`` is on a cluster's proxy: its history and failures are
    then every shard's, and the tables say which shard a row comes from."""
    return bool(client.query("cluster_is_proxy", {})[0]["proxy"])


def _with_shard(
    headers: list[str | Column], rows: list[list[Any]], shards: list[Any] | None
) -> tuple[list[str | Column], list[list[Any]]]:
    """The headers and rows, with a first column Shard when ``shards`` is given."""
    if shards is None:
        return headers, rows
    return ["Shard", *headers], [[shard, *row] for shard, row in zip(shards, rows, strict=True)]


def _history_table(rows: list[dict[str, Any]], *, on_proxy: bool = False) -> Table:
    headers, cells = _with_shard(
        [
            "Run",
            "Job",
            "Dry run",
            "Started",
            "Items",
            "Size",
            "Failures",
            Column("Details", "payload"),
        ],
        [
            [
                r["run_id"],
                r["job"],
                "yes" if r["dry_run"] else "no",
                r["started_at"],
                r["items"],
                size_text(r["bytes"]),
                r["failures"],
                json.dumps(r["details"]),
            ]
            for r in rows
        ],
        [r["shard"] for r in rows] if on_proxy else None,
    )
    return table("Lifecycle runs", headers, cells)


@gc_app.command("history")
def gc_history(
    job: Annotated[
        str | None,
        typer.Option(
            "--job",
            metavar="JOB",
            show_default=False,
            help="ttl, retention, backlog_quota, gc or doctor.",
        ),
    ] = None,
    limit: LimitOption = 20,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """The lifecycle runs that did something or failed somewhere (txnq.gc_history),
    newest first; Failures: topics (entry logs) a run could not process, listed
    in its details. Through a cluster's proxy: every shard's runs, with the
    shard."""
    if job is not None and job not in ("ttl", "retention", "backlog_quota", "gc", "doctor"):
        fail(f"--job must be ttl, retention, backlog_quota, gc or doctor, not {job!r}")
    if not 1 <= limit <= 10_000:
        fail(f"--limit must be from 1 to 10000, not {limit}")
    with open_client(dsn) as client:
        on_proxy = _on_proxy(client)
        query = "cluster_gc_history" if on_proxy else "gc_history"
        rows = client.query(query, {"job": job, "limit": limit})
    if as_json:
        print_json(rows)
        return
    print_tables(_history_table(rows, on_proxy=on_proxy))


def _failing_table(rows: list[dict[str, Any]], *, on_proxy: bool = False) -> Table:
    headers, cells = _with_shard(
        ["Job", "Topic", "Partition", "What", "Runs", "Since", Column("Error", "payload")],
        [
            [
                r["job"],
                r["topic"],
                r["partition"],
                r["subject"],
                r["failures"],
                r["first_failed_at"],
                r["error"],
            ]
            for r in rows
        ],
        [r["shard"] for r in rows] if on_proxy else None,
    )
    return table("Failing now", headers, cells)


@gc_app.command("failures")
def gc_failures(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """What background work is failing on now (txnq.job_failure_status): per
    job (ttl, retention, backlog_quota, gc, marker_phase), the topics,
    partitions, entry logs or transactions it could not process in its latest
    run -- it went on with the others -- since when, and the latest error.
    Through a cluster's proxy: every shard's, with the shard. Exits 1 when
    something is failing."""
    with open_client(dsn) as client:
        on_proxy = _on_proxy(client)
        rows = client.query("cluster_job_failures" if on_proxy else "job_failures", {})
    if as_json:
        print_json(rows)
    else:
        print_tables(_failing_table(rows, on_proxy=on_proxy))
        if not rows:
            note("Nothing is failing")
    if rows:
        raise typer.Exit(1)
