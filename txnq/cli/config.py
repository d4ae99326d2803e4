"""``txnq config``: the effective settings and where each comes from."""

from __future__ import annotations

from typing import Annotated

import typer

from txnq.cli.help_format import Commands
from txnq.cli.options import JsonOption, LogFormatOption, MetricsHostOption, MetricsPortOption
from txnq.cli.output import Column, duration_text, note, print_json, print_tables, size_text, table

config_app = Commands(
    help="The effective settings: flags, then TXNQ_* variables, then the config file, "
    "then defaults.",
    no_args_is_help=True,
)


@config_app.command("show")
def config_show(
    dsn: Annotated[
        str | None,
        typer.Option("--dsn", metavar="URL", show_default=False, help="As a worker's --dsn."),
    ] = None,
    log_format: LogFormatOption = None,
    metrics_port: MetricsPortOption = None,
    metrics_host: MetricsHostOption = None,
    as_json: JsonOption = False,
) -> None:
    """Print the effective settings and where each comes from (flag, env TXNQ_<NAME>,
    file, default), as a process started with the same flags and environment sees
    them. Secrets are masked (a DSN's password). An unusable value fails here with
    the setting's name, as it would at a worker's start."""
    from dataclasses import asdict

    from txnq.logs import mask_dsn
    from txnq.settings import SECRET_SETTINGS, config_file_path, resolve_settings

    settings, sources = resolve_settings(
        dsn=dsn or None,
        log_format=log_format,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
    )
    values = asdict(settings)
    for name in SECRET_SETTINGS:
        values[name] = mask_dsn(values[name])
    path = config_file_path()
    if as_json:
        print_json(
            {
                "config_file": str(path) if path is not None else None,
                "settings": {
                    name: {"value": value, "source": sources[name], "env": f"TXNQ_{name.upper()}"}
                    for name, value in values.items()
                },
            }
        )
        return
    rows = [
        [name.upper(), sources[name].split(" ", 1)[0], _value_text(name, value)]
        for name, value in values.items()
    ]
    print_tables(table("Settings", ["Setting", "Source", Column("Value", "payload")], rows))
    note(
        f"Config file: {path if path is not None else 'none (no TXNQ_CONFIG, no ./txnq.toml)'}; "
        "source env is the variable TXNQ_<SETTING>."
    )


def _value_text(name: str, value: object) -> str:
    """A setting's value as a person reads it: sizes and durations with their
    unit (each reads back as the same setting), -1 limits as 'no limit'."""
    from txnq.settings import setting_unit

    unit = setting_unit(name)
    if value is None:
        return "unset"
    if unit is not None and isinstance(value, int | float) and value < 0:
        return "no limit"
    if unit == "bytes" and isinstance(value, int):
        return size_text(value)
    if unit == "seconds" and isinstance(value, int | float):
        return duration_text(value)
    return str(value)
