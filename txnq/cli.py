"""The command line: ``txnq`` (typer + rich).

Every command calls the library (``txnq.Client``, ``client.admin``, producers,
consumers, ``txnq.database.migrate``, ``txnq.database.embedded``); no SQL lives here.

Conventions shared by the commands:

- ``--dsn URL`` picks the database; without it ``TXNQ_DSN`` (or ``dsn`` in
  ``txnq.toml``), and without that the embedded PostgreSQL under ``TXNQ_HOME``
  (default ``./.txnq``), started if needed, as ``txnq.Client()`` does.
- Results go to standard output as rich tables, or as JSON with ``--json``
  (datetimes as ISO 8601 strings). Notes, progress bars and errors go to
  standard error, so ``--json`` output can be piped.
- Exit codes: 0 success; 1 txnq refused the input or the operation failed (one
  red line, no traceback); 2 the command line itself is malformed (typer's
  usage error); 130 interrupted.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, BinaryIO, Literal, NoReturn

import psycopg
import sqlalchemy.exc
import typer
from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text
from typer.core import TyperGroup

from txnq import __version__, errors
from txnq.client import Client
from txnq.durations import parse_duration
from txnq.messages import Message, MessageId
from txnq.settings import load_settings

if TYPE_CHECKING:
    from txnq.admin import (
        BacklogQuotaInfo,
        ConsumerInfo,
        CursorInfo,
        HangingTransaction,
        PartitionInfo,
        SubscriptionInfo,
        TopicInfo,
        TopicPermission,
        TransactionDescription,
        TransactionInfo,
    )
    from txnq.consumer import Consumer
    from txnq.database.embedded import EmbeddedServer
    from txnq.lifecycle import LifecycleReport
    from txnq.producer import PendingSend

#: Results (tables, JSON). Notes, progress and errors go to ``err_console``.
console = Console()
err_console = Console(stderr=True)

#: Produce shows a progress bar (on a terminal) above this many messages, and
#: its JSON lists every message id up to this many.
PROGRESS_THRESHOLD = 1000
#: Messages taken from the consumer's receive queue per output batch.
CONSUME_BATCH = 500

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
TiB = 1024 * GiB


class _TxnqGroup(TyperGroup):
    """The root group: txnq's errors end the command with one red line and exit code 1."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except errors.TxnqError as exc:
            _fail(str(exc))
        except (psycopg.OperationalError, sqlalchemy.exc.OperationalError) as exc:
            _fail(f"PostgreSQL is unavailable: {_first_line(exc)}; check --dsn / TXNQ_DSN")


def _first_line(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None)  # SQLAlchemy wraps the driver's error
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# SQLAlchemy appends this to its errors' text; a link is no help on one line.
_SQLALCHEMY_LINK = re.compile(r"\s*\(Background on this error at: [^)]*\)")


def _fail(message: str) -> NoReturn:
    """Print the error as one red line and exit with code 1. Details that follow
    on further lines (e.g. the tail of the embedded server's log) come dim below."""
    from txnq.logs import redact

    first, _, details = redact(_SQLALCHEMY_LINK.sub("", message)).strip().partition("\n")
    err_console.print(
        f"error: {first}", style="bold red", markup=False, highlight=False, soft_wrap=True
    )
    if details.strip():
        err_console.print(details, style="dim", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(1)


app = typer.Typer(
    name="txnq",
    cls=_TxnqGroup,
    help="txnq: a transactional message queue on PostgreSQL (topics, partitions, "
    "subscriptions, idempotent producers). Every command that talks to a database takes "
    "--dsn (default TXNQ_DSN, else the embedded PostgreSQL under ./.txnq); most take "
    "--json for machine-readable output.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
topics_app = typer.Typer(
    help="Create, list, describe, grow and delete topics.", no_args_is_help=True
)
subscriptions_app = typer.Typer(
    help="List, describe, reset and delete the subscriptions of a topic.", no_args_is_help=True
)
server_app = typer.Typer(
    help="The embedded PostgreSQL server under TXNQ_HOME (default ./.txnq).",
    no_args_is_help=True,
)
worker_app = typer.Typer(help="Run a txnq worker process in the foreground.", no_args_is_help=True)
txn_app = typer.Typer(
    help="Inspect transactions, abort one, and find those that hang (hold read_committed "
    "consumers back).",
    no_args_is_help=True,
)
app.add_typer(topics_app, name="topics")
app.add_typer(subscriptions_app, name="subscriptions")
app.add_typer(txn_app, name="txn")
gc_app = typer.Typer(
    help="The message lifecycle on demand: TTL, retention and entry-log GC; their history.",
    no_args_is_help=True,
)
app.add_typer(gc_app, name="gc")
app.add_typer(server_app, name="server")
app.add_typer(worker_app, name="worker")
config_app = typer.Typer(
    help="The effective settings: flags, then TXNQ_* variables, then the config file, "
    "then defaults.",
    no_args_is_help=True,
)
app.add_typer(config_app, name="config")

# -- shared options -----------------------------------------------------------

DsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn",
        metavar="URL",
        show_default=False,
        help="PostgreSQL URL of a migrated txnq database, e.g. "
        "postgresql://user@host:5432/db. Default: TXNQ_DSN (or dsn in txnq.toml); "
        "when neither is set, the embedded PostgreSQL under TXNQ_HOME (default "
        "./.txnq), started if it is not running.",
    ),
]
MigrateDsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn",
        metavar="URL",
        show_default=False,
        help="PostgreSQL URL of the database to migrate (the role needs CREATE on it). "
        "Default: TXNQ_DSN (or dsn in txnq.toml); when neither is set, the embedded "
        "PostgreSQL under TXNQ_HOME (default ./.txnq), started if it is not running.",
    ),
]
JsonOption = Annotated[
    bool,
    typer.Option(
        "--json", help="Print machine-readable JSON to standard output instead of tables."
    ),
]
HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        metavar="DIR",
        show_default=False,
        file_okay=False,
        help="Home directory of the embedded server (data, log, server.json). "
        "Default: TXNQ_HOME, else ./.txnq.",
    ),
]
LogLevelOption = Annotated[
    Literal["DEBUG", "INFO", "WARNING", "ERROR"],
    typer.Option("--log-level", case_sensitive=False, help="Logging level of the workers."),
]
LogFormatOption = Annotated[
    Literal["auto", "json", "text"] | None,
    typer.Option(
        "--log-format",
        case_sensitive=False,
        show_default=False,
        help="Log lines as JSON or text; auto: JSON unless standard error is a terminal. "
        "Default: TXNQ_LOG_FORMAT, else auto.",
    ),
]


def _metrics_port(value: int | None) -> int | None:
    from txnq.metrics import check_port

    try:
        return None if value is None else check_port(value)
    except errors.ConfigurationError as exc:
        raise typer.BadParameter(str(exc).removeprefix("--metrics-port ")) from None


MetricsPortOption = Annotated[
    int | None,
    typer.Option(
        "--metrics-port",
        metavar="PORT",
        callback=_metrics_port,
        show_default=False,
        help="Serve Prometheus metrics at http://HOST:PORT/metrics (0: any free port, "
        "logged). Default: TXNQ_METRICS_PORT; unset: no endpoint. See docs/metrics.md.",
    ),
]
MetricsHostOption = Annotated[
    str | None,
    typer.Option(
        "--metrics-host",
        metavar="HOST",
        show_default=False,
        help="Address the metrics endpoint binds. Default: TXNQ_METRICS_HOST, else "
        "127.0.0.1 (this host only); 0.0.0.0 in a container.",
    ),
]
TopicArgument = Annotated[str, typer.Argument(help="Topic name.", show_default=False)]
RoleOption = Annotated[
    str,
    typer.Option("--role", "-r", show_default=False, help="The PostgreSQL role (login or group)."),
]
ActionsOption = Annotated[
    list[str],
    typer.Option(
        "--action",
        "-a",
        show_default=False,
        help="produce, consume or admin (admin includes the other two); repeat it for several.",
    ),
]
PrefixOption = Annotated[
    bool,
    typer.Option("--prefix", help="NAME is a topic-name prefix: every topic starting with it."),
]
SubscriptionArgument = Annotated[str, typer.Argument(help="Subscription name.", show_default=False)]
TxnIdArgument = Annotated[
    str,
    typer.Argument(
        metavar="TXN_ID",
        help="Transaction id as printed by `txnq txn list`: tc:seq (e.g. 3:1042), or the "
        "128-bit integer.",
        show_default=False,
    ),
]


