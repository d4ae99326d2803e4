"""The flags and arguments that commands of several groups share, each defined
once here, and what they resolve to: ``--dsn`` to a connected ``txnq.Client``
(``open_client``), ``--home`` to the embedded server (``embedded_server``). A
flag that only one group's commands take is defined in that group's module.

A command lists the options it takes in its own signature (typer reads them
from there, and each command's ``--help`` shows them in that order); the
``Annotated`` aliases below carry each option's names, metavar and help text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer

from txnq import Client, errors
from txnq.cli.output import note, set_json_output
from txnq.settings import load_settings

if TYPE_CHECKING:
    from txnq.database.embedded import EmbeddedServer


# -- the database -----------------------------------------------------------------

_DSN_DEFAULT_HELP = (
    "Default: TXNQ_DSN (or dsn in txnq.toml), else the embedded PostgreSQL under "
    "TXNQ_HOME (./.txnq), started if needed."
)

DsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn",
        metavar="URL",
        show_default=False,
        help="PostgreSQL URL of a migrated txnq database, such as "
        "postgresql://user@host:5432/db. " + _DSN_DEFAULT_HELP,
    ),
]
# `txnq migrate`'s own --dsn, here beside the other so both share their default's text.
MigrateDsnOption = Annotated[
    str | None,
    typer.Option(
        "--dsn",
        metavar="URL",
        show_default=False,
        help="PostgreSQL URL of the database to migrate (the role needs CREATE on it). "
        + _DSN_DEFAULT_HELP,
    ),
]
HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        metavar="DIR",
        show_default=False,
        file_okay=False,
        help="Home directory of the embedded server (data, log, port, server.json). "
        "Default: TXNQ_HOME, else ./.txnq.",
    ),
]


def _embedded_port(value: int | None) -> int | None:
    from txnq.database.embedded import check_port

    try:
        return None if value is None else check_port(value, what="--port")
    except errors.InvalidArgumentError as exc:
        raise typer.BadParameter(str(exc).removeprefix("--port ")) from None


PortOption = Annotated[
    int | None,
    typer.Option(
        "--port",
        metavar="PORT",
        callback=_embedded_port,
        show_default=False,
        help="TCP port of the embedded server on 127.0.0.1; the home keeps it for "
        "later starts. Default: TXNQ_EMBEDDED_PORT, else the port the home used "
        "before, else 5477.",
    ),
]


def embedded_server(home: Path | None, port: int | None = None) -> EmbeddedServer:
    """The embedded server under ``home``, else under TXNQ_HOME (default ./.txnq),
    on ``port``, else TXNQ_EMBEDDED_PORT, else the port its home keeps."""
    from txnq.database.embedded import EmbeddedServer

    settings = load_settings(embedded_port=port)
    return EmbeddedServer(home if home is not None else settings.home, port=settings.embedded_port)


@contextmanager
def open_client(dsn: str | None) -> Iterator[Client]:
    """A client on ``dsn``, else TXNQ_DSN, else the embedded server (started if needed)."""
    settings = load_settings()
    if not dsn and settings.dsn is None:
        server = embedded_server(Path(settings.home))
        if not server.is_running():
            note(
                f"Starting the embedded PostgreSQL under {server.home} on port {server.port} "
                "(it keeps running; stop it with `txnq server stop`)"
            )
    client = Client(dsn or None, settings=settings)
    try:
        yield client
    finally:
        client.close()


# -- output -----------------------------------------------------------------------

JsonOption = Annotated[
    bool,
    typer.Option(
        "--json",
        callback=set_json_output,
        help="Print JSON on standard output instead of tables; an error is then one "
        "JSON object on standard error.",
    ),
]
LimitOption = Annotated[
    int, typer.Option("--limit", metavar="N", help="Show at most N, newest first.")
]


# -- processes: workers and standalone --------------------------------------------

LogLevelOption = Annotated[
    Literal["debug", "info", "warning", "error"],
    typer.Option(
        "--log-level",
        metavar="LEVEL",
        case_sensitive=False,
        help="Logging level of the workers.",
    ),
]
LogFormatOption = Annotated[
    Literal["auto", "json", "text"] | None,
    typer.Option(
        "--log-format",
        metavar="FORMAT",
        case_sensitive=False,
        show_default=False,
        help="Log lines as json (one object per line) or text; auto: json unless standard "
        "error is a terminal. Default: TXNQ_LOG_FORMAT, else auto.",
    ),
]


def _metrics_port(value: int | None) -> int | None:
    from txnq import metrics

    try:
        return None if value is None else metrics.check_port(value)
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


def check_console_port(value: int | None) -> int | None:
    if value is not None and not 0 <= value <= 65535:
        raise typer.BadParameter(
            f"must be a TCP port from 1 to 65535 (0: any free port), not {value}"
        )
    return value


ConsolePortOption = Annotated[
    int | None,
    typer.Option(
        "--console-port",
        metavar="PORT",
        callback=check_console_port,
        show_default=False,
        help="Serve the web console at http://127.0.0.1:PORT/ (0: any free port). "
        "Default: TXNQ_CONSOLE_PORT, else 8470. See docs/console.md.",
    ),
]


# -- topics and subscriptions -----------------------------------------------------

TopicArgument = Annotated[str, typer.Argument(help="Topic name.", show_default=False)]
SubscriptionArgument = Annotated[str, typer.Argument(help="Subscription name.", show_default=False)]
