"""How the command line reads at 80 and at 200 columns, without a database:
every command's ``--help``, the tables of ``txnq/cli/output.py`` and
``txnq config show`` (the table that broke "Source" into "Sour/ce").

Help in the manner of git and kubectl: ``TOPIC``-style metavariables, no
Python type names, no "…", sentences that wrap between words. Tables: no
word of a header or of a short value broken across lines, payloads last."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from tests.cli_support import assert_reads_well
from txnq.cli import app, output
from txnq.cli.help_format import every_command
from txnq.cli.output import Column, fit_widths, table

COMMANDS = list(every_command(typer.main.get_command(app)))
# Typer's placeholders: <bool>, <str>, <int>, <int range> [x>=1], {topic}, <a|b>.
TYPE_PLACEHOLDER = re.compile(
    r"<(bool|str|int|float|path|text)\b|<[a-z_]+\|[a-z_|]+>|\{[a-z_]+\}|\[x[<>]="
)


def _help(command: tuple[str, ...], columns: int) -> str:
    runner = CliRunner(env={"COLUMNS": str(columns), "TXNQ_DSN": None, "TXNQ_CONFIG": None})
    result = runner.invoke(app, [*command, "--help"])
    assert result.exit_code == 0, (command, result.output)
    return result.stdout


def test_every_command_is_covered() -> None:
    assert ("topics", "create") in COMMANDS
    assert ("server", "start") in COMMANDS
    assert len(COMMANDS) > 35


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "txnq")
def test_help_reads_well_at_80_and_200_columns(command: tuple[str, ...]) -> None:
    narrow, wide = _help(command, 80), _help(command, 200)

    for page, width in ((narrow, 80), (wide, 100)):  # help wraps at 100 at most
        assert page.startswith("Usage: txnq"), page
        assert not TYPE_PLACEHOLDER.search(page), page
        assert "…" not in page, page
        for line in page.splitlines():
            # A line may be longer only when it is one word that cannot wrap (a URL).
            assert len(line) <= width or " " not in line.strip(), line
    # Wrapping moves words between lines, never cuts one (a setting name, a URL):
    # the same words at both widths.
    assert narrow.split() == wide.split()


def test_help_shows_metavariables_choices_and_defaults_as_sentences() -> None:
    page = _help(("consume",), 80)

    assert "Usage: txnq consume TOPIC --subscription NAME [OPTIONS]" in page
    assert "-t, --type TYPE" in page
    assert "TYPE: exclusive, failover, shared, key_shared. Default: exclusive." in " ".join(
        page.split()
    )
    assert "-h, --help" in page
    worker = " ".join(_help(("worker", "scheduler"), 80).split())
    assert (
        "--log-level LEVEL Logging level of the workers. LEVEL: debug, info, warning, error."
        in worker
    )


def test_every_database_command_takes_dsn_and_every_result_command_takes_json() -> None:
    root = typer.main.get_command(app)
    for path in COMMANDS:
        command = root
        for name in path:
            command = command.commands[name]  # type: ignore[attr-defined]
        if hasattr(command, "commands"):
            continue
        options = {opt for param in command.params for opt in getattr(param, "opts", [])}
        if path[0] == "worker":
            assert "--dsn" in options and "--json" not in options, path  # they log
        elif path[0] in ("server", "standalone"):
            assert "--home" in options and "--json" in options, path  # the embedded server
        else:
            assert "--dsn" in options and "--json" in options, path


# -- tables -----------------------------------------------------------------------


def _render(built: object, columns: int) -> str:
    console = Console(width=columns, force_terminal=False, color_system=None)
    with console.capture() as captured:
        console.print(built)
    return captured.get()


def _both(columns: list[str | Column], rows: list[list[object]]) -> tuple[str, str]:
    narrow, wide = (
        _render(table("Sample", columns, rows, width=columns_wide), columns_wide)
        for columns_wide in (80, 250)
    )
    return narrow, wide


WHEN = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)


def test_a_wide_table_gives_way_in_its_payload_then_its_prose_never_in_names_or_times() -> None:
    columns: list[str | Column] = [
        "Topic",
        "High watermark",
        Column("Reason", "text"),
        "Created",
        Column("Details", "payload"),
    ]
    rows: list[list[object]] = [
        [
            "orders",
            1234567,
            "owner topic deleted while a subscription had a backlog",
            WHEN,
            json.dumps({"ledgers": [1, 2, 3], "reclaimed": 4096, "note": "compacted " * 6}),
        ],
        ["audit", 0, "-", WHEN, "-"],
    ]
    narrow, wide = _both(columns, rows)

    assert_reads_well(narrow, wide, "a wide table")
    assert all(len(line) <= 80 for line in narrow.splitlines()), narrow
    assert output.time_text(WHEN) in narrow  # a time is never wrapped
    assert "High watermark" in narrow.splitlines()[1]  # its values fit: no need to wrap
    assert len(narrow.splitlines()) > len(wide.splitlines())  # the prose and payload wrapped


def test_a_table_too_wide_even_at_its_narrowest_shows_each_row_as_a_record() -> None:
    columns: list[str | Column] = [
        "Id",
        "State",
        "Opened",
        "Partitions",
        "Subscriptions",
        "Transactional id",
        "Topic",
        "Created",
    ]
    rows: list[list[object]] = [["3:1", "COMMITTING", WHEN, 4, 2, "etl-1", "orders", WHEN]] * 2
    narrow, wide = _both(columns, rows)

    assert_reads_well(narrow, wide, "records")
    lines = [line.rstrip() for line in narrow.splitlines()]
    assert lines[0] == "Sample"
    assert re.fullmatch(r"Transactional id +etl-1", lines[6]), lines
    assert lines[9] == ""  # a blank line between two records
    assert all(len(line) <= 80 for line in lines)


def test_a_table_that_fits_is_the_same_at_80_and_250_columns() -> None:
    narrow, wide = _both(["Name", "Partitions", "Created"], [["orders", 4, WHEN]])

    assert [line.rstrip() for line in narrow.splitlines()] == [
        line.rstrip() for line in wide.splitlines()
    ]


def test_a_payload_anywhere_but_last_is_refused() -> None:
    with pytest.raises(ValueError, match="last"):
        table("Bad", [Column("Value", "payload"), "Key"], [["x", "y"]])


def test_fit_widths_keeps_fixed_columns_whole_and_shrinks_the_payload_first() -> None:
    from rich.text import Text

    specs = [Column("Name"), Column("Why", "text"), Column("Value", "payload")]
    cells = [[Text("orders"), Text("a reason of several words"), Text("x" * 200)]]

    widths = fit_widths(specs, cells, 80)

    assert widths[0] == len("orders")
    assert widths[1] == len("a reason of several words")  # the payload gave enough
    assert sum(widths) + 2 * 2 == 80


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "none"),
        (0, "none"),
        (-1, "infinite"),
        (7 * 86_400, "7d"),
    ],
)
def test_a_retention_of_zero_reads_none_and_minus_one_infinite(
    value: float | None, text: str
) -> None:
    assert output.kept_text(value, output.duration_text) == text


def test_numbers_carry_their_units() -> None:
    assert output.size_text(0) == "0B"
    assert output.size_text(512) == "512B"
    assert output.size_text(5 * 1024 * 1024) == "5MiB"
    assert output.count_text(1, "entry") == "1 entry"
    assert output.count_text(3, "entry") == "3 entries"
    assert output.count_text(0, "message") == "0 messages"


def test_config_show_reads_well_at_80_columns() -> None:
    env = {"TXNQ_DSN": "postgresql://alice:secret@db.example.com:5432/txnq", "TXNQ_CONFIG": None}
    pages = [
        CliRunner(env={**env, "COLUMNS": str(columns)}).invoke(app, ["config", "show"])
        for columns in (80, 250)
    ]
    for page in pages:
        assert page.exit_code == 0, page.output
    narrow, wide = pages[0].stdout, pages[1].stdout

    assert_reads_well(narrow, wide, "config show")
    assert re.search(r"^TC_COUNT +default +16 *$", narrow, re.M), narrow
    assert re.search(r"^LEDGER_MAX_BYTES +default +2GiB *$", narrow, re.M), narrow
    assert re.search(r"^TXN_MAX_TIMEOUT +default +15m *$", narrow, re.M), narrow
    assert re.search(r"^DSN +env +postgresql://alice:\*\*\*@", narrow, re.M), narrow


def test_an_error_under_json_is_one_json_object_on_standard_error() -> None:
    runner = CliRunner(env={"TXNQ_DSN": None, "TXNQ_CONFIG": None, "TXNQ_TC_COUNT": "zero"})
    # A TxnqError raised by the library, and one the command itself reports.
    for argv in (["config", "show"], ["gc", "history", "--job", "bogus"]):
        result = runner.invoke(app, [*argv, "--json"])

        assert result.exit_code == 1, result.output
        assert result.stdout == ""
        error = json.loads(result.stderr)
        assert error["exit_code"] == 1 and error["type"].endswith("Error"), error
        assert error["error"]

        plain = runner.invoke(app, argv)
        assert plain.exit_code == 1 and plain.stderr.startswith("error: "), plain.output


def test_a_malformed_command_line_under_json_is_one_json_object_too() -> None:
    runner = CliRunner(env={"TXNQ_DSN": None, "TXNQ_CONFIG": None})

    result = runner.invoke(app, ["topics", "list", "--json", "--bogus"])

    assert result.exit_code == 2, result.output
    error = json.loads(result.stderr)
    assert error["type"] == "UsageError" and "--bogus" in error["error"], error
    plain = runner.invoke(app, ["topics", "list", "--bogus"])
    assert plain.exit_code == 2 and "Usage: txnq topics list [OPTIONS]" in plain.stderr