def _version(value: bool) -> None:
    if value:
        typer.echo(f"txnq {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
    config: Annotated[
        Path | None,
        typer.Option(
            "--config",
            metavar="FILE",
            show_default=False,
            dir_okay=False,
            help="Read settings from this TOML file (sets TXNQ_CONFIG). Default: TXNQ_CONFIG, "
            "else ./txnq.toml if present. Flags beat TXNQ_* variables, which beat the file.",
        ),
    ] = None,
) -> None:
    if config is not None:
        os.environ["TXNQ_CONFIG"] = str(config)


# -- helpers: connecting ------------------------------------------------------


def _embedded(home: Path | None) -> EmbeddedServer:
    from txnq.database.embedded import EmbeddedServer

    return EmbeddedServer(home if home is not None else load_settings().home)


@contextmanager
def _client(dsn: str | None) -> Iterator[Client]:
    """A client on ``dsn``, else TXNQ_DSN, else the embedded server (started if needed)."""
    settings = load_settings()
    if not dsn and settings.dsn is None:
        server = _embedded(Path(settings.home))
        if not server.is_running():
            _note(
                f"Starting the embedded PostgreSQL under {server.home} "
                "(it keeps running; stop it with `txnq server stop`)"
            )
    client = Client(dsn or None, settings=settings)
    try:
        yield client
    finally:
        client.close()


# -- helpers: output ----------------------------------------------------------


def _note(message: str) -> None:
    err_console.print(message, style="dim", markup=False, highlight=False, soft_wrap=True)


def _json_default(value: object) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _print_json(data: object, *, lines: bool = False) -> None:
    """JSON to standard output: indented, or one object per line (``lines``)."""
    typer.echo(json.dumps(data, default=_json_default, indent=None if lines else 2))


def _message_id_dict(message_id: MessageId) -> dict[str, Any]:
    return message_id._asdict()


def _duration_text(seconds: float | None) -> str:
    if seconds is None:
        return "none"
    if seconds < 0:
        return "infinite"
    if seconds == 0:
        return "0s"
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60), ("s", 1)):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)}{unit}"
    return f"{seconds:g}s"


def _size_text(size: int | None) -> str:
    if size is None:
        return "none"
    if size < 0:
        return "infinite"
    if size == 0:
        return "0"
    for unit, factor in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= factor:
            if size % factor == 0:
                return f"{size // factor}{unit}"
            return f"{size / factor:.1f}{unit}"
    return f"{size}B"


def _time_text(value: datetime | None) -> str:
    """Local time to the second; JSON output keeps the full ISO 8601 value."""
    if value is None:
        return "-"
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def _table(title: str, columns: list[str], rows: Iterable[list[object]]) -> Table:
    """A table of ``rows``: integers right-aligned, datetimes as local time, None as '-'."""
    cells = [[_cell(value) for value in row] for row in rows]
    table = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
        title_justify="left",
        title_style="bold",
    )
    widths = _fit_widths(
        [[Text(column), *(row[i] for row in cells)] for i, column in enumerate(columns)]
    )
    for index, column in enumerate(columns):
        numeric = bool(cells) and all(row[index].plain.lstrip("-").isdigit() for row in cells)
        table.add_column(
            column,
            justify="right" if numeric else "left",
            width=widths[index],
            overflow="fold",
        )
    for row in cells:
        table.add_row(*row)
    return table


def _fit_widths(columns: list[list[Text]]) -> list[int]:
    """Column widths that fit the console. When the table is too wide, the column
    with the most room to spare gives up what is needed (down to its longest
    word), then the next one: headers and times wrap between words while numbers
    and names stay whole. (Rich itself shrinks all columns evenly, cutting
    numbers and names.)"""
    widest = [max(text.cell_len for text in column) for column in columns]
    shortest = [
        max((len(word) for text in column for word in text.plain.split()), default=1)
        for column in columns
    ]
    # The table's frame (see _table): two characters per column.
    excess = sum(widest) + 2 * len(columns) - console.width
    while excess > 0:
        index = max(range(len(columns)), key=lambda i: widest[i] - shortest[i])
        give = min(excess, widest[index] - shortest[index])
        if give <= 0:
            break  # narrower than the table can be: rich crops what is left
        widest[index] -= give
        excess -= give
    return widest


def _cell(value: object) -> Text:
    if isinstance(value, Text):
        return value
    if value is None:
        return Text("-")
    if isinstance(value, datetime):
        return Text(_time_text(value))
    return Text(str(value))  # Text: user data is never read as rich markup


def _properties_table(title: str, rows: Iterable[tuple[str, object]]) -> Table:
    table = Table(
        title=title, box=box.SIMPLE, show_header=False, title_justify="left", title_style="bold"
    )
    table.add_column("property", style="bold", no_wrap=True)
    table.add_column("value", overflow="fold")
    for name, value in rows:
        table.add_row(name, _cell(value))
    return table


def _topic_table(topic: TopicInfo) -> Table:
    return _properties_table(
        f"Topic {topic.name}",
        [
            ("partitions", topic.partitions),
            ("retention", _duration_text(topic.retention_seconds)),
            ("retention size", _size_text(topic.retention_bytes)),
            ("ttl", _duration_text(topic.ttl_seconds)),
            ("max message size", _size_text(topic.max_message_bytes)),
            ("backlog quota size", _quota_text(topic.backlog_quota_bytes, _size_text)),
            ("backlog quota age", _quota_text(topic.backlog_quota_seconds, _duration_text)),
            ("backlog quota policy", topic.backlog_quota_policy or "default"),
            ("created", topic.created_at),
            ("topic id", topic.topic_id),
        ],
    )


def _quota_text(value: Any, text: Any) -> str:
    """A topic's own backlog quota limit: None uses the server default, -1 is none."""
    if value is None:
        return "default"
    return "no limit" if value < 0 else str(text(value))


def _backlog_quota_table(quota: BacklogQuotaInfo) -> Table:
    def mark(text: str, which: str) -> str:
        return f"{text} (server default)" if which in quota.from_defaults else text

    state = "under quota"
    if quota.exceeded_since is not None:
        state = f"OVER since {_time_text(quota.exceeded_since)}: {quota.exceeded_reason}"
    return _properties_table(
        "Backlog quota in effect",
        [
            ("size limit", mark(_quota_text(quota.limit_bytes, _size_text), "size")),
            ("age limit", mark(_quota_text(quota.limit_seconds, _duration_text), "age")),
            ("policy", mark(quota.policy, "policy")),
            ("last check", state),
        ],
    )


def _topics_table(topics: list[TopicInfo]) -> Table:
    return _table(
        "Topics",
        ["Name", "Partitions", "Retention", "Retention size", "TTL", "Max message", "Created"],
        (
            [
                t.name,
                t.partitions,
                _duration_text(t.retention_seconds),
                _size_text(t.retention_bytes),
                _duration_text(t.ttl_seconds),
                _size_text(t.max_message_bytes),
                t.created_at,
            ]
            for t in topics
        ),
    )


def _partitions_table(partitions: list[PartitionInfo]) -> Table:
    return _table(
        "Partitions",
        [
            "Partition",
            "Earliest",
            "High watermark",
            "Max read",
            "Ledgers",
            "Open ledger",
            "Payload",
            "Last publish",
        ],
        (
            [
                p.partition,
                p.earliest_offset,
                p.high_watermark,
                p.max_read_offset,
                p.ledgers,
                p.open_ledger_id,
                _size_text(p.payload_bytes),
                p.last_publish_time,
            ]
            for p in partitions
        ),
    )


def _subscriptions_table(subscriptions: list[SubscriptionInfo]) -> Table:
    return _table(
        "Subscriptions",
        ["Name", "Type", "Isolation", "Backlog", "Consumers", "Created"],
        (
            [s.name, s.subscription_type, s.isolation, s.backlog_entries, s.consumers, s.created_at]
            for s in subscriptions
        ),
    )


