"""The command line: ``txnq`` (typer + rich).

Every command calls the library (``txnq.Client``, ``client.admin``, producers,
consumers, ``txnq.database.migrate``, ``txnq.database.embedded``); no SQL lives here.
Nothing in the library imports this package.

Layout: ``app`` is the root command (global options, error handling, ``main``);
``options`` defines the flags that commands of several groups share and opens
the client ``--dsn`` names; ``output`` prints (tables, JSON, notes, errors,
progress bars); ``help_format`` writes every ``--help`` page (``Commands``, the
``typer.Typer`` every group is made with). Every other module is one command
or command group, named after it (``txnq topics ...`` lives in ``topics.py``,
``txnq produce`` in ``produce.py``), and defines the flags only its commands
take.

Conventions shared by the commands:

- ``--dsn URL`` picks the database; without it ``TXNQ_DSN`` (or ``dsn`` in
  ``txnq.toml``), and without that the embedded PostgreSQL under ``TXNQ_HOME``
  (default ``./.txnq``), started if needed, as ``txnq.Client()`` does.
- Every command that talks to a database takes ``--dsn``; every command that
  prints results takes ``--json`` (the workers log instead).
- Results go to standard output as rich tables, or as JSON with ``--json``
  (datetimes as ISO 8601 strings). Notes, progress bars and errors go to
  standard error, so ``--json`` output can be piped; under ``--json`` an error
  is one JSON object there. Tables say which columns give way on a narrow
  terminal (``output.Column``), so no name, number or time is ever broken.
- Exit codes: 0 success; 1 txnq refused the input or the operation failed (one
  red line, no traceback); 2 the command line itself is malformed (typer's
  usage error); 130 interrupted.
"""

from txnq.cli.app import app, main

__all__ = ["app", "main"]
