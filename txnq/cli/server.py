"""``txnq server``: the embedded PostgreSQL server under TXNQ_HOME (default
./.txnq): start it in the background, ask whether it runs, stop it. ``txnq
standalone`` runs it in the foreground with the workers."""

from __future__ import annotations

from rich.text import Text

from txnq.cli.help_format import Commands
from txnq.cli.options import HomeOption, JsonOption, PortOption, embedded_server
from txnq.cli.output import console, note, print_json, properties_table

server_app = Commands(
    help="The embedded PostgreSQL server under TXNQ_HOME (default ./.txnq): start, "
    "status, stop. It keeps its port across restarts, so its DSN stays valid.",
    no_args_is_help=True,
)


@server_app.command("start")
def server_start(
    home: HomeOption = None, port: PortOption = None, as_json: JsonOption = False
) -> None:
    """Start the embedded server in the background (or find it running), create
    and migrate its txnq database, and print its DSN. It keeps running until
    `txnq server stop`."""
    from txnq.database.migrate import upgrade

    server = embedded_server(home, port)
    was_running = server.is_running()
    if not was_running:
        note(f"Starting the embedded PostgreSQL under {server.home} on port {server.port}")
    dsn = server.start()
    revision = upgrade(dsn)
    if as_json:
        print_json(
            {"home": str(server.home), "dsn": dsn, "was_running": was_running, "revision": revision}
        )
        return
    state = "was already running" if was_running else "is running"
    console.print(f"The embedded PostgreSQL under {server.home} {state}", highlight=False)
    console.print(f"export TXNQ_DSN={dsn}", markup=False, highlight=False, soft_wrap=True)
    note("It keeps running: stop it with `txnq server stop`")


@server_app.command("status")
def server_status(home: HomeOption = None, as_json: JsonOption = False) -> None:
    """Show whether the embedded server runs, its port and DSN (when stopped: those
    of its next start), data directory, log and version."""
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
    """Stop the embedded server (fast shutdown: open sessions are rolled back). Its
    data stays under the home; the next start listens on the same port."""
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
