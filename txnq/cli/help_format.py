"""How ``txnq ... --help`` reads, in the manner of git, kubectl and
pulsar-admin: plain text, a usage line with ``TOPIC``-style names, then the
arguments, the commands or the options, each in two columns.

Typer's own help draws boxes, shows Python type names (``<bool>``, ``<str>``,
``<int range> [x>=1]``) and ``{topic}`` in usage lines, and cuts what does
not fit its columns with "…". Here every value has a metavariable (its
``metavar``, else a name derived from the option), a choice lists its values
in the help text, a default is a sentence, and text wraps between words only:
a setting name, a URL or a path is never cut, it overflows its line instead.

Every command and group of ``txnq`` is built by :class:`Commands` (a
``typer.Typer`` whose commands and groups use the classes below), so no
command can fall back to typer's format.
"""

from __future__ import annotations

import re
import shutil
import textwrap
from collections.abc import Callable, Iterable
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

#: Help wraps at the terminal's width, at most this wide: prose over 100
#: columns is hard to read, whatever the terminal.
MAX_WIDTH = 100
#: Below this many columns of help text beside the options, each option's help
#: goes on the lines below it (kubectl's layout) instead of beside it.
MIN_HELP_COLUMN = 30
#: The option column grows up to this; a longer option puts its help below.
MAX_OPTION_COLUMN = 32

#: -h as well as --help, on every command (inherited by every sub-context).
CONTEXT_SETTINGS: dict[str, Any] = {"help_option_names": ["-h", "--help"]}
_HELP_OPTION_TEXT = "Show this help and exit."


def help_width() -> int:
    """The width help wraps at: the terminal's (COLUMNS), at most MAX_WIDTH."""
    return max(40, min(shutil.get_terminal_size((80, 24)).columns, MAX_WIDTH))


def wrap(text: str, width: int, indent: str = "", first_indent: str | None = None) -> list[str]:
    """``text`` wrapped between words only: a word longer than the line (a URL,
    a setting name) stays whole and overflows rather than being cut."""
    return textwrap.wrap(
        " ".join(text.split()),
        width=width,
        initial_indent=indent if first_indent is None else first_indent,
        subsequent_indent=indent,
        break_long_words=False,
        break_on_hyphens=False,
    ) or [indent.rstrip()]


def paragraphs(text: str | None) -> list[str]:
    """A docstring's paragraphs, each as one line (rewrapped when printed)."""
    if not text:
        return []
    cleaned = textwrap.dedent(text).strip()
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", cleaned) if block.strip()]


def first_sentence(text: str | None) -> str:
    """The first sentence of ``text``'s first paragraph: a command's line in a list."""
    first = next(iter(paragraphs(text)), "")
    match = re.search(r"(?<=[.!?])\s+(?=[A-Z`(])", first)
    return first[: match.start()] if match else first


# -- parameters -------------------------------------------------------------------


def metavar(param: Any) -> str:
    """The name of a parameter's value: its ``metavar``, else ``N`` for a
    number, else the last word of its name in capitals (``--type`` TYPE,
    ``--log-level`` LEVEL, the argument ``topic`` TOPIC)."""
    if param.metavar:
        return str(param.metavar)
    descriptor = getattr(param, "type_descriptor", None)
    annotation = getattr(descriptor, "annotation", None)
    if annotation is int or annotation is float:
        return "N"
    name = param.opts[0] if param.param_type_name == "option" else param.name
    return str(name).lstrip("-").replace("_", "-").split("-")[-1].upper()


def _choices(param: Any) -> tuple[str, ...]:
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None or not descriptor.is_choice:
        return ()
    return tuple(str(choice) for choice in descriptor.choices or ())


def _is_flag(param: Any) -> bool:
    return bool(getattr(param, "is_flag", False))


def option_text(param: Any, ctx: Any) -> str:
    """The help of one option or argument as sentences: its text, its choices,
    its default, and whether it is required."""
    if param.name == "help":
        return _HELP_OPTION_TEXT
    sentences = [str(param.help or "").strip()]
    choices = _choices(param)
    words = set(re.findall(r"[\w-]+", sentences[0]))
    if choices and not all(choice in words for choice in choices):
        sentences.append(f"{metavar(param)}: {', '.join(choices)}.")
    default = param.get_default(ctx, call=False) if param.param_type_name == "option" else None
    shown = param.show_default if param.param_type_name == "option" else False
    if (
        shown
        and not _is_flag(param)
        and default not in (None, "", (), [])
        and not callable(default)
    ):
        sentences.append(f"Default: {default}.")
    if param.param_type_name == "option" and param.required:
        sentences.append("Required.")
    return " ".join(sentence for sentence in sentences if sentence)


