"""``txnq migrate``: create or upgrade the txnq schema of a database."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy.exc

from txnq import errors
from txnq.cli.options import JsonOption, MigrateDsnOption, embedded_server
from txnq.cli.output import console, first_line, note, print_json
from txnq.settings import load_settings


def migrate(dsn: MigrateDsnOption = None, as_json: JsonOption = False) -> None:
    """Create or upgrade the txnq schema and publish the server-side settings.

    Without --dsn and TXNQ_DSN it migrates the embedded server (starting it).
    Safe to run again: an up-to-date database is left as it is.
    """
    from txnq.database.migrate import head_revision, upgrade

    settings = load_settings()
    target = dsn or settings.dsn
    if not target:
        server = embedded_server(Path(settings.home))
        note(f"Migrating the embedded PostgreSQL under {server.home}")
        target = server.start()
    try:
        revision = upgrade(target, settings=settings)
    except sqlalchemy.exc.DBAPIError as exc:
        raise errors.ServerUnavailableError(
            f"could not migrate the database: {first_line(exc)}; check --dsn / TXNQ_DSN "
            "and that the role may create schemas"
        ) from None
    head = head_revision()
    if as_json:
        print_json({"revision": revision, "head": head})
        return
    state = "up to date" if revision == head else f"head is {head}"
    console.print(f"txnq schema at revision [bold]{revision}[/bold] ({state})")
