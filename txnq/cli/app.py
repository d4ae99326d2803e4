"""The root ``txnq`` command: its global options (``--version``, ``--config``),
the commands and command groups under it, the error handling they share, and
``main``, the console script."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import psycopg
import sqlalchemy.exc
import typer

from txnq import __version__, errors
from txnq.cli import (
    cluster,
    config,
    console,
    consume,
    gc,
    migrate,
    produce,
    server,
    standalone,
    subscriptions,
    topics,
    txn,
    worker,
)
from txnq.cli.help_format import Commands, TxnqGroup
from txnq.cli.output import fail, first_line, set_json_output


class _RootGroup(TxnqGroup):
    """The root group: txnq's errors end the command with one red line (one JSON
    object under --json) on standard error and exit code 1; under --json a
    malformed command line (exit code 2) is one JSON object too."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        # The whole command line: a usage error may come before --json is parsed.
        ctx.meta["txnq.argv"] = list(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except errors.TxnqError as exc:
            fail(str(exc), kind=type(exc).__name__)
        except (psycopg.OperationalError, sqlalchemy.exc.OperationalError) as exc:
            fail(
                f"PostgreSQL is unavailable: {first_line(exc)}; check --dsn / TXNQ_DSN",
                kind="ServerUnavailableError",
            )
        except Exception as exc:
            # click's UsageError (typer does not export it): exit code 2 and a message.
            if getattr(exc, "exit_code", None) == 2 and hasattr(exc, "format_message"):
                argv: list[str] = ctx.meta.get("txnq.argv", [])
                if "--json" in (argv[: argv.index("--")] if "--" in argv else argv):
                    error = {"error": exc.format_message(), "type": "UsageError", "exit_code": 2}
                    typer.echo(json.dumps(error), err=True)
                    raise typer.Exit(2) from None
            raise


app = Commands(
    name="txnq",
    cls=_RootGroup,
    help="txnq: a transactional message queue on PostgreSQL (topics, partitions, "
    "subscriptions, idempotent producers, transactions).\n\n"
    "Every command that talks to a database takes --dsn URL (default: TXNQ_DSN, else the "
    "embedded PostgreSQL under ./.txnq, started if needed, which keeps running: `txnq "
    "server stop` stops it). Every command that prints results takes --json; the workers "
    "log instead (--log-format json).",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)

# `txnq --help` lists the commands, then the groups, each in the order added here.
app.command("migrate")(migrate.migrate)
app.command("standalone")(standalone.standalone)
app.command("console")(console.console)
app.command("produce")(produce.produce)
app.command("consume")(consume.consume)
app.add_typer(topics.topics_app, name="topics")
app.add_typer(subscriptions.subscriptions_app, name="subscriptions")
app.add_typer(txn.transactions_app, name="txn")
app.add_typer(gc.gc_app, name="gc")
app.add_typer(server.server_app, name="server")
app.add_typer(worker.worker_app, name="worker")
app.add_typer(config.config_app, name="config")
app.add_typer(cluster.cluster_app, name="cluster")


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
    set_json_output(False)  # until a command's --json says otherwise
    if config is not None:
        os.environ["TXNQ_CONFIG"] = str(config)


def main() -> None:
    """The ``txnq`` console script."""
    app(prog_name="txnq")