def option_names(param: Any) -> str:
    """``-p, --partitions N`` (GNU's layout: long options align after a short one)."""
    if param.param_type_name != "option":
        return metavar(param)
    short = [opt for opt in param.opts if not opt.startswith("--")]
    long = [opt for opt in [*param.opts, *param.secondary_opts] if opt.startswith("--")]
    names = ", ".join([*short, *long]) if short else "    " + ", ".join(long)
    if not _is_flag(param):
        names += f" {metavar(param)}"
    return names


def usage_line(command: Any, ctx: Any) -> str:
    """``txnq consume TOPIC --subscription NAME [OPTIONS]``: the arguments, the
    required options, then the rest as ``[OPTIONS]``; a group ends in
    ``COMMAND``."""
    pieces = [ctx.command_path]
    params = [p for p in command.get_params(ctx) if not p.hidden]
    for param in params:
        if param.param_type_name == "argument":
            name = metavar(param) + ("..." if param.nargs != 1 else "")
            pieces.append(name if param.required else f"[{name}]")
    for param in params:
        if param.param_type_name == "option" and param.required:
            pieces.append(f"{param.opts[0]} {metavar(param)}")
    if any(p.param_type_name == "option" and not p.required for p in params):
        pieces.append("[OPTIONS]")
    if isinstance(command, TyperGroup):
        pieces.append("COMMAND [ARGS]...")
    return "Usage: " + " ".join(pieces)


# -- the page ---------------------------------------------------------------------


def two_columns(rows: list[tuple[str, str]], width: int) -> list[str]:
    """Rows of (term, text): the text beside the term, wrapped between words;
    below it when the term is long or the terminal narrow."""
    if not rows:
        return []
    column = min(max(len(term) for term, _ in rows), MAX_OPTION_COLUMN) + 4
    beside = width - column >= MIN_HELP_COLUMN
    lines: list[str] = []
    for term, text in rows:
        head = f"  {term}"
        if not beside:
            lines.append(head)
            lines.extend(wrap(text, width, indent=" " * 8) if text else [])
        elif len(head) + 2 <= column:
            lines.extend(wrap(text, width, indent=" " * column, first_indent=head.ljust(column)))
        else:
            lines.append(head)
            lines.extend(wrap(text, width, indent=" " * column))
    return lines


def help_page(command: Any, ctx: Any) -> str:
    """The whole ``--help`` page of a command or group."""
    width = help_width()
    lines = [usage_line(command, ctx), ""]
    for paragraph in paragraphs(command.help):
        lines.extend([*wrap(paragraph, width), ""])
    params = [p for p in command.get_params(ctx) if not p.hidden]
    arguments = [
        (option_names(p), option_text(p, ctx)) for p in params if p.param_type_name == "argument"
    ]
    if arguments:
        lines.extend(["Arguments:", *two_columns(arguments, width), ""])
    if isinstance(command, TyperGroup):
        entries = [
            (name, first_sentence(sub.help))
            for name, sub in command.commands.items()
            if not getattr(sub, "hidden", False)
        ]
        lines.extend(["Commands:", *two_columns(entries, width), ""])
    options = [
        (option_names(p), option_text(p, ctx)) for p in params if p.param_type_name == "option"
    ]
    if options:
        lines.extend(["Options:", *two_columns(options, width), ""])
    if isinstance(command, TyperGroup):
        lines.extend(
            wrap(f"Run '{ctx.command_path} COMMAND --help' for a command's options.", width)
        )
    return "\n".join(lines).rstrip() + "\n"


class TxnqCommand(TyperCommand):
    """A command whose ``--help`` and usage lines are :func:`help_page`'s."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write(help_page(self, ctx))

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        formatter.write(usage_line(self, ctx) + "\n")


class TxnqGroup(TyperGroup):
    """A command group whose ``--help`` and usage lines are :func:`help_page`'s."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        formatter.write(help_page(self, ctx))

    def format_usage(self, ctx: Any, formatter: Any) -> None:
        formatter.write(usage_line(self, ctx) + "\n")


class Commands(typer.Typer):
    """``typer.Typer`` for txnq: its group and commands format their help with
    :func:`help_page`, take -h, and report usage errors in click's plain form
    (``Error: ...`` under the usage line) rather than in a box."""

    def __init__(self, *, cls: type[TyperGroup] = TxnqGroup, **kwargs: Any) -> None:
        kwargs.setdefault("rich_markup_mode", None)
        kwargs.setdefault("context_settings", CONTEXT_SETTINGS)
        kwargs.setdefault("add_completion", False)
        super().__init__(cls=cls, **kwargs)

    def command(  # type: ignore[override]
        self, name: str | None = None, *, cls: type[TyperCommand] = TxnqCommand, **kwargs: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        return super().command(name, cls=cls, **kwargs)


def every_command(root: Any, path: tuple[str, ...] = ()) -> Iterable[tuple[str, ...]]:
    """The path of every group and command under ``root`` (a click command), for
    the tests and the docs script that render each ``--help``."""
    yield path
    for name, sub in getattr(root, "commands", {}).items():
        yield from every_command(sub, (*path, name))