def _cursors_table(cursors: list[CursorInfo]) -> Table:
    return _table(
        "Cursors",
        [
            "Partition",
            "Mark-delete",
            "Max read",
            "High watermark",
            "Backlog",
            "Individual acks",
            "Updated",
        ],
        (
            [
                c.partition,
                c.mark_delete_offset,
                c.max_read_offset,
                c.high_watermark,
                c.backlog_entries,
                c.individual_acks,
                c.updated_at,
            ]
            for c in cursors
        ),
    )


def _consumers_table(consumers: list[ConsumerInfo]) -> Table:
    return _table(
        "Consumers",
        ["Id", "Name", "Priority", "Connected", "Lease expires"],
        (
            [k.consumer_id, k.name, k.priority, k.connected_at, k.lease_expires_at]
            for k in consumers
        ),
    )


def _print_tables(*tables: Table) -> None:
    """Print each table, or a one-line note for one without rows."""
    for table in tables:
        if table.row_count:
            console.print(table)
        else:
            console.print(f"{table.title}: none", style="dim", highlight=False)


def _progress() -> Progress:
    """A progress bar on standard error, shown only on a terminal."""
    return Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    )


def _configure_logging(level: str, log_format: str | None = None) -> None:
    """txnq's loggers (workers) to standard error: JSON lines when it is not a
    terminal (docker logs, systemd, files: what a log collector parses), through
    rich on a terminal; LOG_FORMAT / --log-format overrides (txnq/logs.py).
    Passwords in DSNs are masked either way."""
    from rich.logging import RichHandler

    from txnq.logs import configure

    rich_handler = RichHandler(
        console=err_console, show_path=False, markup=False, rich_tracebacks=True
    )
    configure(level, log_format, text_handler=rich_handler if err_console.is_terminal else None)


# -- txnq migrate ---------------------------------------------------------------


@app.command()
def migrate(dsn: MigrateDsnOption = None, as_json: JsonOption = False) -> None:
    """Create or upgrade the txnq schema and publish the server-side settings.

    Without --dsn and TXNQ_DSN it migrates the embedded server (starting it).
    Safe to run again: an up-to-date database is left as it is.
    """
    from txnq.database.migrate import head_revision, upgrade

    settings = load_settings()
    target = dsn or settings.dsn
    if not target:
        server = _embedded(Path(settings.home))
        _note(f"Migrating the embedded PostgreSQL under {server.home}")
        target = server.start()
    try:
        revision = upgrade(target, settings=settings)
    except sqlalchemy.exc.DBAPIError as exc:
        raise errors.ServerUnavailableError(
            f"could not migrate the database: {_first_line(exc)}; check --dsn / TXNQ_DSN "
            "and that the role may create schemas"
        ) from None
    head = head_revision()
    if as_json:
        _print_json({"revision": revision, "head": head})
        return
    state = "up to date" if revision == head else f"head is {head}"
    console.print(f"txnq schema at revision [bold]{revision}[/bold] ({state})")


# -- txnq standalone ------------------------------------------------------------


@app.command()
def standalone(
    home: HomeOption = None,
    no_workers: Annotated[
        bool,
        typer.Option(
            "--no-workers",
            help="Run PostgreSQL only, without the scheduler and coordinator workers.",
        ),
    ] = False,
    log_level: LogLevelOption = "INFO",
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
) -> None:
    """Run txnq on one machine in the foreground, like `pulsar standalone`.

    Starts the embedded PostgreSQL (or reuses the one running under the home),
    migrates it, runs the scheduler and a coordinator worker in this process and
    prints the DSN. Ctrl-C or SIGTERM stops the workers, and stops PostgreSQL if
    this command started it (a server that was already running keeps running).
    With --metrics-port, one Prometheus endpoint serves the metrics of both workers.
    """
    from txnq.database.migrate import upgrade
    from txnq.metrics import MetricsServer, serve
    from txnq.workers.coordinator import CoordinatorThread, CoordinatorWorker
    from txnq.workers.scheduler import Scheduler, StopSignal

    _configure_logging(log_level)
    settings = load_settings(metrics_port=metrics_port, metrics_host=metrics_host)
    server = _embedded(home)
    was_running = server.is_running()
    scheduler: Scheduler | None = None
    coordinator: CoordinatorThread | None = None
    metrics: MetricsServer | None = None
    server_started = False

    def stop_everything() -> None:
        # Idempotent: runs on a stop signal, and again on the way out of an
        # error or an interrupt during start-up.
        nonlocal scheduler, coordinator, metrics, server_started
        if coordinator is not None:
            coordinator.stop()
            coordinator = None
        if scheduler is not None:
            scheduler.shutdown()
            scheduler = None
        if metrics is not None:
            metrics.stop()
            metrics = None
        if server_started:
            server_started = False
            server.stop()
            _note(f"Stopped PostgreSQL under {server.home}")

    try:
        with err_console.status(
            "Reusing PostgreSQL..." if was_running else "Starting PostgreSQL..."
        ):
            dsn = server.start()
            server_started = not was_running
            revision = upgrade(dsn, settings=settings)
        # From here on Ctrl-C and SIGTERM request a stop (also during the stop itself).
        with StopSignal() as stop:
            try:
                metrics = serve(dsn, settings)
                if not no_workers:
                    scheduler = Scheduler(dsn, settings=settings, metrics=metrics)
                    scheduler.start()
                    coordinator = CoordinatorThread(
                        CoordinatorWorker(dsn, settings, metrics=metrics)
                    ).start()
                _print_standalone_banner(server, dsn, revision, was_running, scheduler, metrics)
                received = stop.wait()
                _note(f"Stopping ({received})...")
            finally:
                stop_everything()
        if was_running:
            _note(f"PostgreSQL under {server.home} keeps running: it was running before")
    finally:
        stop_everything()


def _print_standalone_banner(
    server: EmbeddedServer,
    dsn: str,
    revision: str,
    was_running: bool,
    scheduler: Any,
    metrics: Any = None,
) -> None:
    status = server.status()
    origin = "reused: it keeps running after this command" if was_running else "started"
    workers = (
        "none (--no-workers)"
        if scheduler is None
        else "scheduler (" + ", ".join(job.name for job in scheduler.jobs) + "), coordinator"
    )
    console.print(
        Panel.fit(
            Text.assemble(
                ("txnq standalone is running\n\n", "bold green"),
                ("Server      ", "bold"),
                f"{status['version']} under {server.home} ({origin})\n",
                ("Schema      ", "bold"),
                f"revision {revision}\n",
                ("Workers     ", "bold"),
                workers,
                *((("\nMetrics     ", "bold"), metrics.url) if metrics is not None else ()),
            ),
            box=box.ROUNDED,
        )
    )
    console.print(Text.assemble(("DSN: ", "bold"), dsn), soft_wrap=True)
    console.print("Use it from another shell:", style="dim", highlight=False)
    console.print(f"export TXNQ_DSN={dsn}", markup=False, highlight=False, soft_wrap=True)
    console.print("Press Ctrl-C to stop.", style="dim", highlight=False)


# -- txnq server ----------------------------------------------------------------


