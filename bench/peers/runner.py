"""The runner: every peer in its own fresh database on one server, --runs
times, then the medians as tables (or JSON)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import traceback
from dataclasses import asdict
from types import ModuleType
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

import txnq.database.connections
from bench.peers import pgmq_peer, pgq, pgqueuer_peer, procrastinate_peer, raw, txnq_peer
from bench.peers.common import (
    DATABASE_PREFIX,
    OPERATIONS,
    PAYLOAD_BYTES,
    RAW_LABELS,
    Config,
    PeerRun,
    Skipped,
    check_prefix,
    exclusive_run,
    fresh_database,
    server_facts,
    text_payloads,
)
from bench.produce_consume import payloads

PEERS: tuple[ModuleType, ...] = (raw, pgq, pgqueuer_peer, procrastinate_peer, pgmq_peer, txnq_peer)
COMPARED = [p for p in PEERS if p is not raw]
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/postgres"
SMOKE = Config(messages=500, single=20, ctp_messages=500, seconds=30.0, commits=20)
# The operations the targets speak of: txnq must be ahead of every peer there.
TARGET_OPS = ("send_single", "send_batch", "consume_ack", "consume_ack_1000", "consume_ack_shared")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers",
        description=(
            "txnq side by side with raw PostgreSQL, PgQ, pgqueuer, procrastinate and pgmq: "
            f"{PAYLOAD_BYTES}-byte messages, one server, a fresh database txnq_peer_<name> "
            "per peer and run (created and dropped here; no other database is touched). "
            "Every figure is the median of --runs runs, as msgs/s and as a ratio to the raw "
            "PostgreSQL limit of the same run. Optional peers: pip install '.[bench]' and "
            "apt-get install postgresql-15-pgq3; a missing one is reported as skipped."
        ),
    )
    parser.add_argument(
        "--dsn",
        default=os.environ.get("TXNQ_DSN") or DEFAULT_DSN,
        help=f"the server, as a DSN of a database to connect to (TXNQ_DSN, else {DEFAULT_DSN})",
    )
    defaults = Config()
    parser.add_argument(
        "--messages",
        type=int,
        default=defaults.messages,
        help="batched send, consume and storage",
    )
    parser.add_argument(
        "--single", type=int, default=defaults.single, help="single sends per client"
    )
    parser.add_argument(
        "--ctp-messages",
        type=int,
        default=defaults.ctp_messages,
        help="transactional produce and consume-transform-produce",
    )
    parser.add_argument(
        "--commits",
        type=int,
        default=defaults.commits,
        help=f"commit latencies: commits per client ({defaults.clients} clients)",
    )
    parser.add_argument(
        "--seconds", type=float, default=defaults.seconds, help="time bound of each phase"
    )
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--peers",
        default=",".join(p.name for p in COMPARED),
        help="comma-separated subset of " + ", ".join(p.name for p in COMPARED),
    )
    parser.add_argument(
        "--smoke", action="store_true", help="tiny counts and one run, for the test suite"
    )
    parser.add_argument(
        "--database-prefix",
        default=DATABASE_PREFIX,
        help=f"the runner's databases are <prefix><peer> (default {DATABASE_PREFIX}<peer>)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--markdown", action="store_true", help="print the tables as Markdown (docs/benchmarks.md)"
    )
    parser.add_argument(
        "--from-json",
        metavar="FILE",
        help="render the report a --json run wrote to FILE instead of running",
    )
    args = parser.parse_args(argv)
    for option in ("messages", "single", "ctp_messages", "commits", "runs"):
        if getattr(args, option) < 1:
            parser.error(f"--{option.replace('_', '-')} must be at least 1")
    if args.seconds <= 0:
        parser.error("--seconds must be positive")
    bad_prefix = check_prefix(args.database_prefix)
    if bad_prefix:
        parser.error(bad_prefix)
    names = [n.strip() for n in args.peers.split(",") if n.strip()]
    unknown = sorted(set(names) - {p.name for p in COMPARED})
    if unknown:
        parser.error(f"unknown peers {unknown}; choose from {[p.name for p in COMPARED]}")
    args.peer_names = names
    return args


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def aggregate(runs: list[dict[str, PeerRun]], peers: list[ModuleType]) -> dict[str, Any]:
    """Median rate and median ratio to the same run's raw limit, per op and peer."""
    table: dict[str, Any] = {}
    for op in OPERATIONS:
        row: dict[str, Any] = {}
        limits = [r["raw"].rates.get(op.limit) for r in runs if "raw" in r]
        row["limit"] = {
            "name": op.limit,
            "msgs_per_s": median([v for v in limits if v]),
        }
        for peer in peers:
            rates, ratios, limits_used, skipped = [], [], [], None
            for run in runs:
                result = run.get(peer.name)
                if result is None:
                    continue
                if op.key in result.rates:
                    rates.append(result.rates[op.key])
                    # Single sends: the raw commits interleaved with this
                    # peer's own sends; else the raw phase of the same run.
                    limit = result.rates.get(op.paired) if op.paired else None
                    if not limit and "raw" in run:
                        limit = run["raw"].rates.get(op.limit)
                    if limit:
                        ratios.append(result.rates[op.key] / limit)
                        limits_used.append(limit)
                elif op.key in result.skipped:
                    skipped = result.skipped[op.key]
            row[peer.name] = {
                "msgs_per_s": median(rates),
                "ratio": median(ratios),
                "limit_msgs_per_s": median(limits_used),
                "runs": len(rates),
                "skipped": skipped if not rates else None,
            }
        table[op.key] = row
    return table


