"""Lifecycle soak: storage must plateau while producers and consumers run, and GC
may not cost more than 20% of throughput.

    python bench/lifecycle.py [--dsn DSN] [--duration 5m] [--warmup 60s] [--json]

Run it against a scratch database (without --dsn and TXNQ_DSN: the embedded
PostgreSQL under ./.txnq): it publishes small ledger and entry-log rollover
settings to the database for the run (entry logs roll every ``--log-age``) and
puts the defaults back at the end.

What runs, all bounded by ``--duration``:

- a ``hot`` topic (4 partitions), one producer sending 100-byte messages as
  fast as it can (send_async, batched) and one subscription consuming and
  acknowledging everything;
- a ``slow`` topic, 200 messages/s, whose subscription acknowledges a message
  only when it is ``--slow-lag`` old: every entry log holds a few live slow
  entries among many dead hot ones, so GC compacts (minor threshold) instead
  of only dropping;
- after ``--warmup`` without any lifecycle job (the reference throughput), the
  lifecycle every ``--gc-every``: entry-log roll check, retention (retention 0:
  a ledger goes once consumed), entry-log GC with minor compaction, and the
  scheduler's vacuum of the hot tables (which acts only where dead tuples
  piled up: autovacuum off or behind).

Printed: every ``--sample`` seconds the total size of the ``txnq`` schema
(tables, indexes, TOAST), the entry logs attached, the dead tuples in the hot
tables and the produce/consume rates; then whether storage plateaued (its
least-squares growth in the GC phase is at most 5% of its growth in the
warm-up, when nothing was reclaimed), the produce/consume rates with GC on versus the
warm-up without it, and per second with a GC step running versus not
(target: GC costs at most 20%), next to PostgreSQL's own batched INSERT rate of
the same messages measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import psycopg
from produce_consume import RAW_TABLE, payloads, raw_insert_batched

import txnq
from txnq import lifecycle
from txnq.database.connections import libpq_dsn
from txnq.database.migrate import upgrade
from txnq.durations import parse_duration
from txnq.settings import load_settings

PARTITIONS = 4
SLOW_RATE = 200  # messages per second on the slow topic
GC_GRACE_SECONDS = 5.0  # sealed entry logs are left alone this long (the library's is 60 s)
HOT_TABLES = (
    "partitions",
    "cursors",
    "individual_acks",
    "producer_sequences",
    "consumers",
    "consumer_waiters",
    "ledgers",
    "entry_logs",
    "config",
)

STORAGE = """
SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint,
       count(*) FILTER (WHERE c.relname ~ '^entries_[0-9]+$' AND c.relispartition)
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = 'txnq' AND c.relkind = 'r'
"""
DEAD_TUPLES = """
SELECT relname, n_dead_tup FROM pg_stat_user_tables
 WHERE schemaname = 'txnq' AND relname = ANY(%s)
"""


@dataclass
class Tally:
    """Messages per whole second since the start, and the GC steps' intervals."""

    start: float
    produced: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    consumed: dict[int, int] = field(default_factory=lambda: defaultdict(int))
    gc_spans: list[tuple[float, float]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, counts: dict[int, int], n: int) -> None:
        with self.lock:
            counts[int(time.monotonic() - self.start)] += n


def produce_hot(client: txnq.Client, topic: str, stop: threading.Event, tally: Tally) -> None:
    data = payloads(4096)
    with client.producer(topic) as producer:
        i = 0
        while not stop.is_set():
            for _ in range(1000):
                producer.send_async(data[i % len(data)])
                i += 1
            producer.flush()
            tally.add(tally.produced, 1000)


