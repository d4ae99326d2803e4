"""The long chaos run: the transactional copier under faults, a held xmin
horizon and a load of many producers and consumers, each checked as a
Jepsen-style history; prints one table (faults, messages, anomalies per class,
throughput, latency) and the anomaly counts per class.

    python bench/chaos.py        # 200,000 messages, faults, 3-minute hold, 60 s load
    python bench/chaos.py --messages 20000 --hold-seconds 30 --load-seconds 15  # CI's size
    python bench/chaos.py --dsn postgresql://postgres@127.0.0.1:5432/postgres  # hold, load here
    python bench/chaos.py --shards 2 --messages 20000 --hold-seconds 30 --load-seconds 15  # cluster

The copier always runs on a PostgreSQL of its own (the embedded 18 on a free
port), since it restarts it; with ``--shards N`` on a cluster of its own
(a PL/Proxy proxy and N shards on throwaway PostgreSQL 15 servers), restarting
one shard at a time. The held-xmin and load workloads run in a fresh
database on ``--dsn`` (dropped afterwards), or on their own embedded server.
Exit status 1 when any anomaly, error or deadlock was found.
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import psycopg
from psycopg import sql

from bench.chaoslib.cluster import OwnedServer
from bench.chaoslib.history import ANOMALIES
from bench.chaoslib.workloads import CopierConfig, held_xmin, load, run_copier


@contextmanager
def _fresh_database(server_dsn: str) -> Iterator[str]:
    """A new migrated database on the server, dropped (with its connections)
    when the block ends, however it ends; yields its DSN."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    from txnq.database import migrate

    name = f"txnq_chaos_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(server_dsn, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        params = conninfo_to_dict(server_dsn)
        params["dbname"] = name
        dsn = make_conninfo(**params)  # type: ignore[arg-type]
        migrate.upgrade(dsn)
        yield dsn
    finally:
        with psycopg.connect(server_dsn, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dsn", help="server for the held-xmin and load runs (default: embedded)")
    p.add_argument("--messages", type=int, default=200_000)
    p.add_argument("--copiers", type=int, default=3)
    p.add_argument(
        "--subscription-type", default="failover", help="failover (or shared, once merged)"
    )
    p.add_argument("--txn-size", type=int, default=500)
    p.add_argument("--abort-ratio", type=float, default=1 / 3)
    p.add_argument("--kills-per-copier", type=int, default=5)
    p.add_argument("--coordinators", type=int, default=2)
    p.add_argument("--coordinator-kills", type=int, default=4)
    p.add_argument(
        "--postgres-restarts",
        type=int,
        default=2,
        help="server restarts (with --shards: shard restarts, each shard in turn)",
    )
    p.add_argument(
        "--shards",
        type=int,
        default=0,
        help="run the copier on a cluster of its own with this many shards (a power of two; "
        "PostgreSQL 15 and PL/Proxy: make install-plproxy) instead of one server",
    )
    p.add_argument("--pause", type=float, default=0.05, help="seconds each transaction stays open")
    p.add_argument("--hold-seconds", type=float, default=180)
    p.add_argument("--phase-seconds", type=float, default=20)
    p.add_argument("--xmin-rate", type=float, default=1000, help="offered msg/s while holding")
    p.add_argument("--load-seconds", type=float, default=60)
    p.add_argument("--producers", type=int, default=16)
    p.add_argument("--consumers", type=int, default=8)
    p.add_argument("--skip", action="append", default=[], choices=["copier", "xmin", "load"])
    p.add_argument("--timeout", type=float, default=1800)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.shards < 0 or args.shards & (args.shards - 1):
        p.error(f"--shards must be 0 (one server) or a power of two, not {args.shards}")

    rows: list[tuple[str, str, str, str, str, str]] = []
    per_class: dict[str, dict[str, int]] = {}
    bad = False
    started = time.monotonic()

    if "copier" not in args.skip:
        config = CopierConfig(
            messages=args.messages,
            copiers=args.copiers,
            txn_size=args.txn_size,
            abort_ratio=args.abort_ratio,
            subscription_type=args.subscription_type,
            kills_per_copier=args.kills_per_copier,
            coordinators=args.coordinators,
            coordinator_kills=args.coordinator_kills,
            postgres_restarts=args.postgres_restarts,
            pause=args.pause,
            timeout=args.timeout,
            seed=args.seed,
            shards=args.shards,
        )
        result = run_copier(
            config, progress=lambda d, t, n: print(f"  copier [{d}/{t}] {n}", flush=True)
        )
        faults = (
            f"{result.faults['copier_kills']} copier SIGKILLs, "
            f"{result.faults['coordinator_kills']} coordinator SIGKILLs, "
            f"{result.faults['postgres_restarts']} PostgreSQL restarts"
        )
        extra = []
        if result.missing_outputs or result.extra_outputs:
            extra.append(f"{result.missing_outputs} missing, {result.extra_outputs} extra outputs")
        if result.order_violations:
            extra.append(f"{result.order_violations} key-order violations")
        anomalies = sum(result.report.counts.values()) + sum(result.verifier_report.counts.values())
        rows.append(
            (
                f"transactional copier ({args.copiers}, {args.subscription_type}, "
                f"{result.txns['committed']} commits / {result.txns['aborted']} aborts)",
                faults,
                f"{args.messages:,} in → {result.output_count:,} out",
                f"{anomalies}" + (f" ({'; '.join(extra)})" if extra else ""),
                f"{result.throughput:,.0f} msg/s (paced: {args.pause}s per txn)",
                "",
            )
        )
        per_class["copier"] = {
            k: result.report.counts[k] + result.verifier_report.counts[k] for k in ANOMALIES
        }
        bad |= not result.valid
        print("\n".join(result.notes))

    owned: OwnedServer | None = None
    server_dsn = args.dsn
    if ("xmin" not in args.skip or "load" not in args.skip) and server_dsn is None:
        owned = OwnedServer()
        owned.start()
        server_dsn = owned.dsn.rsplit("/", 1)[0] + "/postgres"
    try:
        if "xmin" not in args.skip:
            assert server_dsn is not None
            with _fresh_database(server_dsn) as dsn:
                x = held_xmin(
                    dsn,
                    phase_seconds=args.phase_seconds,
                    hold_seconds=args.hold_seconds,
                    target_rate=args.xmin_rate,
                )
            ok = x.ratio >= 0.7 and x.lost == 0 and x.dead_after <= max(1000, x.dead_peak // 5)
            bad |= not ok
            rows.append(
                (
                    f"held xmin ({x.hold_seconds:.0f} s snapshot)",
                    "a REPEATABLE READ snapshot held open",
                    f"{x.messages:,}",
                    f"{x.lost} lost",
                    f"{x.rate_before:,.0f} → {x.rate_during:,.0f} → {x.rate_after:,.0f} msg/s "
                    f"({x.ratio:.0%} while held) {'✔' if x.ratio >= 0.7 else '✘'}",
                    f"dead tuples {x.dead_before:,} → {x.dead_peak:,} held → "
                    f"{x.dead_after:,} after vacuum",
                )
            )
        if "load" not in args.skip:
            assert server_dsn is not None
            with _fresh_database(server_dsn) as dsn:
                r = load(
                    dsn,
                    producers=args.producers,
                    consumers=args.consumers,
                    seconds=args.load_seconds,
                )
            bad |= bool(not r.report.valid or r.errors or r.deadlocks)
            per_class["load"] = dict(r.report.counts)
            rows.append(
                (
                    f"load ({r.producers} producers, {r.consumers} consumers, {r.seconds:.0f} s)",
                    f"{len(r.errors)} errors, {r.deadlocks} deadlocks",
                    f"{r.sent:,} sent, {r.received:,} received",
                    f"{sum(r.report.counts.values())}",
                    f"{r.throughput:,.0f} msg/s",
                    f"produce→consume p50 {r.latency_p50 * 1000:.0f} ms, "
                    f"p99 {r.latency_p99 * 1000:.0f} ms, max {r.latency_max * 1000:.0f} ms",
                )
            )
    finally:
        if owned is not None:
            owned.stop()

    print()
    print(f"`python bench/chaos.py {' '.join(sys.argv[1:])}` ({time.monotonic() - started:.0f} s)")
    print()
    print("| workload | faults injected | messages | anomalies | throughput | latency / other |")
    print("|---|---|---:|---:|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if per_class:
        print()
        print("| anomaly class | " + " | ".join(per_class) + " |")
        print("|---|" + "---:|" * len(per_class))
        for kind in ANOMALIES:
            print(f"| {kind} | " + " | ".join(str(c[kind]) for c in per_class.values()) + " |")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