def transactions(runs: list[dict[str, PeerRun]]) -> dict[str, Any]:
    """Issue 23's transaction targets on the medians of txnq's runs: its
    transactional produce next to its own batched send of the same run,
    consume-transform-produce next to its raw limit, and commit() p50 / p99
    next to a raw single-row INSERT + COMMIT with as many clients."""
    own, in_flight, ctp, commit, raw_commit = [], [], [], [], []
    for run in runs:
        ours, base = run.get("txnq"), run.get("raw")
        if ours is None:
            continue
        if ours.rates.get("txn_produce") and ours.rates.get("send_batch"):
            own.append(ours.rates["txn_produce"] / ours.rates["send_batch"])
        if ours.rates.get("txn_produce_in_flight") and ours.rates.get("send_batch"):
            in_flight.append(ours.rates["txn_produce_in_flight"] / ours.rates["send_batch"])
        if base is not None and ours.rates.get("ctp") and base.rates.get("ctp"):
            ctp.append(ours.rates["ctp"] / base.rates["ctp"])
        if "commit" in ours.latencies:
            commit.append(ours.latencies["commit"])
        if base is not None and "commit" in base.latencies:
            raw_commit.append(base.latencies["commit"])

    def latency(cells: list[dict[str, float]]) -> dict[str, float | None]:
        return {
            "p50": median([c["p50"] for c in cells]),
            "p99": median([c["p99"] for c in cells]),
            "count": sum(c["count"] for c in cells),
        }

    return {
        "txn_produce_of_send_batch": median(own),
        "txn_produce_in_flight_of_send_batch": median(in_flight),
        "ctp_of_limit": median(ctp),
        "commit_ms": latency(commit),
        "raw_commit_ms": latency(raw_commit),
    }


