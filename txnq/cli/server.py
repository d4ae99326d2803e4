"""``txnq server``: the embedded PostgreSQL server under TXNQ_HOME (default
./.txnq): whether it runs, and stopping it. ``txnq standalone`` starts it."""

from __future__ import annotations

import typer
from rich.text import Text

from txnq.cli.options import HomeOption, JsonOption, embedded_server
from txnq.cli.output import console, print_json, properties_table

server_app = typer.Typer(
    help="The embedded PostgreSQL server under TXNQ_HOME (default ./.txnq).",
    no_args_is_help=True,
)


@server_app.command("status")
def server_status(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Show whether the embedded server runs, its port, DSN, data directory and version."""
    status = embedded_server(home).status()
    if as_json:
        print_json(status)
        return
    rows: list[tuple[str, object]] = []
    for name, value in status.items():
        if name in ("running", "initialized"):
            value = Text("yes", style="green") if value else Text("no", style="yellow")
        rows.append((name, value))
    console.print(properties_table("Embedded PostgreSQL", rows))


@server_app.command("stop")
def server_stop(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Stop the embedded server (fast shutdown: open sessions are rolled back)."""
    server = embedded_server(home)
    was_running = server.is_running()
    server.stop()
    if as_json:
        print_json({"home": str(server.home), "was_running": was_running, "running": False})
    elif was_running:
        console.print(f"Stopped the embedded PostgreSQL under {server.home}", highlight=False)
    else:
        console.print(
            f"The embedded PostgreSQL under {server.home} was not running", highlight=False
        )
