"""What every command prints, and where: results (rich tables, or JSON with
``--json``) on standard output through ``console``; notes, progress bars, log
lines and errors on standard error through ``err_console``, so ``--json``
output can be piped."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich import box
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

#: Results (tables, JSON). Notes, progress and errors go to ``err_console``.
console = Console()
err_console = Console(stderr=True)

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
TiB = 1024 * GiB

# SQLAlchemy appends this to its errors' text; a link is no help on one line.
_SQLALCHEMY_LINK = re.compile(r"\s*\(Background on this error at: [^)]*\)")


# -- errors and notes -------------------------------------------------------------


def fail(message: str) -> NoReturn:
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


def first_line(exc: BaseException) -> str:
    """The first line of a database error's text (the driver's, under SQLAlchemy's wrapper)."""
    orig = getattr(exc, "orig", None)  # SQLAlchemy wraps the driver's error
    text = str(orig if orig is not None else exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def note(message: str) -> None:
    """A dim line on standard error: what the command is doing, or what it did."""
    err_console.print(message, style="dim", markup=False, highlight=False, soft_wrap=True)


# -- JSON -------------------------------------------------------------------------


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


def print_json(data: object, *, lines: bool = False) -> None:
    """JSON to standard output: indented, or one object per line (``lines``)."""
    typer.echo(json.dumps(data, default=_json_default, indent=None if lines else 2))


# -- values as text ---------------------------------------------------------------


def duration_text(seconds: float | None) -> str:
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


def size_text(size: int | None) -> str:
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


def time_text(value: datetime | None) -> str:
    """Local time to the second; JSON output keeps the full ISO 8601 value."""
    if value is None:
        return "-"
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


# -- tables -----------------------------------------------------------------------


def table(title: str, columns: list[str], rows: Iterable[list[object]]) -> Table:
    """A table of ``rows``: integers right-aligned, datetimes as local time, None as '-'."""
    cells = [[_cell(value) for value in row] for row in rows]
    result = Table(
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
        result.add_column(
            column,
            justify="right" if numeric else "left",
            width=widths[index],
            overflow="fold",
        )
    for row in cells:
        result.add_row(*row)
    return result


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
    # The table's frame (see table()): two characters per column.
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
        return Text(time_text(value))
    return Text(str(value))  # Text: user data is never read as rich markup


def properties_table(title: str, rows: Iterable[tuple[str, object]]) -> Table:
    """One object as a two-column table: property names in bold, then values."""
    result = Table(
        title=title, box=box.SIMPLE, show_header=False, title_justify="left", title_style="bold"
    )
    result.add_column("property", style="bold", no_wrap=True)
    result.add_column("value", overflow="fold")
    for name, value in rows:
        result.add_row(name, _cell(value))
    return result


def print_tables(*tables: Table) -> None:
    """Print each table, or a one-line note for one without rows."""
    for each in tables:
        if each.row_count:
            console.print(each)
        else:
            console.print(f"{each.title}: none", style="dim", highlight=False)


# -- progress and logs ------------------------------------------------------------


def progress_bar() -> Progress:
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


def configure_logging(level: str, log_format: str | None = None) -> None:
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