def transaction_lines(report: dict[str, Any]) -> list[str]:
    txn = report.get("transactions") or {}
    lines = []
    own = txn.get("txn_produce_of_send_batch")
    if own is not None:
        lines.append(
            f"txn_produce: {own:.2f}x of txnq's own batched send (target >= 0.8x)"
            + ("" if own >= 0.8 else " NOT met")
        )
    in_flight = txn.get("txn_produce_in_flight_of_send_batch")
    if in_flight is not None:
        lines.append(
            f"txn_produce with commits in flight (commit_async): {in_flight:.2f}x of txnq's "
            "own batched send (target >= 0.8x)" + ("" if in_flight >= 0.8 else " NOT met")
        )
    ctp = txn.get("ctp_of_limit")
    if ctp is not None:
        lines.append(
            f"ctp: {ctp:.2f}x of its raw limit (target >= 0.6x)"
            + ("" if ctp >= 0.6 else " NOT met")
        )
    ours, raw_ms = txn.get("commit_ms") or {}, txn.get("raw_commit_ms") or {}
    if ours.get("p50") is not None and raw_ms.get("p50"):
        ratio = ours["p50"] / raw_ms["p50"]
        lines.append(
            f"commit() p50 {ours['p50']:.2f} ms, p99 {ours['p99']:.2f} ms "
            f"({ours['count']:,} commits); raw INSERT+COMMIT p50 {raw_ms['p50']:.2f} ms, "
            f"p99 {raw_ms['p99']:.2f} ms: p50 {ratio:.2f}x (target <= 2x)"
            + ("" if ratio <= 2 else " NOT met")
        )
    return lines


def verdicts(medians: dict[str, Any], peers: list[ModuleType]) -> list[str]:
    """The issue's targets, checked on the medians: txnq ahead of every peer,
    and within 2x of the raw limit wherever a peer is."""
    lines = []
    for key in TARGET_OPS:
        row = medians[key]
        ours = row.get("txnq", {})
        if ours.get("msgs_per_s") is None:
            continue
        behind = [
            p.name
            for p in peers
            if p.name != "txnq"
            and row.get(p.name, {}).get("msgs_per_s") is not None
            and row[p.name]["msgs_per_s"] > ours["msgs_per_s"]
        ]
        near = [
            p.name
            for p in peers
            if p.name != "txnq" and (row.get(p.name, {}).get("ratio") or 0) >= 0.5
        ]
        ratio = ours.get("ratio") or 0
        text = f"{key}: txnq " + (
            "ahead of every peer measured" if not behind else f"BEHIND {', '.join(behind)}"
        )
        if near:
            text += (
                f"; within 2x of the limit ({ratio:.0%})"
                if ratio >= 0.5
                else (f"; NOT within 2x of the limit ({ratio:.0%}) where {', '.join(near)} is")
            )
        lines.append(text)
    return lines


