"""``txnq console``: the web console of a database (docs/console.md), in the
foreground until Ctrl-C or SIGTERM."""

from __future__ import annotations

from typing import Annotated

import typer

from txnq.cli.options import DsnOption, JsonOption, check_console_port, open_client
from txnq.cli.output import console as out
from txnq.cli.output import note, print_json
from txnq.settings import load_settings


def console(
    dsn: DsnOption = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            metavar="PORT",
            callback=check_console_port,
            show_default=False,
            help="TCP port of the console on 127.0.0.1 (0: any free port). Default: "
            "TXNQ_CONSOLE_PORT, else 8470.",
        ),
    ] = None,
    as_json: JsonOption = False,
) -> None:
    """Serve the web console on 127.0.0.1 and print its URL.

    The page shows topics, subscriptions, transactions, storage and messages,
    refreshing live, read through the inspection views. Run as a member of
    txnq_admin (or the database owner), it also offers actions (create and
    delete topics, policies, seek, abort, test messages), each confirmed in
    the page and recorded; as a member of txnq_reader it is read-only. Runs
    until Ctrl-C or SIGTERM.
    """
    from txnq.console.server import ConsoleServer
    from txnq.workers.scheduler import StopSignal

    settings = load_settings()
    with open_client(dsn) as client:  # resolves the DSN and checks the schema
        where = client.dsn
    server = ConsoleServer(where, settings, port=port)
    with StopSignal() as stop:
        server.start()
        try:
            if as_json:  # one line: a script reads it while this keeps running
                print_json({"url": server.url}, lines=True)
            else:
                out.print(f"txnq console at {server.url}", markup=False, highlight=False)
                out.print("Press Ctrl-C to stop.", style="dim", highlight=False)
            received = stop.wait()
            note(f"Stopping the console ({received})...")
        finally:
            server.stop()