@server_app.command("status")
def server_status(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Show whether the embedded server runs, its port, DSN, data directory and version."""
    status = _embedded(home).status()
    if as_json:
        _print_json(status)
        return
    rows: list[tuple[str, object]] = []
    for name, value in status.items():
        if name in ("running", "initialized"):
            value = Text("yes", style="green") if value else Text("no", style="yellow")
        rows.append((name, value))
    console.print(_properties_table("Embedded PostgreSQL", rows))


@server_app.command("stop")
def server_stop(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Stop the embedded server (fast shutdown: open sessions are rolled back)."""
    server = _embedded(home)
    was_running = server.is_running()
    server.stop()
    if as_json:
        _print_json({"home": str(server.home), "was_running": was_running, "running": False})
    elif was_running:
        console.print(f"Stopped the embedded PostgreSQL under {server.home}", highlight=False)
    else:
        console.print(
            f"The embedded PostgreSQL under {server.home} was not running", highlight=False
        )


# -- txnq topics ----------------------------------------------------------------


@topics_app.command("create")
def topics_create(
    name: TopicArgument,
    partitions: Annotated[
        int, typer.Option("--partitions", "-p", help="Number of partitions (1 to 4096).")
    ] = 1,
    retention: Annotated[
        str | None,
        typer.Option(
            "--retention",
            metavar="DURATION",
            show_default=False,
            help="Keep acknowledged messages this long, e.g. 7d, 12h; 'infinite' keeps "
            "them forever. Default: 0 (not kept).",
        ),
    ] = None,
    retention_size: Annotated[
        str | None,
        typer.Option(
            "--retention-size",
            metavar="SIZE",
            show_default=False,
            help="Cap the acknowledged messages kept, e.g. 10GiB; 'infinite' for no cap. "
            "Default: 0.",
        ),
    ] = None,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            metavar="DURATION",
            show_default=False,
            help="Acknowledge unconsumed messages older than this on every subscription's "
            "behalf, e.g. 1h. Default: never.",
        ),
    ] = None,
    max_message_bytes: Annotated[
        str | None,
        typer.Option(
            "--max-message-bytes",
            metavar="SIZE",
            show_default=False,
            help="Largest payload accepted, e.g. 1MiB; at most MAX_MESSAGE_BYTES. "
            "Default: MAX_MESSAGE_BYTES (5MiB).",
        ),
    ] = None,
    backlog_quota_size: Annotated[
        str | None,
        typer.Option(
            "--backlog-quota-size",
            metavar="SIZE",
            show_default=False,
            help="Most payload bytes a subscription's backlog may hold, e.g. 10GiB; -1: no "
            "limit; 'default': BACKLOG_QUOTA_DEFAULT_LIMIT_BYTES.",
        ),
    ] = None,
    backlog_quota_age: Annotated[
        str | None,
        typer.Option(
            "--backlog-quota-age",
            metavar="DURATION",
            show_default=False,
            help="Oldest a subscription's unacknowledged message may get, e.g. 1h; -1: no "
            "limit; 'default': BACKLOG_QUOTA_DEFAULT_LIMIT_SECONDS.",
        ),
    ] = None,
    backlog_quota_policy: Annotated[
        str | None,
        typer.Option(
            "--backlog-quota-policy",
            metavar="POLICY",
            show_default=False,
            help="What happens over the quota: producer_hold (sends block, then fail), "
            "producer_error (sends fail at once) or consumer_backlog_eviction (the oldest "
            "backlog is acknowledged); 'default': BACKLOG_QUOTA_DEFAULT_POLICY.",
        ),
    ] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Create a topic."""
    with _client(dsn) as client:
        topic = client.admin.create_topic(
            name,
            partitions,
            retention=retention,
            retention_size=retention_size,
            ttl=ttl,
            max_message_bytes=max_message_bytes,
            backlog_quota_size=backlog_quota_size,
            backlog_quota_age=backlog_quota_age,
            backlog_quota_policy=backlog_quota_policy,
        )
    if as_json:
        _print_json(topic.to_dict())
        return
    console.print(_topic_table(topic))


@topics_app.command("set-policy")
def topics_set_policy(
    name: TopicArgument,
    retention: Annotated[
        str | None,
        typer.Option(
            "--retention",
            metavar="DURATION",
            show_default=False,
            help="Keep consumed messages this long, e.g. 7d; 'infinite' keeps them forever; "
            "0: not by time.",
        ),
    ] = None,
    retention_size: Annotated[
        str | None,
        typer.Option(
            "--retention-size",
            metavar="SIZE",
            show_default=False,
            help="Keep consumed messages while they add up to at most this, e.g. 10GiB; "
            "'infinite' for no cap; 0: not by size.",
        ),
    ] = None,
    ttl: Annotated[
        str | None,
        typer.Option(
            "--ttl",
            metavar="DURATION",
            show_default=False,
            help="Acknowledge unconsumed messages older than this on every subscription's "
            "behalf, e.g. 1h; 'none' removes the TTL.",
        ),
    ] = None,
    backlog_quota_size: Annotated[
        str | None,
        typer.Option(
            "--backlog-quota-size",
            metavar="SIZE",
            show_default=False,
            help="Most payload bytes a subscription's backlog may hold, e.g. 10GiB; -1: no "
            "limit; 'default': BACKLOG_QUOTA_DEFAULT_LIMIT_BYTES.",
        ),
    ] = None,
    backlog_quota_age: Annotated[
        str | None,
        typer.Option(
            "--backlog-quota-age",
            metavar="DURATION",
            show_default=False,
            help="Oldest a subscription's unacknowledged message may get, e.g. 1h; -1: no "
            "limit; 'default': BACKLOG_QUOTA_DEFAULT_LIMIT_SECONDS.",
        ),
    ] = None,
    backlog_quota_policy: Annotated[
        str | None,
        typer.Option(
            "--backlog-quota-policy",
            metavar="POLICY",
            show_default=False,
            help="What happens over the quota: producer_hold (sends block, then fail), "
            "producer_error (sends fail at once) or consumer_backlog_eviction (the oldest "
            "backlog is acknowledged); 'default': BACKLOG_QUOTA_DEFAULT_POLICY.",
        ),
    ] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Change a topic's lifecycle policies (retention, TTL, backlog quota); what is not
    given stays. The scheduler applies them at its next TTL, retention and backlog quota
    runs (docs/backlog-quota.md)."""
    changes: dict[str, Any] = {"retention": retention, "retention_size": retention_size}
    if ttl is not None:
        changes["ttl"] = None if ttl.strip().lower() == "none" else ttl
    for key, value in (
        ("backlog_quota_size", backlog_quota_size),
        ("backlog_quota_age", backlog_quota_age),
        ("backlog_quota_policy", backlog_quota_policy),
    ):
        if value is not None:
            changes[key] = value
    with _client(dsn) as client:
        topic = client.admin.set_topic_policy(name, **changes)
    if as_json:
        _print_json(topic.to_dict())
        return
    console.print(_topic_table(topic))


