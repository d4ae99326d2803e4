"""What every command prints, and where: results (rich tables, or JSON with
``--json``) on standard output through ``console``; notes, progress bars, log
lines and errors on standard error through ``err_console``, so ``--json``
output can be piped."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NoReturn

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

# Whether the command runs with --json: its errors are then one JSON object on
# standard error. The root command resets it, the --json option sets it.
_json_output = False


def set_json_output(value: bool) -> bool:
    """Record whether the command prints JSON (the --json option's callback)."""
    global _json_output
    _json_output = bool(value)
    return value


def fail(message: str, *, kind: str = "TxnqError") -> NoReturn:
    """Print the error and exit with code 1: one red line on standard error, or
    under --json one JSON object (``{"error": ..., "type": ..., "exit_code": 1}``).
    Details that follow on further lines (e.g. the tail of the embedded
    server's log) come dim below the line, or as ``details`` in the JSON."""
    from txnq.logs import redact

    first, _, details = redact(_SQLALCHEMY_LINK.sub("", message)).strip().partition("\n")
    if _json_output:
        error: dict[str, Any] = {"error": first, "type": kind, "exit_code": 1}
        if details.strip():
            error["details"] = details.strip()
        typer.echo(json.dumps(error), err=True)
        raise typer.Exit(1)
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
# Every number a person reads carries its unit, and "nothing" reads as a word:
# a retention of 0 keeps nothing ("none"), -1 keeps everything ("infinite").


def duration_text(seconds: float | None) -> str:
    """``7d``, ``90s``, ``1.5s``; None: ``none``; negative: ``infinite``."""
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
    """``5MiB``, ``4.8MiB``, ``512B``, ``0B``; None: ``none``; negative: ``infinite``."""
    if size is None:
        return "none"
    if size < 0:
        return "infinite"
    for unit, factor in (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if size >= factor:
            if size % factor == 0:
                return f"{size // factor}{unit}"
            return f"{size / factor:.1f}{unit}"
    return f"{size}B"


def kept_text(value: float | None, text: Callable[[Any], str]) -> str:
    """A retention limit: 0 keeps nothing (``none``), -1 keeps all (``infinite``)."""
    if value is None or value == 0:
        return "none"
    return text(value)


def count_text(count: int, unit: str) -> str:
    """``1 message``, ``3 entries``: a count with its unit, singular or plural."""
    if count == 1:
        return f"1 {unit}"
    plural = unit[:-1] + "ies" if unit.endswith("y") else unit + "s"
    return f"{count} {plural}"


def time_text(value: datetime | None) -> str:
    """The one form of a time in tables: local time to the second, e.g.
    ``2026-01-31 12:00:00``, never wrapped. JSON keeps the full ISO 8601 value."""
    if value is None:
        return "-"
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


# -- tables -----------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A table column and how it gives way when the table is wider than the
    terminal: ``fixed`` values (names, numbers, states, sizes, times) never
    wrap, only their header wraps between its words; ``text`` (reasons,
    errors) wraps between words; a ``payload`` (a message's value, JSON
    details) is the last column, shrinks first and wraps anywhere."""

    header: str
    kind: Literal["fixed", "text", "payload"] = "fixed"


#: A payload column keeps at least this width (or its widest value, if less).
PAYLOAD_MIN_WIDTH = 20


def table(
    title: str | None,
    columns: Sequence[str | Column],
    rows: Iterable[Sequence[object]],
    *,
    floors: Sequence[int] | None = None,
    width: int | None = None,
) -> Table:
    """A table of ``rows``: integers right-aligned, datetimes as :func:`time_text`,
    None as '-'. Columns shrink in the order :class:`Column` gives, so no word
    of a header or of a short value is ever broken. ``floors``: widths no
    column may go below (successive tables of ``consume`` line up); ``width``:
    the width to fit, default the console's."""
    specs = [c if isinstance(c, Column) else Column(c) for c in columns]
    if any(spec.kind == "payload" for spec in specs[:-1]):
        raise ValueError("a payload column must be the last one")
    cells = [[_cell(value) for value in row] for row in rows]
    width = width or console.width
    widths = fit_widths(specs, cells, width, floors)
    if sum(widths) + 2 * (len(specs) - 1) > width:
        return _records(title, specs, cells)
    result = Table(
        title=title,
        box=box.SIMPLE_HEAD,
        collapse_padding=True,
        pad_edge=False,
        show_edge=False,
        title_justify="left",
        title_style="bold",
    )
    for index, spec in enumerate(specs):
        numeric = bool(cells) and all(row[index].plain.lstrip("-").isdigit() for row in cells)
        result.add_column(
            spec.header,  # wraps between its words when its column is narrower
            justify="right" if numeric else "left",
            width=widths[index],
            overflow="fold" if spec.kind == "payload" else "ellipsis",
        )
    for row in cells:
        result.add_row(
            *(
                _whole(cell) if spec.kind == "fixed" else cell
                for spec, cell in zip(specs, row, strict=True)
            )
        )
    return result


def _whole(cell: Text) -> Text:
    """A fixed column's value: on one line, never wrapped (its header may wrap)."""
    whole = cell.copy()
    whole.no_wrap = True
    whole.overflow = "ellipsis"
    return whole


def fit_widths(
    specs: Sequence[Column],
    cells: Sequence[Sequence[Text]],
    width: int,
    floors: Sequence[int] | None = None,
) -> list[int]:
    """Column widths within ``width``: each column as wide as its widest value;
    when the table is too wide, payloads give first (down to
    PAYLOAD_MIN_WIDTH), then text columns (down to their longest word, the one
    with most to spare first), then headers of several words (down to their
    longest word). Still too wide, the widths add up to more than ``width``
    and table() shows each row as a record instead."""
    count = len(specs)
    natural = [
        max([Text(spec.header).cell_len, *(row[i].cell_len for row in cells)])
        for i, spec in enumerate(specs)
    ]
    header_word = [max(len(word) for word in spec.header.split()) for spec in specs]
    value_width = [max((row[i].cell_len for row in cells), default=1) for i in range(count)]
    longest_word = [
        max((len(word) for row in cells for word in row[i].plain.split()), default=1)
        for i in range(count)
    ]
    floor = []
    for i, spec in enumerate(specs):
        if spec.kind == "payload":
            least = min(natural[i], max(PAYLOAD_MIN_WIDTH, header_word[i]))
        elif spec.kind == "text":
            least = max(header_word[i], longest_word[i])
        else:
            least = max(header_word[i], value_width[i])
        floor.append(max(least, floors[i] if floors and len(floors) == count else 0))
    widths = [max(n, f) for n, f in zip(natural, floor, strict=True)]
    # The table's frame (see table()): two spaces between columns, no edges.
    excess = sum(widths) + 2 * (count - 1) - width
    for kinds in (("payload",), ("text",), ("fixed",)):
        while excess > 0:
            candidates = [i for i in range(count) if specs[i].kind in kinds]
            if not candidates:
                break
            index = max(candidates, key=lambda i: widths[i] - floor[i])
            give = min(excess, widths[index] - floor[index])
            if give <= 0:
                break
            if specs[index].kind == "fixed":
                give = widths[index] - floor[index]  # its header wraps: all the room goes
            widths[index] -= give
            excess -= give
    return widths


def _record_table(title: str | None) -> Table:
    result = Table(
        title=title,
        box=None,
        show_header=False,
        show_edge=False,
        pad_edge=False,
        padding=(0, 2, 0, 0),
        title_justify="left",
        title_style="bold",
    )
    result.add_column("name", style="bold", no_wrap=True)
    result.add_column("value", overflow="fold")
    return result


def _records(title: str | None, specs: Sequence[Column], cells: list[list[Text]]) -> Table:
    """A table too wide for the terminal even with every column at its
    narrowest, shown as psql's expanded display (``\\x auto``) shows it: one
    record per row, a line per column, a blank line between records; long
    values wrap at the end of their line."""
    result = _record_table(title)
    for index, row in enumerate(cells):
        if index:
            result.add_row("", "")
        for spec, cell in zip(specs, row, strict=True):
            result.add_row(spec.header, cell)
    return result


def _cell(value: object) -> Text:
    if isinstance(value, Text):
        return value
    if value is None:
        return Text("-")
    if isinstance(value, datetime):
        return Text(time_text(value))
    return Text(str(value))  # Text: user data is never read as rich markup


def properties_table(title: str, rows: Iterable[tuple[str, object]]) -> Table:
    """One object as a two-column table, laid out as a record of a table too
    wide for the terminal: property names in bold, then values (a value too
    long for the line wraps, as the last column does)."""
    result = _record_table(title)
    for name, value in rows:
        result.add_row(name, _cell(value))
    return result


def print_tables(*tables: Table) -> None:
    """Print each table, or a one-line note for one without rows; a blank line
    between two tables."""
    for index, each in enumerate(tables):
        if index and (each.row_count or tables[index - 1].row_count):
            console.print()
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