def produce_slow(client: txnq.Client, topic: str, stop: threading.Event) -> None:
    with client.producer(topic) as producer:
        while not stop.wait(0.1):
            for _ in range(SLOW_RATE // 10):
                producer.send_async(b"slow".ljust(100, b"."))
            producer.flush()


def consume_hot(client: txnq.Client, topic: str, stop: threading.Event, tally: Tally) -> None:
    consumer = client.subscribe(topic, "soak", initial_position="earliest")
    try:
        while not stop.is_set():
            batch = consumer.batch_receive(max_messages=1000, timeout=0.5)
            last: dict[int, Any] = {}
            for message in batch:
                last[message.partition] = message
            for message in last.values():
                consumer.acknowledge_cumulative(message)
            tally.add(tally.consumed, len(batch))
    finally:
        consumer.close()


def consume_slow(client: txnq.Client, topic: str, stop: threading.Event, lag: float) -> None:
    """Acknowledge each message once it is ``lag`` seconds old."""
    consumer = client.subscribe(topic, "lagging", initial_position="earliest")
    waiting: list[Any] = []
    try:
        while not stop.is_set():
            waiting.extend(consumer.batch_receive(max_messages=1000, timeout=0.2))
            now = time.time()
            due = [m for m in waiting if now - m.publish_time.timestamp() >= lag]
            if due:
                consumer.acknowledge_cumulative(due[-1])
                waiting = waiting[len(due) :]
    finally:
        consumer.close()


def run_lifecycle(
    client: txnq.Client, stop: threading.Event, tally: Tally, warmup: float, every: float
) -> list[dict[str, Any]]:
    """After ``warmup`` seconds, roll check + retention + minor GC every ``every`` seconds."""
    runs: list[dict[str, Any]] = []
    if stop.wait(warmup):
        return runs
    while not stop.is_set():
        began = time.monotonic()
        client.query("roll_entry_log", {"force": False})
        retention = lifecycle.apply_retention(client)
        gc = lifecycle.collect_entry_logs(
            client, compaction="minor", grace_seconds=GC_GRACE_SECONDS
        )
        vacuumed = lifecycle.vacuum_hot_tables(client)
        ended = time.monotonic()
        with tally.lock:
            tally.gc_spans.append((began - tally.start, ended - tally.start))
        runs.append(
            {
                "at_s": round(began - tally.start, 1),
                "seconds": round(ended - began, 3),
                "ledgers_deleted": len(retention.items),
                "dropped": sum(1 for i in gc.items if i.action == "dropped"),
                "compacted": sum(1 for i in gc.items if i.action == "compacted"),
                "moved_bytes": sum(i.moved_bytes for i in gc.items),
                "reclaimed_bytes": gc.reclaimed_bytes,
                "vacuumed": [v.table for v in vacuumed],
            }
        )
        stop.wait(max(0.0, every - (ended - began)))
    return runs


def guarded(tally: Tally, target: Any, *args: Any) -> threading.Thread:
    def run() -> None:
        try:
            target(*args)
        except Exception as exc:  # reported at the end; the soak goes on
            tally.errors.append(f"{target.__name__}: {type(exc).__name__}: {exc}")

    thread = threading.Thread(target=run, name=target.__name__, daemon=True)
    thread.start()
    return thread


def sample(conn: psycopg.Connection[Any], tally: Tally) -> dict[str, Any]:
    row = conn.execute(STORAGE).fetchone()
    assert row is not None
    dead = dict(conn.execute(DEAD_TUPLES, (list(HOT_TABLES),)).fetchall())
    return {
        "t": round(time.monotonic() - tally.start),
        "storage_bytes": int(row[0]),
        "entry_logs": int(row[1]),
        "dead_tuples": sum(dead.values()),
        "dead_by_table": dead,
    }


def slope(points: list[dict[str, Any]]) -> float:
    """Least-squares growth of storage, bytes per second (0 for fewer than 2 points)."""
    if len(points) < 2:
        return 0.0
    fit = statistics.linear_regression(
        [float(p["t"]) for p in points], [float(p["storage_bytes"]) for p in points]
    )
    return fit.slope


def rates(tally: Tally, first: int, last: int, gc: bool | None) -> tuple[float, float]:
    """Mean produce/consume msgs/s over whole seconds [first, last); gc=True only
    seconds a GC step overlapped, False only the others, None all of them."""

    def busy(second: int) -> bool:
        return any(b < second + 1 and e > second for b, e in tally.gc_spans)

    seconds = [s for s in range(first, last) if gc is None or busy(s) == gc]
    if not seconds:
        return 0.0, 0.0
    return (
        statistics.fmean(tally.produced.get(s, 0) for s in seconds),
        statistics.fmean(tally.consumed.get(s, 0) for s in seconds),
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", default=os.environ.get("TXNQ_DSN"))
    parser.add_argument("--duration", default="5m", help="whole soak (default 5m)")
    parser.add_argument("--warmup", default="60s", help="first part without GC (default 60s)")
    parser.add_argument("--gc-every", default="10s", help="lifecycle period (default 10s)")
    parser.add_argument("--log-age", default="15s", help="entry logs roll at this age")
    parser.add_argument("--slow-lag", default="20s", help="slow subscription's ack delay")
    parser.add_argument("--sample", default="10s", help="storage sample period")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    duration = parse_duration(args.duration, what="--duration")
    warmup = parse_duration(args.warmup, what="--warmup")
    every = parse_duration(args.gc_every, what="--gc-every")
    sample_every = parse_duration(args.sample, what="--sample")
    if not 0 < warmup < duration or duration > 3600:
        parser.error("need 0 < --warmup < --duration <= 1h")

    soak = load_settings(
        ledger_max_entries=200,
        ledger_max_rollover_seconds=10,
        ledger_min_rollover_seconds=0,
        entry_log_max_age_seconds=parse_duration(args.log_age, what="--log-age"),
        entry_log_max_bytes="256MiB",
    )
    if args.dsn:  # the embedded server is migrated (with these settings) by Client
        upgrade(args.dsn, settings=soak)
    client = txnq.Client(args.dsn, settings=soak)
    dsn = client.dsn
    suffix = uuid.uuid4().hex[:6]
    hot, slow = f"soak-hot-{suffix}", f"soak-slow-{suffix}"
    client.admin.create_topic(hot, partitions=PARTITIONS)
    client.admin.create_topic(slow)
    conn = psycopg.connect(libpq_dsn(dsn), autocommit=True)
    version = conn.execute("SHOW server_version").fetchone()[0]  # type: ignore[index]
    conn.execute(RAW_TABLE)
    raw_rate = raw_insert_batched(conn, 200_000, payloads(200_000))
    conn.execute("DROP TABLE txnq_bench_raw")

    stop = threading.Event()
    tally = Tally(time.monotonic())
    gc_runs: list[dict[str, Any]] = []
    threads = [
        guarded(tally, produce_hot, client, hot, stop, tally),
        guarded(tally, produce_slow, client, slow, stop),
        guarded(tally, consume_hot, client, hot, stop, tally),
        guarded(tally, consume_slow, client, slow, stop, parse_duration(args.slow_lag, what="lag")),
        guarded(
            tally,
            lambda: gc_runs.extend(run_lifecycle(client, stop, tally, warmup, every)),
        ),
    ]
    samples: list[dict[str, Any]] = []
    if not args.json:
        print(
            f"PostgreSQL {version}; soak {duration:g}s ({warmup:g}s warm-up without GC), "
            f"entry logs roll every {args.log_age}, GC every {every:g}s"
        )
        print(
            f"{'t (s)':>6} {'phase':>7} {'storage':>10} {'logs':>5} {'dead tup':>9} "
            f"{'produce/s':>10} {'consume/s':>10}"
        )
    try:
        while time.monotonic() - tally.start < duration and not tally.errors:
            time.sleep(min(sample_every, duration - (time.monotonic() - tally.start)))
            point = sample(conn, tally)
            second = point["t"]
            p, c = rates(tally, max(0, second - int(sample_every)), second, None)
            point |= {"produce_per_s": round(p), "consume_per_s": round(c)}
            samples.append(point)
            if not args.json:
                phase = "warm-up" if second <= warmup else "GC"
                print(
                    f"{second:6d} {phase:>7} {point['storage_bytes'] / 2**20:8.1f}Mi "
                    f"{point['entry_logs']:5d} {point['dead_tuples']:9d} {p:10,.0f} {c:10,.0f}"
                )
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    end = int(time.monotonic() - tally.start)
    # Clean up the soak's topics and give the database its default settings back.
    client.admin.delete_topic(hot, force=True)
    client.admin.delete_topic(slow, force=True)
    upgrade(dsn, settings=load_settings())
    conn.close()
    client.close()

    # Plateau: storage is a saw-tooth (a log fills, GC drops it), so compare
    # trends, not points: the least-squares slope of storage over time in the
    # GC phase (after its first two GC periods, which drop the warm-up's
    # backlog) against the slope of the warm-up, when nothing was reclaimed.
    warm = [s for s in samples if s["t"] <= warmup]
    steady = [s for s in samples if s["t"] > warmup + 2 * every]
    warm_slope = slope(warm)
    gc_slope = slope(steady)
    plateau = len(steady) >= 3 and gc_slope <= 0.05 * max(warm_slope, 1.0)
    w = int(warmup)
    warm_p, warm_c = rates(tally, 5, w, None)  # the first seconds ramp up
    gc_p, gc_c = rates(tally, w, end, None)
    busy_p, busy_c = rates(tally, w, end, True)
    idle_p, idle_c = rates(tally, w, end, False)
    cost = 1 - (gc_p + gc_c) / (warm_p + warm_c) if warm_p + warm_c else 0.0
    busy_cost = 1 - (busy_p + busy_c) / (idle_p + idle_c) if idle_p + idle_c else 0.0
    summary = {
        "server_version": version,
        "duration_s": duration,
        "warmup_s": warmup,
        "raw_batched_insert_per_s": round(raw_rate),
        "storage_growth_warmup_bytes_per_s": round(warm_slope),
        "storage_growth_gc_phase_bytes_per_s": round(gc_slope),
        "storage_gc_phase_min_bytes": min((s["storage_bytes"] for s in steady), default=0),
        "storage_gc_phase_max_bytes": max((s["storage_bytes"] for s in steady), default=0),
        "plateau": plateau,
        "dead_tuples_at_end": samples[-1]["dead_by_table"] if samples else {},
        "max_dead_tuples": max((s["dead_tuples"] for s in samples), default=0),
        "warmup_produce_per_s": round(warm_p),
        "warmup_consume_per_s": round(warm_c),
        "gc_phase_produce_per_s": round(gc_p),
        "gc_phase_consume_per_s": round(gc_c),
        "gc_cost": round(cost, 3),
        "seconds_with_gc_step_produce_per_s": round(busy_p),
        "seconds_without_gc_step_produce_per_s": round(idle_p),
        "gc_step_cost": round(busy_cost, 3),
        "gc_runs": len(gc_runs),
        "entry_logs_dropped": sum(r["dropped"] for r in gc_runs),
        "entry_logs_compacted": sum(r["compacted"] for r in gc_runs),
        "errors": tally.errors,
    }
    if args.json:
        print(json.dumps({"summary": summary, "samples": samples, "gc_runs": gc_runs}, indent=2))
    else:
        print()
        print(f"raw batched INSERT (PostgreSQL, same run): {raw_rate:12,.0f} msgs/s")
        print(
            f"storage grew {warm_slope / 2**20:.2f} MiB/s in the warm-up (no GC) and "
            f"{gc_slope / 2**20:.2f} MiB/s in the GC phase, between "
            f"{summary['storage_gc_phase_min_bytes'] / 2**20:.0f} and "
            f"{summary['storage_gc_phase_max_bytes'] / 2**20:.0f} MiB: "
            + ("PLATEAU" if plateau else "STILL GROWING")
            + " (plateau: GC-phase growth <= 5% of the warm-up's)"
        )
        dead = ", ".join(f"{k} {v}" for k, v in sorted(summary["dead_tuples_at_end"].items()))
        print(
            f"dead tuples in hot tables: at most {summary['max_dead_tuples']}; at the end: {dead}"
        )
        print(
            f"GC runs {len(gc_runs)}: {summary['entry_logs_dropped']} entry logs dropped, "
            f"{summary['entry_logs_compacted']} compacted"
        )
        print(f"{'':32} {'produce/s':>10} {'consume/s':>10}")
        print(f"{'warm-up, no GC':32} {warm_p:10,.0f} {warm_c:10,.0f}")
        print(f"{'GC phase':32} {gc_p:10,.0f} {gc_c:10,.0f}   cost {cost:.0%} (target <= 20%)")
        print(f"{'  seconds with a GC step':32} {busy_p:10,.0f} {busy_c:10,.0f}")
        print(f"{'  seconds without':32} {idle_p:10,.0f} {idle_c:10,.0f}   cost {busy_cost:.0%}")
        for error in tally.errors:
            print(f"ERROR {error}")
    return 1 if tally.errors else 0


if __name__ == "__main__":
    sys.exit(main())