def rate_text(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def render(console: Console, report: dict[str, Any], peers: list[ModuleType]) -> None:
    facts = report["server"]
    cfg = report["config"]
    console.print(
        f"PostgreSQL {facts['server_version']} (shared_buffers {facts['shared_buffers']}, "
        f"synchronous_commit {facts['synchronous_commit']}, fsync {facts['fsync']}, "
        f"autovacuum {facts['autovacuum']}); {PAYLOAD_BYTES}-byte messages; "
        f"{cfg['messages']:,} batched, {cfg['single']:,} single per client, "
        f"{cfg['ctp_messages']:,} transactional; each phase at most {cfg['seconds']:g}s; "
        f"median of {report['runs']} run(s)"
    )
    limits = Table(title="raw PostgreSQL limits (msgs/s)")
    limits.add_column("measurement")
    limits.add_column("msgs/s", justify="right")
    for key, label in RAW_LABELS.items():
        limits.add_row(label, rate_text(report["raw"].get(key)))
    console.print(limits)
    for op in OPERATIONS:
        row = report["operations"][op.key]
        table = Table(
            title=f"{op.title} — limit: {RAW_LABELS[op.limit]} "
            f"{rate_text(row['limit']['msgs_per_s'])} msgs/s"
        )
        table.add_column("")
        for peer in peers:
            table.add_column(peer.title, justify="right")
        rates, ratios, paired = ["msgs/s"], ["× limit"], ["raw commits interleaved"]
        for peer in peers:
            cell = row.get(peer.name, {})
            paired.append(rate_text(cell.get("limit_msgs_per_s")))
            if cell.get("msgs_per_s") is not None:
                rates.append(rate_text(cell["msgs_per_s"]))
                ratios.append(f"{cell['ratio']:.2f}" if cell.get("ratio") is not None else "")
            else:
                rates.append(
                    "skipped" if cell.get("skipped") or peer.name in report["skipped"] else "—"
                )
                ratios.append("")
        table.add_row(*rates)
        if op.paired:
            table.add_row(*paired)
        table.add_row(*ratios)
        console.print(table)
    storage = Table(title="storage after the consume phase (no VACUUM before; then one VACUUM)")
    storage.add_column("")
    for peer in [raw, *peers]:
        storage.add_column(peer.title, justify="right")
    fields = (
        ("messages consumed", "consumed", lambda v: f"{v:,}"),
        ("table bytes", "table_bytes", lambda v: f"{v / 2**20:,.1f} MiB"),
        ("index bytes", "index_bytes", lambda v: f"{v / 2**20:,.1f} MiB"),
        ("dead tuples", "dead_tuples", lambda v: f"{v:,}"),
        ("live tuples", "live_tuples", lambda v: f"{v:,}"),
        ("table + index after VACUUM", "bytes_after_vacuum", lambda v: f"{v / 2**20:,.1f} MiB"),
    )
    for label, key, fmt in fields:
        cells = [label]
        for peer in [raw, *peers]:
            value = report["storage"].get(peer.name)
            cells.append(fmt(value[key]) if value else "—")
        storage.add_row(*cells)
    console.print(storage)
    for name, reason in report["skipped"].items():
        console.print(f"[yellow]skipped {name}[/]: {reason}")
    for op_key, per_peer in report["op_skips"].items():
        for name, reason in per_peer.items():
            console.print(f"[yellow]skipped {name} {op_key}[/]: {reason}")
    for name, error in report["errors"].items():
        console.print(f"[red]failed {name}[/]: {error}")
    for line in report["targets"]:
        console.print(line)
    for line in transaction_lines(report):
        console.print(line)


def markdown(report: dict[str, Any], peers: list[ModuleType]) -> str:
    """The report as the Markdown tables of docs/benchmarks.md."""
    titles = [p.title for p in peers]
    lines = ["| raw PostgreSQL | msgs/s |", "|---|---:|"]
    lines += [
        f"| {label} | {rate_text(report['raw'].get(key))} |" for key, label in RAW_LABELS.items()
    ]
    lines += ["", "| operation (limit) | " + " | ".join(titles) + " |"]
    lines.append("|---|" + "---:|" * len(peers))
    for op in OPERATIONS:
        row = report["operations"][op.key]
        limit = (
            "raw commits interleaved with each peer's sends"
            if op.paired
            else f"{RAW_LABELS[op.limit]}: {rate_text(row['limit']['msgs_per_s'])} msgs/s"
        )
        cells = []
        for peer in peers:
            cell = row.get(peer.name, {})
            if cell.get("msgs_per_s") is None:
                cells.append(
                    "skipped" if cell.get("skipped") or peer.name in report["skipped"] else "—"
                )
                continue
            text = f"{rate_text(cell['msgs_per_s'])} ({cell['ratio']:.2f}×"
            if op.paired:
                text += f" of {rate_text(cell.get('limit_msgs_per_s'))}"
            cells.append(text + ")")
        lines.append(f"| {op.title} ({limit}) | " + " | ".join(cells) + " |")
    lines += ["", "| storage after the consume phase | raw | " + " | ".join(titles) + " |"]
    lines.append("|---|---:|" + "---:|" * len(peers))
    mib = 2**20
    for label, key, fmt in (
        ("messages consumed", "consumed", lambda v: f"{v:,}"),
        ("table + index", None, lambda v: f"{v / mib:,.1f} MiB"),
        ("of which index", "index_bytes", lambda v: f"{v / mib:,.1f} MiB"),
        ("dead tuples", "dead_tuples", lambda v: f"{v:,}"),
        ("table + index after one VACUUM", "bytes_after_vacuum", lambda v: f"{v / mib:,.1f} MiB"),
        ("live rows after that VACUUM", "live_tuples", lambda v: f"{v:,}"),
    ):
        cells = []
        for name in ["raw", *(p.name for p in peers)]:
            value = report["storage"].get(name)
            if not value:
                cells.append("—")
            else:
                number = value["table_bytes"] + value["index_bytes"] if key is None else value[key]
                cells.append(fmt(number))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    extra = transaction_lines(report)
    if extra:
        lines += ["", *(f"- {line}" for line in extra)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.from_json:
        with open(args.from_json) as f:
            saved = json.load(f)
        shown = [p for p in COMPARED if p.name in saved["operations"]["send_batch"]]
        if args.markdown:
            print(markdown(saved, shown))
        else:
            render(Console(width=140), saved, shown)
        return 0
    if args.smoke:
        cfg = SMOKE
        args.runs = 1
    else:
        cfg = Config(
            messages=args.messages,
            single=args.single,
            ctp_messages=args.ctp_messages,
            commits=args.commits,
            seconds=args.seconds,
        )
    server = txnq.database.connections.libpq_dsn(args.dsn)
    facts = server_facts(server)
    peers = [p for p in COMPARED if p.name in args.peer_names]
    skipped: dict[str, str] = {}
    for peer in peers:
        reason = peer.available(server)
        if reason:
            skipped[peer.name] = reason
    active = [raw, *(p for p in peers if p.name not in skipped)]
    data = {"bytes": payloads(cfg.messages), "text": text_payloads(cfg.messages)}
    runs: list[dict[str, PeerRun]] = []
    errors: dict[str, str] = {}
    console = Console(stderr=True)
    started = time.monotonic()
    with (
        exclusive_run(server, args.database_prefix),
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total}"),
            TimeElapsedColumn(),
            console=console,
            transient=args.json,
        ) as progress,
    ):
        task = progress.add_task("peers", total=args.runs * len(active))
        for run_index in range(args.runs):
            results: dict[str, PeerRun] = {}
            for peer in active:
                if peer.name in errors:
                    progress.advance(task)
                    continue

                def say(phase: str, peer: ModuleType = peer, run_index: int = run_index) -> None:
                    progress.update(
                        task,
                        description=f"run {run_index + 1}/{args.runs} · {peer.title} · {phase}",
                    )

                try:
                    with fresh_database(server, peer.name, args.database_prefix) as dsn:
                        results[peer.name] = peer.run(dsn, cfg, data[peer.payload], say)
                except Skipped as exc:
                    skipped[peer.name] = str(exc)
                except Exception as exc:  # reported, and the other peers still run
                    errors[peer.name] = f"{type(exc).__name__}: {exc}"
                    if not args.json:
                        console.print(traceback.format_exc())
                progress.advance(task)
            runs.append(results)
    shown = [p for p in peers if p.name not in errors]
    medians = aggregate(runs, shown)
    last = runs[-1] if runs else {}
    op_skips: dict[str, dict[str, str]] = {}
    for op_key, row in medians.items():
        for name, cell in row.items():
            if name != "limit" and cell.get("skipped"):
                op_skips.setdefault(op_key, {})[name] = cell["skipped"]
    report: dict[str, Any] = {
        "server": facts,
        "config": asdict(cfg),
        "runs": len(runs),
        "seconds": round(time.monotonic() - started, 1),
        "raw": {
            key: median([r["raw"].rates[key] for r in runs if "raw" in r and key in r["raw"].rates])
            for key in RAW_LABELS
        },
        "operations": medians,
        "storage": {
            name: result.storage.as_dict()
            for name, result in last.items()
            if result.storage is not None
        },
        "notes": {name: result.notes for name, result in last.items() if result.notes},
        "skipped": skipped,
        "op_skips": op_skips,
        "errors": errors,
        "targets": verdicts(medians, shown),
        "transactions": transactions(runs),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    elif args.markdown:
        print(markdown(report, shown))
    else:
        out = Console()
        if not out.is_terminal:
            out = Console(width=140)
        render(out, report, shown)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
