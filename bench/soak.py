"""The accelerated soak (issue 20): days of a queue's life compressed into
minutes, then a check that every txnq table and the number of entry-log
partitions plateau (bench/chaoslib/soak.py says what runs and how it judges).

    python bench/soak.py                      # 10 minutes on the local PostgreSQL
    python bench/soak.py --seconds 180        # CI's size (tests/chaos/test_soak.py)
    python bench/soak.py --dsn DSN --json     # a server of your own; JSON for scripts

It runs in a fresh database on ``--dsn``'s server (dropped afterwards) and
prints, per table, its size and rows at the start, their peak over the
middle third (which holds a snapshot for a while) and over the last third,
and whether it plateaued. Exit status 1 when something kept growing or a
workload thread failed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from bench.chaos import _fresh_database
from bench.chaoslib.soak import SoakConfig, SoakResult, soak


def _table(result: SoakResult) -> Table:
    table = Table(title=f"txnq soak: {result.seconds:g} s, {len(result.samples)} samples")
    table.add_column("relation", no_wrap=True)
    for column in ("measure", "start", "mid peak", "last peak", "allowed", "verdict"):
        table.add_column(column, justify="left" if column == "measure" else "right", no_wrap=True)
    for v in sorted(result.verdicts, key=lambda v: (v.plateaued, v.relation, v.what)):
        if v.first == v.middle_peak == v.last_peak == 0:
            continue
        table.add_row(
            v.relation,
            "logs" if v.what == "entry logs" else v.what,
            f"{v.first:,}",
            f"{v.middle_peak:,}",
            f"{v.last_peak:,}",
            f"{v.allowed:,}",
            "plateau" if v.plateaued else "[red]GROWS[/red]",
        )
    return table


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dsn",
        default=os.environ.get("TXNQ_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"),
        help="a server where this role may CREATE DATABASE",
    )
    parser.add_argument("--seconds", type=float, default=600.0, help="how long to run")
    parser.add_argument("--sample-seconds", type=float, default=5.0, help="between samples")
    parser.add_argument("--rate", type=float, default=300.0, help="messages per second offered")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args()
    if not 30 <= args.seconds <= 86_400:
        parser.error("--seconds must be from 30 to 86400")
    if not 0.5 <= args.sample_seconds <= args.seconds / 6:
        parser.error("--sample-seconds must be from 0.5 to a sixth of --seconds")
    console = Console(stderr=True)
    with _fresh_database(args.dsn) as dsn:
        config = SoakConfig(dsn, args.seconds, args.sample_seconds, args.rate)
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task("soak", total=args.seconds)
            result = soak(config, lambda done, total: progress.update(task, completed=done))
    if args.json:
        print(
            json.dumps(
                {
                    "seconds": result.seconds,
                    "sent": result.sent,
                    "transactions": result.transactions,
                    "errors": result.errors,
                    "growing": [vars(v) for v in result.growing],
                    "verdicts": [vars(v) | {"plateaued": v.plateaued} for v in result.verdicts],
                    "samples": [vars(s) for s in result.samples],
                },
                indent=2,
            )
        )
    else:
        out = Console()
        if not out.is_terminal:
            out = Console(width=120)  # a file or a pipe: no column cut short
        out.print(_table(result))
        print(
            f"sent {result.sent:,} messages; transactions {result.transactions}; "
            f"errors: {result.errors or 'none'}; growing: "
            + (", ".join(f"{v.relation} ({v.what})" for v in result.growing) or "none")
        )
    return 1 if result.growing or result.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