@topics_app.command("list")
def topics_list(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """List the topics."""
    with _client(dsn) as client:
        topics = client.admin.list_topics()
    if as_json:
        _print_json([topic.to_dict() for topic in topics])
        return
    _print_tables(_topics_table(topics))


@topics_app.command("describe")
def topics_describe(
    name: TopicArgument, dsn: DsnOption = None, as_json: JsonOption = False
) -> None:
    """Show a topic, its partitions (offsets, ledgers, size) and its subscriptions."""
    with _client(dsn) as client:
        description = client.admin.describe_topic(name)
    if as_json:
        _print_json(description.to_dict())
        return
    _print_tables(
        _topic_table(description.topic),
        *([_backlog_quota_table(description.backlog_quota)] if description.backlog_quota else []),
        _partitions_table(description.partitions),
        _subscriptions_table(description.subscriptions),
    )


@topics_app.command("update")
def topics_update(
    name: TopicArgument,
    partitions: Annotated[
        int,
        typer.Option(
            "--partitions",
            "-p",
            show_default=False,
            help="The new number of partitions; topics grow, never shrink.",
        ),
    ],
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Grow a topic to more partitions."""
    with _client(dsn) as client:
        topic = client.admin.update_topic(name, partitions=partitions)
    if as_json:
        _print_json(topic.to_dict())
        return
    console.print(_topic_table(topic))


@topics_app.command("delete")
def topics_delete(
    name: TopicArgument,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Delete even while subscriptions have a backlog or consumers are connected.",
        ),
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a topic and its messages; refused while a subscription has a backlog
    or a consumer is connected, unless --force."""
    with _client(dsn) as client:
        client.admin.delete_topic(name, force=force)
    if as_json:
        _print_json({"deleted": name})
        return
    console.print(f"Deleted topic {name}", highlight=False)


@topics_app.command("grant")
def topics_grant(
    name: Annotated[
        str,
        typer.Argument(
            help="Topic name, or a topic-name prefix with --prefix.", show_default=False
        ),
    ],
    role: RoleOption,
    actions: ActionsOption,
    prefix: PrefixOption = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Allow a PostgreSQL role to produce, consume or administer a topic (or,
    with --prefix, every topic whose name starts with NAME); admin includes
    produce and consume (docs/security.md)."""
    where = {"prefix": name} if prefix else {"topic": name}
    with _client(dsn) as client:
        added = client.admin.grant(role, actions=actions, **where)
        grants = client.admin.permissions(role=role)
    shown = [g for g in grants if g.resource == name and (g.kind == "prefix") == prefix]
    if as_json:
        _print_json({"added": added, "grants": [g.to_dict() for g in shown]})
        return
    console.print(
        f"Granted {', '.join(sorted(set(actions)))} on {'prefix' if prefix else 'topic'} {name} "
        f"to role {role} ({added} new)",
        highlight=False,
    )
    _print_tables(_grants_table(shown))


@topics_app.command("revoke")
def topics_revoke(
    name: Annotated[
        str,
        typer.Argument(
            help="Topic name, or a topic-name prefix with --prefix.", show_default=False
        ),
    ],
    role: RoleOption,
    actions: Annotated[
        list[str] | None,
        typer.Option(
            "--action",
            "-a",
            show_default=False,
            help="produce, consume or admin; repeat it for several (default: every action).",
        ),
    ] = None,
    prefix: PrefixOption = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Take back a role's grants on a topic (or, with --prefix, on that exact
    prefix): the actions given, else all."""
    where = {"prefix": name} if prefix else {"topic": name}
    with _client(dsn) as client:
        removed = client.admin.revoke(role, actions=actions, **where)
    if as_json:
        _print_json({"removed": removed})
        return
    console.print(
        f"Revoked {removed} grant{'s' if removed != 1 else ''} of role {role} on "
        f"{'prefix' if prefix else 'topic'} {name}",
        highlight=False,
    )


@topics_app.command("permissions")
def topics_permissions(
    name: Annotated[
        str | None,
        typer.Argument(
            help="Only the grants that apply to this topic (its own and its prefixes').",
            show_default=False,
        ),
    ] = None,
    role: Annotated[
        str | None,
        typer.Option("--role", "-r", show_default=False, help="Only this role's grants."),
    ] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """List the per-topic grants you may see (admins: all)."""
    with _client(dsn) as client:
        grants = client.admin.permissions(role=role, topic=name)
    if as_json:
        _print_json([g.to_dict() for g in grants])
        return
    _print_tables(_grants_table(grants))


def _grants_table(grants: list[TopicPermission]) -> Table:
    return _table(
        "Permissions",
        ["role", "topic or prefix", "kind", "action", "granted by", "granted at"],
        [
            [
                g.role if g.role_exists else f"{g.role} (dropped)",
                g.resource,
                g.kind,
                g.action,
                g.granted_by,
                _time_text(g.granted_at),
            ]
            for g in grants
        ],
    )


# -- txnq produce ---------------------------------------------------------------


def _properties(values: list[str] | None) -> dict[str, str] | None:
    if not values:
        return None
    properties: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition("=")
        if not sep or not name:
            raise errors.InvalidArgumentError(
                f"--property {value!r} is not KEY=VALUE (e.g. --property source=cli)"
            )
        properties[name] = text
    return properties


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    """Each line of ``stream`` without its line ending, as it arrives."""
    for line in stream:
        yield line.removesuffix(b"\n").removesuffix(b"\r")


def _open_lines(path: str) -> tuple[Iterator[bytes], int | None]:
    """The lines of ``path`` ('-': standard input, read as it arrives) and their
    count when known in advance (a regular file is read at once)."""
    if path == "-":
        return _lines(typer.get_binary_stream("stdin")), None
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise errors.InvalidArgumentError(
            f"cannot read --file {path}: {exc.strerror or exc}"
        ) from None
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the final newline ends the last line; it starts no new one
    return iter([line.removesuffix(b"\r") for line in lines]), len(lines)


class _SendTally:
    """Counts written and failed messages from the producer's callbacks (its threads)."""

    def __init__(self, progress: Progress, task: TaskID) -> None:
        self._lock = threading.Lock()
        self._progress = progress
        self._task = task
        self.written = 0
        self.failed = 0
        self.first_error: BaseException | None = None

    def __call__(self, error: BaseException | None, message_id: MessageId | None) -> None:
        with self._lock:
            if error is not None:
                self.failed += 1
                self.first_error = self.first_error or error
                return
            self.written += 1
            written = self.written
        if written % 500 == 0:
            self._progress.update(self._task, completed=written)


@app.command()
def produce(
    topic: Annotated[str, typer.Argument(help="Topic to send to.", show_default=False)],
    message: Annotated[
        list[str] | None,
        typer.Option(
            "--message",
            "-m",
            metavar="TEXT",
            show_default=False,
            help="A message to send, as UTF-8 text. Repeat for several.",
        ),
    ] = None,
    file: Annotated[
        str | None,
        typer.Option(
            "--file",
            "-f",
            metavar="PATH",
            show_default=False,
            help="Send each line of PATH as one message (after any --message); '-' reads "
            "standard input, sending lines as they arrive.",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            "--key",
            "-k",
            show_default=False,
            help="Key of every message: messages with one key go to one partition, in order.",
        ),
    ] = None,
    prop: Annotated[
        list[str] | None,
        typer.Option(
            "--property",
            "-P",
            metavar="KEY=VALUE",
            show_default=False,
            help="A property of every message. Repeat for several.",
        ),
    ] = None,
    count: Annotated[
        int,
        typer.Option("--count", "-n", min=1, help="Send the messages this many times over."),
    ] = 1,
    producer_name: Annotated[
        str | None,
        typer.Option(
            "--producer-name",
            show_default=False,
            help="Name of the producer (default: a new random name). A named producer "
            "continues its sequence numbers and fences an older one of the same name.",
        ),
    ] = None,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Send messages to a topic (idempotent producer, batched).

    Prints how many were sent and the last message id (topic:partition:offset:index).
    """
    properties = _properties(prop)
    texts = [text.encode("utf-8") for text in message or []]
    if not texts and file is None:
        raise errors.InvalidArgumentError(
            "nothing to send: give messages with --message/-m TEXT or --file PATH ('-' for stdin)"
        )
    lines: Iterator[bytes] = iter(())
    line_count: int | None = 0
    if file is not None:
        lines, line_count = _open_lines(file)
    payloads: Iterable[bytes]
    if count == 1:
        payloads = itertools.chain(texts, lines)
    else:
        once = [*texts, *lines]  # to repeat them, standard input is read to its end first
        line_count = len(once) - len(texts)
        payloads = itertools.chain.from_iterable(itertools.repeat(once, count))
    total = None if line_count is None else (len(texts) + line_count) * count

    pending: list[PendingSend] = []  # for --json, while there are few
    last: PendingSend | None = None
    sent = 0
    with _client(dsn) as client, _progress() as progress:
        task = progress.add_task(
            f"Sending to {topic}",
            total=total,
            visible=total is not None and total > PROGRESS_THRESHOLD,
        )
        tally = _SendTally(progress, task)
        producer = client.producer(topic, name=producer_name)
        for payload in payloads:
            last = producer.send_async(payload, key=key, properties=properties, callback=tally)
            sent += 1
            if sent <= PROGRESS_THRESHOLD:
                pending.append(last)
            elif pending:
                pending = []
        progress.update(task, description=f"Flushing to {topic}")
        producer.flush()
        progress.update(task, completed=tally.written)
        producer.close()
    if tally.failed:
        _note(f"{tally.written} of {sent} messages were written")
        error = tally.first_error
        if isinstance(error, errors.TxnqError):
            raise type(error)(f"{tally.failed} messages were not written: {error}")
        raise errors.TxnqError(f"{tally.failed} messages were not written: {error}")
    last_id = last.result() if last is not None else None
    if as_json:
        result: dict[str, Any] = {
            "topic": topic,
            "sent": sent,
            "last_message_id": None if last_id is None else _message_id_dict(last_id),
        }
        if sent <= PROGRESS_THRESHOLD:
            result["message_ids"] = [_message_id_dict(p.result()) for p in pending]
        _print_json(result)
        return
    noun = "message" if sent == 1 else "messages"
    text = Text.assemble("Sent ", (str(sent), "bold"), f" {noun} to {topic}")
    if last_id is not None:
        text.append(f" (last message id {last_id})")
    console.print(text, soft_wrap=True)


# -- txnq consume ---------------------------------------------------------------


def _value_text(value: bytes) -> tuple[str, str]:
    """(text, encoding): the payload as UTF-8 text when it decodes, else as hex."""
    try:
        return value.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return value.hex(), "hex"


def _message_dict(message: Message) -> dict[str, Any]:
    value, encoding = _value_text(message.value)
    return {
        **_message_id_dict(message.message_id),
        "key": message.key,
        "properties": message.properties,
        "value": value,
        "encoding": encoding,
        "publish_time": message.publish_time,
        "event_time": message.event_time,
        "redelivery_count": message.redelivery_count,
    }


def _messages_table(messages: list[Message], *, header: bool) -> Table:
    # Fixed widths, so the tables of successive batches line up as one.
    table = Table(box=box.SIMPLE_HEAD, show_header=header, show_edge=False, expand=True)
    table.add_column("Partition", justify="right", width=9, no_wrap=True)
    table.add_column("Offset", justify="right", width=10, no_wrap=True)
    table.add_column("Index", justify="right", width=5, no_wrap=True)
    table.add_column("Key", width=12, overflow="fold")
    table.add_column("Properties", width=16, overflow="fold")
    table.add_column("Value", ratio=1, overflow="fold")
    for m in messages:
        value, encoding = _value_text(m.value)
        table.add_row(
            str(m.partition),
            str(m.offset),
            str(m.message_id.batch_index),
            Text("-" if m.key is None else m.key),
            Text(", ".join(f"{k}={v}" for k, v in m.properties.items())),
            Text(value) if encoding == "utf-8" else Text(f"hex:{value}", style="dim"),
        )
    return table


@contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Make SIGTERM interrupt the block as Ctrl-C does (KeyboardInterrupt), so that
    `kill` ends ``consume`` as cleanly. Python only handles signals in its main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@app.command()
def consume(
    topic: Annotated[str, typer.Argument(help="Topic to read.", show_default=False)],
    subscription: Annotated[
        str,
        typer.Option(
            "--subscription",
            "-s",
            show_default=False,
            help="Subscription to read through; created on first use.",
        ),
    ],
    subscription_type: Annotated[
        Literal["exclusive", "failover", "shared", "key_shared"],
        typer.Option("--type", "-t", help="Subscription type."),
    ] = "exclusive",
    initial_position: Annotated[
        Literal["earliest", "latest"],
        typer.Option(
            "--initial-position",
            help="Where a new subscription starts; an existing one continues from its cursor.",
        ),
    ] = "latest",
    count: Annotated[
        int,
        typer.Option("--count", "-n", min=0, help="Stop after this many messages; 0: no limit."),
    ] = 0,
    timeout: Annotated[
        str,
        typer.Option(
            "--timeout",
            metavar="DURATION",
            help="Stop when no message arrived for this long (e.g. 500ms, 5s, 1m); "
            "0: never, run until Ctrl-C.",
        ),
    ] = "5s",
    no_ack: Annotated[
        bool,
        typer.Option(
            "--no-ack", help="Do not acknowledge: the messages stay in the subscription's backlog."
        ),
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Receive messages through a subscription and print them.

    Prints partition, offset, index in the batch, key, properties and the value
    (UTF-8 text, else hex); with --json one JSON object per line. A message that
    cannot be decoded (an event time after year 9999, properties that are not
    strings) is said on stderr instead. Stops after --count messages, after
    --timeout without a message, or on Ctrl-C, then acknowledges what it
    received (cumulatively, per partition; one by one on shared and key_shared
    subscriptions) unless --no-ack.
    """
    idle_limit = parse_duration(timeout, what="--timeout")
    received = _Received()
    with _client(dsn) as client:
        consumer = client.subscribe(
            topic, subscription, subscription_type, initial_position=initial_position
        )
        _note(
            f"Reading {topic} through subscription {subscription} ({subscription_type}); "
            + ("Ctrl-C to stop" if idle_limit == 0 else f"stopping after {timeout} idle")
        )
        try:
            with _sigterm_interrupts():
                _receive_and_print(consumer, received, count, idle_limit, as_json)
        except KeyboardInterrupt:
            pass  # Ctrl-C or SIGTERM, the normal end of `--timeout 0`
        if not no_ack and subscription_type in ("shared", "key_shared"):
            consumer.acknowledge(received.every)
        elif not no_ack:
            for message in received.last.values():
                consumer.acknowledge_cumulative(message)
        consumer.close()
    noun = "message" if received.count == 1 else "messages"
    if no_ack:
        _note(f"Received {received.count} {noun}; not acknowledged (--no-ack)")
    else:
        _note(f"Received and acknowledged {received.count} {noun}")


@dataclasses.dataclass
class _Received:
    """What ``consume`` printed: how many, the last message of each partition,
    and every message (shared subscriptions acknowledge one by one); a message
    that could not be decoded counts by its id."""

    count: int = 0
    last: dict[int, Message | MessageId] = dataclasses.field(default_factory=dict)
    every: list[Message | MessageId] = dataclasses.field(default_factory=list)


def _receive_and_print(
    consumer: Consumer, received: _Received, count: int, idle_limit: float, as_json: bool
) -> None:
    """Print messages until ``count`` (0: no limit) or ``idle_limit`` seconds
    without one (0: no limit); ``received`` stays true when interrupted."""
    idle_since = time.monotonic()
    while count == 0 or received.count < count:
        wait = 1.0 if idle_limit == 0 else idle_limit - (time.monotonic() - idle_since)
        if wait <= 0:
            return
        wanted = CONSUME_BATCH if count == 0 else min(CONSUME_BATCH, count - received.count)
        try:
            batch = consumer.batch_receive(max_messages=wanted, timeout=wait)
        except errors.MessageDecodeError as exc:
            # Said on stderr, and acknowledged with the rest like any message
            # printed: one bad message never stops the reading.
            idle_since = time.monotonic()
            received.last[exc.message_id.partition] = exc.message_id
            received.every.append(exc.message_id)
            received.count += 1
            _note(f"{exc.message_id}: cannot be decoded: its {exc.field} {exc.detail}")
            continue
        if not batch:
            continue
        idle_since = time.monotonic()
        first = received.count == 0
        # Record before printing: a stop signal between the two must never leave
        # a printed message unacknowledged.
        for message in batch:
            received.last[message.partition] = message
            received.every.append(message)
        received.count += len(batch)
        if as_json:
            for message in batch:
                _print_json(_message_dict(message), lines=True)
        else:
            console.print(_messages_table(batch, header=first))


# -- txnq subscriptions ---------------------------------------------------------


@subscriptions_app.command("list")
def subscriptions_list(
    topic: TopicArgument, dsn: DsnOption = None, as_json: JsonOption = False
) -> None:
    """List the subscriptions of a topic with their backlog and consumers."""
    with _client(dsn) as client:
        subscriptions = client.admin.list_subscriptions(topic)
    if as_json:
        _print_json(subscriptions)
        return
    _print_tables(_subscriptions_table(subscriptions))


@subscriptions_app.command("describe")
def subscriptions_describe(
    topic: TopicArgument,
    name: SubscriptionArgument,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Show a subscription: its cursor on each partition and its connected consumers."""
    with _client(dsn) as client:
        description = client.admin.describe_subscription(topic, name)
    if as_json:
        _print_json(description.to_dict())
        return
    s = description.subscription
    console.print(
        _properties_table(
            f"Subscription {s.name} on {description.topic}",
            [
                ("type", s.subscription_type),
                ("isolation", s.isolation),
                ("backlog (entries)", s.backlog_entries),
                ("consumers", s.consumers),
                ("created", _time_text(s.created_at)),
            ],
        )
    )
    _print_tables(_cursors_table(description.cursors), _consumers_table(description.consumers))


def _seek_target(value: str) -> str | int | datetime:
    """'earliest' / 'latest' / an offset / an ISO datetime (local time when it has no offset)."""
    if value in ("earliest", "latest"):
        return value
    if value.isdigit():
        return int(value)
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return value  # the library refuses it, naming the forms it accepts
    return when if when.tzinfo is not None else when.astimezone()


@subscriptions_app.command("reset")
def subscriptions_reset(
    topic: TopicArgument,
    name: SubscriptionArgument,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="POSITION",
            show_default=False,
            help="earliest, latest, an offset (the next message delivered, on every "
            "partition), or an ISO 8601 publish time such as 2025-01-31T12:00:00Z "
            "(local time when it has no offset).",
        ),
    ],
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Move a subscription's cursors on every partition; connected consumers rewind."""
    with _client(dsn) as client:
        cursors = client.admin.reset_subscription(topic, name, _seek_target(to))
    if as_json:
        _print_json({"topic": topic, "subscription": name, "cursors": cursors})
        return
    console.print(_cursors_table(cursors))


@subscriptions_app.command("delete")
def subscriptions_delete(
    topic: TopicArgument,
    name: SubscriptionArgument,
    force: Annotated[
        bool, typer.Option("--force", help="Delete even while consumers are connected.")
    ] = False,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Delete a subscription and its cursors; refused while consumers are connected,
    unless --force."""
    with _client(dsn) as client:
        client.admin.delete_subscription(topic, name, force=force)
    if as_json:
        _print_json({"topic": topic, "deleted": name})
        return
    console.print(f"Deleted subscription {name} of topic {topic}", highlight=False)


# -- txnq worker ----------------------------------------------------------------


@worker_app.command("scheduler")
def worker_scheduler(
    dsn: DsnOption = None,
    log_level: LogLevelOption = "INFO",
    log_format: LogFormatOption = None,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
) -> None:
    """Run the scheduler worker (transaction timeouts, entry-log rollover, TTL,
    retention, GC) until Ctrl-C or SIGTERM. Any number may run: each job runs in
    one process at a time. --metrics-port serves Prometheus metrics (job durations,
    failures, and the database's rates, backlogs and transactions) and /healthz.
    On SIGTERM it waits for the job runs in progress, at most
    SHUTDOWN_TIMEOUT_SECONDS (20s)."""
    from txnq.workers.scheduler import Scheduler

    settings = load_settings(
        metrics_port=metrics_port, metrics_host=metrics_host, log_format=log_format
    )
    _configure_logging(log_level, settings.log_format)
    Scheduler(dsn or None, settings=settings).run_forever()


@worker_app.command("coordinator")
def worker_coordinator(
    dsn: DsnOption = None,
    log_level: LogLevelOption = "INFO",
    log_format: LogFormatOption = None,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
) -> None:
    """Run a coordinator worker until Ctrl-C or SIGTERM: it finishes decided
    transactions (COMMIT/ABORT markers, pending acks) of the coordinators it holds.
    Start several: they split the coordinators evenly and take over a dead one's
    within seconds. --metrics-port serves Prometheus metrics (its leases and
    completions, and the database's rates, backlogs and transactions) and /healthz.
    On SIGTERM it finishes the step in progress and unlocks its leases, within
    SHUTDOWN_TIMEOUT_SECONDS (20s)."""
    from txnq.workers.coordinator import run_coordinator

    settings = load_settings(
        metrics_port=metrics_port, metrics_host=metrics_host, log_format=log_format
    )
    _configure_logging(log_level, settings.log_format)
    with _client(dsn) as client:  # resolves the DSN and checks the schema
        where = client.dsn
    run_coordinator(where, settings, announce=_note if err_console.is_terminal else None)


# -- txnq config ----------------------------------------------------------------


@config_app.command("show")
def config_show(
    dsn: Annotated[
        str | None,
        typer.Option("--dsn", metavar="URL", show_default=False, help="As a worker's --dsn."),
    ] = None,
    log_format: LogFormatOption = None,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the effective settings and where each comes from (flag, env TXNQ_<NAME>,
    file, default), as a process started with the same flags and environment sees
    them. Secrets are masked (a DSN's password). An unusable value fails here with
    the setting's name, as it would at a worker's start."""
    from dataclasses import asdict

    from txnq.logs import mask_dsn
    from txnq.settings import SECRET_SETTINGS, config_file_path, resolve_settings

    settings, sources = resolve_settings(
        dsn=dsn or None,
        log_format=log_format,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
    )
    values = asdict(settings)
    for name in SECRET_SETTINGS:
        values[name] = mask_dsn(values[name])
    path = config_file_path()
    if as_json:
        _print_json(
            {
                "config_file": str(path) if path is not None else None,
                "settings": {
                    name: {"value": value, "source": sources[name], "env": f"TXNQ_{name.upper()}"}
                    for name, value in values.items()
                },
            }
        )
        return
    rows = [
        [name.upper(), "unset" if value is None else value, sources[name]]
        for name, value in values.items()
    ]
    _print_tables(_table("Settings", ["Setting", "Value", "Source"], rows))
    _note(
        f"Config file: {path if path is not None else 'none (no TXNQ_CONFIG, no ./txnq.toml)'}; "
        "environment variables are TXNQ_<SETTING>."
    )


# -- txnq txn -------------------------------------------------------------------


def _txns_table(transactions: list[TransactionInfo]) -> Table:
    return _table(
        "Transactions",
        [
            "Id",
            "State",
            "Reason",
            "Opened",
            "Age",
            "Timeout",
            "Partitions",
            "Subscriptions",
            "Transactional id",
        ],
        (
            [
                t.id,
                t.state,
                t.reason,
                t.opened_at,
                f"{t.age_seconds:.1f}s",
                _duration_text(t.timeout_seconds),
                t.partitions,
                t.subscriptions,
                t.transactional_id,
            ]
            for t in transactions
        ),
    )


def _txn_properties(t: TransactionInfo) -> Table:
    overdue = f"{t.overdue_seconds:.1f}s past its timeout" if t.overdue_seconds else None
    return _properties_table(
        f"Transaction {t.id}",
        [
            ("state", t.state),
            ("reason", t.reason),
            ("coordinator", t.tc_id),
            ("opened", t.opened_at),
            ("timeout", f"{_duration_text(t.timeout_seconds)} (at {_time_text(t.timeout_at)})"),
            ("decided", t.decided_at),
            ("completed", t.completed_at),
            ("overdue", overdue),
            ("transactional id", t.transactional_id),
            ("producer epoch", t.producer_epoch),
            ("partitions (marked)", f"{t.partitions} ({t.partitions_marked})"),
            ("subscriptions (done)", f"{t.subscriptions} ({t.subscriptions_done})"),
        ],
    )


def _txn_description_tables(d: TransactionDescription) -> list[Table]:
    return [
        _table(
            "Partitions written",
            ["Topic", "Partition", "First offset", "Marker offset"],
            ([p.topic, p.partition, p.first_offset, p.marker_offset] for p in d.partitions),
        ),
        _table(
            "Subscriptions acknowledged on",
            ["Topic", "Partition", "Subscription", "Pending acks", "Done"],
            (
                [s.topic, s.partition, s.subscription, s.pending_acks, "yes" if s.done else "no"]
                for s in d.subscriptions
            ),
        ),
        _table(
            "History",
            ["At", "State", "Reason", "Detail"],
            ([h.at, h.state, h.reason, h.detail] for h in d.history),
        ),
    ]


def _hanging_table(hanging: list[HangingTransaction]) -> Table:
    return _table(
        "Hanging transactions",
        ["Id", "Topic", "Partition", "First offset", "Max read", "State", "Age", "Why"],
        (
            [
                h.id,
                h.topic,
                h.partition,
                h.first_offset,
                h.max_read_offset,
                h.state,
                None if h.age_seconds is None else f"{h.age_seconds:.1f}s",
                h.why,
            ]
            for h in hanging
        ),
    )


@txn_app.command("list")
def txn_list(
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            metavar="STATE",
            show_default=False,
            help="Only transactions in this state: OPEN, COMMITTING, COMMITTED, ABORTING "
            "or ABORTED.",
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="DURATION",
            show_default=False,
            help="Only transactions opened at least this long ago, e.g. 30s, 5m, 1h.",
        ),
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 100,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """List transactions of the transaction log, newest first."""
    with _client(dsn) as client:
        transactions = client.admin.list_transactions(
            state=state, older_than=older_than, limit=limit
        )
    if as_json:
        _print_json([t.to_dict() for t in transactions])
        return
    _print_tables(_txns_table(transactions))


@txn_app.command("describe")
def txn_describe(txn_id: TxnIdArgument, dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Show a transaction: state, timeout, the partitions it wrote (and their
    markers), the subscriptions it acknowledged on, and its state history."""
    with _client(dsn) as client:
        description = client.admin.describe_transaction(txn_id)
    if as_json:
        _print_json(description.to_dict())
        return
    console.print(_txn_properties(description.transaction))
    _print_tables(*_txn_description_tables(description))


@txn_app.command("abort")
def txn_abort(txn_id: TxnIdArgument, dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Abort a transaction as an operator (reason admin) and finish the abort: ABORT
    markers written, its messages never delivered, its pending acks released. Its
    client gets TransactionEndedError on its next call. A committed transaction
    cannot be aborted."""
    with _client(dsn) as client:
        info = client.admin.abort_transaction(txn_id)
    if as_json:
        _print_json(info.to_dict())
        return
    console.print(f"Transaction {info.id} is {info.state} ({info.reason})", highlight=False)


@txn_app.command("find-hanging")
def txn_find_hanging(
    grace: Annotated[
        str,
        typer.Option(
            "--grace",
            metavar="DURATION",
            help="How far past its timeout (or its decision) a transaction must be to count.",
        ),
    ] = "10s",
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find transactions that hold a partition's max read offset back (so
    read_committed consumers wait): open past their timeout by more than --grace
    (no scheduler running?), decided but unfinished for longer than --grace (no
    coordinator worker running?), or open longer than the maximum transaction
    timeout. Abort one with `txnq txn abort ID`. Exits 1 when it finds any."""
    with _client(dsn) as client:
        hanging = client.admin.find_hanging_transactions(grace=grace)
    if as_json:
        _print_json([h.to_dict() for h in hanging])
    else:
        _print_tables(_hanging_table(hanging))
    if hanging:
        raise typer.Exit(1)


# -- txnq gc --------------------------------------------------------------------


def _gc_tables(reports: list[LifecycleReport]) -> list[Table]:
    tables: list[Table] = []
    for report in reports:
        if report.job == "ttl":
            tables.append(
                _table(
                    "TTL: cursors moved",
                    ["Topic", "Partition", "Subscription id", "Mark-delete before", "After"],
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
                _table(
                    "Retention: ledgers deleted",
                    ["Topic", "Partition", "Ledger", "Offsets", "Size"],
                    (
                        [
                            i.topic,
                            i.partition,
                            i.ledger_id,
                            f"{i.first_offset}-{i.last_offset}",
                            _size_text(i.size_bytes),
                        ]
                        for i in report.items
                    ),
                )
            )
        elif report.job == "backlog_quota":
            tables.append(
                _table(
                    "Backlog quota: subscriptions over",
                    ["Topic", "Subscription", "Over", "Backlog", "Oldest", "Policy", "Evicted"],
                    (
                        [
                            i.topic,
                            i.subscription,
                            " and ".join(
                                k
                                for k, over in (("size", i.over_size), ("age", i.over_age))
                                if over
                            ),
                            _size_text(i.backlog_bytes),
                            _duration_text(round(i.backlog_seconds or 0.0)),
                            i.policy,
                            i.evicted_entries,
                        ]
                        for i in report.items
                    ),
                )
            )
        else:
            tables.append(
                _table(
                    "Entry-log GC" + (" (dry run)" if report.dry_run else ""),
                    ["Entry log", "Table", "Entries", "Live", "Live share", "On disk", "Action"],
                    (
                        [
                            i.entry_log_id,
                            i.table_name,
                            i.entries,
                            i.live_entries,
                            f"{i.live_share:.0%}",
                            _size_text(i.total_bytes),
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
    return _table(
        title,
        ["Topic", "Partition", "What", "Error"],
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
    drop sealed entry logs that hold nothing live, and compact those whose live
    share is under the threshold (live rows move to a new log, the old one is
    dropped), within GC_TIME_BUDGET_SECONDS and at most GC_MAX_BYTES_PER_SECOND.
    A topic (entry log) that fails does not stop the others: it is listed, and
    the exit status is 1 (`txnq gc failures` shows what keeps failing)."""
    from txnq import lifecycle
    from txnq.lifecycle.backlog_quota import check_backlog_quotas

    if minor and major:
        _fail("choose one of --minor and --major")
    compaction: lifecycle.Compaction = "major" if major else "minor"
    reports: list[LifecycleReport] = []
    with _client(dsn) as client, _progress() as progress:
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
                ("Backlog quota", lambda: check_backlog_quotas(client)),
            ]
        task = progress.add_task("Lifecycle", total=len(steps))
        for description, step in steps:
            progress.update(task, description=description)
            reports.append(step())
            progress.advance(task)
    failed = sum(len(r.failures) for r in reports)
    if as_json:
        _print_json([r.to_dict() for r in reports])
    else:
        _print_tables(*_gc_tables(reports))
        reclaimed = sum(r.reclaimed_bytes for r in reports if r.job == "gc")
        verb = "would reclaim" if dry_run else "reclaimed"
        console.print(f"Entry-log GC {verb} {_size_text(reclaimed)}", highlight=False)
        if failed:
            _note(
                f"{failed} topic(s) or entry log(s) failed (listed above); the others were "
                "processed. A data exception (SQLSTATE 22...) usually means a bad value in "
                "the topic's policy: fix it with `txnq topics set-policy`"
            )
    if failed:
        raise typer.Exit(1)


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
    with _client(dsn) as client, _progress() as progress:
        progress.add_task("Sweeping for dirty data", total=None)
        report = lifecycle.doctor(client, remove=remove, inactive_seconds=inactive)
    if as_json:
        _print_json(report.to_dict())
    else:
        _print_tables(
            _table(
                "Orphan ledgers",
                ["Topic id", "Partition", "Ledger", "State", "Offsets", "Reason", "Removed"],
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
            _table(
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
                        _size_text(i.bytes),
                        "yes" if i.removed else "no",
                    ]
                    for i in report.entries_without_ledger
                ),
            ),
            _table(
                "Inactive subscriptions",
                ["Topic", "Subscription", "Type", "Last active", "Backlog", "Removed"],
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
        )
        if report.clean:
            _note("No dirty data found")
        elif not remove:
            _note("Run again with --remove to remove what is listed above")
    if not report.clean and not remove:
        raise typer.Exit(1)


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
    limit: Annotated[int, typer.Option("--limit", help="At most this many, newest first.")] = 20,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """The lifecycle runs that did something or failed somewhere (txnq.gc_runs),
    newest first; Failures: topics (entry logs) a run could not process, listed
    in its details."""
    if job is not None and job not in ("ttl", "retention", "backlog_quota", "gc", "doctor"):
        _fail(f"--job must be ttl, retention, backlog_quota, gc or doctor, not {job!r}")
    if not 1 <= limit <= 10_000:
        _fail(f"--limit must be from 1 to 10000, not {limit}")
    with _client(dsn) as client:
        rows = client.query("gc_history", {"job": job, "limit": limit})
    if as_json:
        _print_json(rows)
        return
    _print_tables(
        _table(
            "Lifecycle runs",
            ["Run", "Job", "Dry run", "Started", "Items", "Bytes", "Failures", "Details"],
            (
                [
                    r["run_id"],
                    r["job"],
                    "yes" if r["dry_run"] else "no",
                    r["started_at"],
                    r["items"],
                    _size_text(r["bytes"]),
                    r["failures"],
                    json.dumps(r["details"]),
                ]
                for r in rows
            ),
        )
    )


@gc_app.command("failures")
def gc_failures(dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """What background work is failing on now (txnq.job_failure_status): per
    job (ttl, retention, backlog_quota, gc, marker_phase), the topics,
    partitions, entry logs or transactions it could not process in its latest
    run -- it went on with the others -- since when, and the latest error.
    Exits 1 when something is failing."""
    with _client(dsn) as client:
        rows = client.query("job_failures", {})
    if as_json:
        _print_json(rows)
    else:
        _print_tables(
            _table(
                "Failing now",
                ["Job", "Topic", "Partition", "What", "Runs", "Since", "Error"],
                (
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
                ),
            )
        )
        if not rows:
            _note("Nothing is failing")
    if rows:
        raise typer.Exit(1)


def main() -> None:
    """The ``txnq`` console script."""
    app(prog_name="txnq")


if __name__ == "__main__":
    main()
