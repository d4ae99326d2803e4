"""Cluster benchmark: txnq directly on shard servers vs through the PL/Proxy proxy, in one run.

    python -m bench.cluster [--shards 1,2,4] [--messages 60000] [--single 800] [--rounds 3] [--json]

It starts its own throwaway PostgreSQL 15 servers (txnq.cluster.servers: a
proxy and as many shard servers as the largest shard count, 127.0.0.1 and a
Unix socket in a temporary directory only, removed at the end) and measures,
for every shard count N, the same work two ways, on the same N servers:

- direct: a plain migrated txnq database on each of the N servers (no proxy);
  the topic's share of each server is its own topic there, with the
  partitions the cluster would put on that server;
- proxy: a 4-partition topic created through the proxy of an N-shard cluster
  whose shards are other databases of the same N servers, the clients' DSN
  at the proxy, in two routes: "proxy" is the client as it comes
  (CLUSTER_ROUTE=direct: the hot path, plain appends, fetches and acks, on
  the owning shard after a lookup at the proxy, as Pulsar and Kafka clients
  do; txnq.database.routes), "hop" is every call through the proxy's
  PL/Proxy functions (CLUSTER_ROUTE=proxy: the cost of the hop itself).

Each side runs N client processes together, one per server: on the direct
side client i talks to server i; through the proxy client i produces to the
partitions the proxy places on shard i and consumes the partitions a
failover subscription assigns it (one shard's partitions each). A figure is
the sum: all messages / (last client's end - first client's start).
Everything runs --rounds times (the sides' order rotating each round);
rates are medians, ratios the median of the rounds' ratios.
Measured, 100-byte messages:

- raw batched INSERT (1000 rows per autocommit statement) of the same rows
  on the direct databases: the PostgreSQL limit of this run;
- batched produce (send_async + flush, 1000 per partition batch);
- single send (send() to a partition, one commit each);
- consume + ack (failover subscription, batches of 1000, cumulative ack per
  partition per batch);
- transactional produce (1000 messages per transaction over the client's
  partitions, send_async with txn= then commit(); a quarter of the batched
  phase's messages): through the proxy every transaction runs the protocol
  across shards (open on the coordinator's home shard, a mirror on the
  partitions' shard, prepare, decision, markers), which a single server does
  in one database.

Each txnq figure through the proxy (both routes) is also a ratio to the
direct figure on the same N servers (the proxy's cost per call; target >=
0.8x for batched produce and consume + ack, for the client as it comes).
The shards of this machine share its cores, so the total does not grow
with N here: "per server" is the total / N, and the
one-server-per-shard projection is N x the 1-server direct figure (the
smallest shard count's, per server) x the proxy ratio measured at N (each
shard as fast as one server alone, the proxy costing per call what it cost
here); it holds while the proxy server's own CPU keeps up: every call
passes through that one server (docs/cluster.md, "Throughput", says what it
costs per call and why).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import queue
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import psycopg
from psycopg import sql

import txnq
from bench.produce_consume import RAW_INSERT_BATCH, RAW_TABLE
from txnq.cluster.servers import HOST, ThrowawayServers, missing_requirements
from txnq.cluster.setup import init
from txnq.database.migrate import upgrade

PAYLOAD_BYTES = 100
#: Partitions of the topic through the proxy: 4 / N on each of N shards.
PARTITIONS = 4
CHUNK = 1000
SHARD_COUNTS = (1, 2, 4)
#: Databases on each shard server: a migrated template, the direct one, one per cluster.
TEMPLATE_DB = "txnq_bench_template"
DIRECT_DB = "txnq_bench_direct"
CLUSTER_DB = "txnq_bench_c{n}"
#: Seconds one phase of one side may take (every wait is bounded by it).
PHASE_TIMEOUT_SECONDS = 300
#: A failover consumer's lease: its heartbeat (a third of it) spreads the partitions.
LEASE = "3s"
#: Upper bounds of the counts (a run stays within minutes on a small machine).
MAX_MESSAGES = 2_000_000
MAX_SINGLE = 100_000
MAX_ROUNDS = 9
PHASES = ("raw", "batched", "single", "consume", "txn")
PHASE_NAMES = {
    "raw": "raw batched INSERT (limit)",
    "batched": "batched produce",
    "single": "single send",
    "consume": "consume + ack",
    "txn": "transactional produce",
}
#: The transactional phase writes this share of the batched phase's messages.
TXN_SHARE = 4
TARGETS = {"batched": 0.8, "consume": 0.8}


@dataclass(frozen=True)
class WorkerSpec:
    """What one client process does: its database, topic and partitions."""

    index: int
    dsn: str
    topic: str
    partitions: list[int]
    messages: int
    single: int
    raw: bool
    #: The client's CLUSTER_ROUTE through a proxy (None: a plain database).
    route: str | None = None


@dataclass
class Figure:
    """One measurement: messages per second summed over the side's clients."""

    phase: str
    shards: int
    side: str
    msgs_per_s: float
    ratio: float | None = None
    target: float | None = None
    per_server: float = 0.0
    projected: float | None = None


@dataclass
class Report:
    server_version: str
    messages: int
    single: int
    rounds: int
    load_before: str
    load_after: str = ""
    figures: list[Figure] = field(default_factory=list)


def db_dsn(port: int, database: str) -> str:
    return f"postgresql://postgres@{HOST}:{port}/{database}"


# -- the client processes ------------------------------------------------------


@contextmanager
def timed(barrier: Any, out: Any, spec: WorkerSpec, phase: str, count: int) -> Iterator[None]:
    """Wait for every client, time the block, report (phase, index, start, end, count)."""
    barrier.wait(PHASE_TIMEOUT_SECONDS)
    start = time.monotonic()
    yield
    out.put((phase, spec.index, start, time.monotonic(), count))


def worker(spec: WorkerSpec, barrier: Any, out: Any) -> None:
    """One client: every phase in turn, each started with the others' (a barrier)."""
    data = [os.urandom(PAYLOAD_BYTES) for _ in range(1024)]
    parts = spec.partitions
    try:
        if spec.raw:
            with psycopg.connect(spec.dsn, autocommit=True) as conn:
                conn.execute(RAW_TABLE)
                conn.execute("TRUNCATE txnq_bench_raw")
                with timed(barrier, out, spec, "raw", spec.messages):
                    for seq in range(0, spec.messages, CHUNK):
                        end = min(seq + CHUNK, spec.messages)
                        rows = [data[i % len(data)] for i in range(seq, end)]
                        params = {"partition": parts[(seq // CHUNK) % len(parts)]}
                        conn.execute(RAW_INSERT_BATCH, {**params, "first": seq, "payloads": rows})
        routing = {} if spec.route is None else {"cluster_route": spec.route}
        client = txnq.Client(spec.dsn, **routing)
        with client:
            options = {"batching_max_messages": CHUNK, "batching_max_delay": "10ms"}
            with (
                client.producer(spec.topic, **options) as producer,
                timed(barrier, out, spec, "batched", spec.messages),
            ):
                for i in range(spec.messages):
                    producer.send_async(data[i % len(data)], partition=parts[i % len(parts)])
                producer.flush()
            with (
                client.producer(spec.topic) as producer,
                timed(barrier, out, spec, "single", spec.single),
            ):
                for i in range(spec.single):
                    producer.send(data[i % len(data)], partition=parts[i % len(parts)])
            _consume(client, spec, barrier, out)
            _produce_transactions(client, spec, barrier, out, data)
    except BaseException:
        barrier.abort()
        raise


def _produce_transactions(
    client: txnq.Client, spec: WorkerSpec, barrier: Any, out: Any, data: list[bytes]
) -> None:
    """Transactions of CHUNK messages over the client's partitions, committed one by one."""
    parts = spec.partitions
    count = max(CHUNK, spec.messages // TXN_SHARE // CHUNK * CHUNK)
    options = {"batching_max_messages": CHUNK, "batching_max_delay": "10ms"}
    with (
        client.producer(spec.topic, **options) as producer,
        timed(barrier, out, spec, "txn", count),
    ):
        for start in range(0, count, CHUNK):
            txn = client.new_transaction()
            for i in range(start, start + CHUNK):
                producer.send_async(data[i % len(data)], partition=parts[i % len(parts)], txn=txn)
            txn.commit()


def _consume(client: txnq.Client, spec: WorkerSpec, barrier: Any, out: Any) -> None:
    """A failover consumer at the end of the topic, once every client holds its
    share of the partitions, seeks them to offset 0 and reads them to the end."""
    consumer = client.subscribe(
        spec.topic,
        "bench",
        "failover",
        initial_position="latest",
        receiver_queue_size=20_000,
        lease=LEASE,
    )
    try:
        deadline = time.monotonic() + PHASE_TIMEOUT_SECONDS
        while len(consumer.assigned_partitions) != len(spec.partitions):
            if time.monotonic() > deadline:
                raise SystemExit(f"consumer {spec.index}: partitions never spread")
            time.sleep(0.1)
        barrier.wait(PHASE_TIMEOUT_SECONDS)
        time.sleep(1.5)  # one more heartbeat everywhere: every view of the members is final
        assigned = consumer.assigned_partitions
        per_partition = (spec.messages + spec.single) // len(spec.partitions)
        expected = per_partition * len(assigned)
        received = 0
        with timed(barrier, out, spec, "consume", expected):
            for partition in assigned:
                consumer.seek(0, partition=partition)
            last: dict[int, txnq.Message] = {}
            deadline = time.monotonic() + PHASE_TIMEOUT_SECONDS
            while received < expected and time.monotonic() < deadline:
                for message in consumer.batch_receive(CHUNK, timeout=5):
                    last[message.partition] = message
                    # Only its own share counts: a partition handed over by
                    # a failover (a lease missed on a loaded machine) is not.
                    received += message.partition in assigned
                for message in last.values():
                    consumer.acknowledge_cumulative(message)
                last.clear()
        # Every client reads its share to the end before any leaves the
        # subscription: a consumer that closes hands its partitions to the
        # ones still reading.
        barrier.wait(PHASE_TIMEOUT_SECONDS)
        if received != expected:
            side = "direct" if spec.route is None else f"route {spec.route}"
            raise SystemExit(
                f"consumer {spec.index} ({side}): received {received} of {expected} "
                f"from partitions {assigned}, now {consumer.assigned_partitions}"
            )
    finally:
        consumer.close()


def run_side(specs: list[WorkerSpec]) -> dict[str, float]:
    """Run one client process per spec; each phase's summed rate (msgs/s)."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(len(specs))
    out = context.Queue()
    processes = [context.Process(target=worker, args=(spec, barrier, out)) for spec in specs]
    for process in processes:
        process.start()
    phases = (PHASES if specs[0].raw else PHASES[1:]) if specs else ()
    wanted = len(phases) * len(specs)
    rows: list[tuple[str, int, float, float, int]] = []
    deadline = time.monotonic() + PHASE_TIMEOUT_SECONDS * (len(phases) + 1)
    try:
        while len(rows) < wanted and time.monotonic() < deadline:
            try:
                rows.append(out.get(timeout=1))
            except queue.Empty:
                if any(p.exitcode not in (None, 0) for p in processes):
                    raise SystemExit("a client process failed (its error is above)") from None
        if len(rows) < wanted:
            raise SystemExit(f"the clients did not finish in time ({len(rows)}/{wanted})")
        for process in processes:
            process.join(timeout=PHASE_TIMEOUT_SECONDS)
    finally:
        for process in processes:
            if process.is_alive():
                process.terminate()
                process.join(timeout=10)
    rates = {}
    for phase in phases:
        mine = [row for row in rows if row[0] == phase]
        elapsed = max(row[3] for row in mine) - min(row[2] for row in mine)
        rates[phase] = sum(row[4] for row in mine) / elapsed
    return rates


# -- the servers and databases ---------------------------------------------------


def prepare_shard_servers(servers: ThrowawayServers, counts: list[int]) -> None:
    """Migrate a template on every shard server; the direct and cluster
    databases are copies of it (a migration per database would take longer)."""
    for number, shard in enumerate(servers.shards):
        with psycopg.connect(shard.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(TEMPLATE_DB)))
        upgrade(db_dsn(shard.port, TEMPLATE_DB))
        names = [DIRECT_DB] + [CLUSTER_DB.format(n=n) for n in counts if number < n]
        with psycopg.connect(shard.dsn, autocommit=True) as conn:
            for name in names:
                conn.execute(
                    sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                        sql.Identifier(name), sql.Identifier(TEMPLATE_DB)
                    )
                )
    assert servers.proxy is not None
    with psycopg.connect(servers.proxy.dsn, autocommit=True) as conn:
        for n in counts:
            name = CLUSTER_DB.format(n=n)
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    for n in counts:
        name = CLUSTER_DB.format(n=n)
        init(
            db_dsn(servers.proxy.port, name),
            [db_dsn(shard.port, name) for shard in servers.shards[:n]],
        )


def direct_specs(servers: ThrowawayServers, n: int, messages: int, single: int) -> list[WorkerSpec]:
    """One topic per server with the partitions the cluster would put there."""
    share = PARTITIONS // n
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    specs = []
    for index, shard in enumerate(servers.shards[:n]):
        dsn = db_dsn(shard.port, DIRECT_DB)
        with txnq.Client(dsn) as client:
            client.admin.create_topic(topic, partitions=share)
        specs.append(WorkerSpec(index, dsn, topic, list(range(share)), messages, single, True))
    return specs


def proxy_specs(
    servers: ThrowawayServers, n: int, messages: int, single: int, route: str = "direct"
) -> list[WorkerSpec]:
    """One 4-partition topic through the proxy; client i writes shard i's
    partitions; ``route`` the clients' CLUSTER_ROUTE."""
    assert servers.proxy is not None
    dsn = db_dsn(servers.proxy.port, CLUSTER_DB.format(n=n))
    topic = f"bench-{uuid.uuid4().hex[:8]}"
    with txnq.Client(dsn) as client:
        topic_id = client.admin.create_topic(topic, partitions=PARTITIONS).topic_id
    with psycopg.connect(dsn, autocommit=True) as conn:
        owners = [
            row[0]
            for row in conn.execute(
                "SELECT txnq_cluster.shard_of(%s, p) FROM generate_series(0, %s - 1) AS p",
                (topic_id, PARTITIONS),
            )
        ]
    return [
        WorkerSpec(
            index,
            dsn,
            topic,
            [p for p, owner in enumerate(owners) if owner == index],
            messages,
            single,
            False,
            route,
        )
        for index in range(n)
    ]


def hop_specs(servers: ThrowawayServers, n: int, messages: int, single: int) -> list[WorkerSpec]:
    """As :func:`proxy_specs`, every call through the proxy's PL/Proxy functions."""
    return proxy_specs(servers, n, messages, single, route="proxy")


#: The sides of a shard count, in the first round's order (then rotated).
SIDES = {"direct": direct_specs, "proxy": proxy_specs, "hop": hop_specs}


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def measure(counts: list[int], messages: int, single: int, rounds: int) -> Report:
    """Start the servers, run every shard count on every side ``rounds`` times
    (the sides' order rotated each round), stop them.
    Rates are medians over the rounds, ratios the median of each round's ratio."""
    with ThrowawayServers(max(counts)) as servers:
        prepare_shard_servers(servers, counts)
        with psycopg.connect(servers.shards[0].dsn) as conn:
            version = str(conn.execute("SHOW server_version").fetchone()[0])  # type: ignore[index]
        report = Report(version, messages, single, rounds, load())
        rates: dict[tuple[int, str], list[dict[str, float]]] = {}
        for round_number in range(rounds):
            for n in counts:
                per_client, per_single = messages // n, single // n
                names = list(SIDES)
                shift = round_number % len(names)
                for side in names[shift:] + names[:shift]:
                    specs = SIDES[side](servers, n, per_client, per_single)
                    rates.setdefault((n, side), []).append(run_side(specs))
        report.load_after = load()
    base = {
        phase: statistics.median(r[phase] for r in rates[(counts[0], "direct")]) for phase in PHASES
    }
    base = {phase: rate / counts[0] for phase, rate in base.items()}  # one server's share
    for n in counts:
        direct = rates[(n, "direct")]
        for phase in PHASES:
            rate = statistics.median(r[phase] for r in direct)
            side = "limit" if phase == "raw" else "direct"
            report.figures.append(Figure(phase, n, side, rate, per_server=rate / n))
        for phase in PHASES[1:]:
            for side in ("proxy", "hop"):
                proxy = rates[(n, side)]
                rate = statistics.median(r[phase] for r in proxy)
                pairs = zip(proxy, direct, strict=True)
                ratio = statistics.median(p[phase] / d[phase] for p, d in pairs)
                report.figures.append(
                    Figure(
                        phase,
                        n,
                        side,
                        rate,
                        ratio=ratio,
                        target=TARGETS.get(phase) if side == "proxy" else None,
                        per_server=rate / n,
                        projected=n * base[phase] * ratio,
                    )
                )
    return report


# -- output ----------------------------------------------------------------------


def print_table(report: Report) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=(
            f"txnq direct vs through the PL/Proxy proxy — PostgreSQL {report.server_version}, "
            f"{report.messages} x {PAYLOAD_BYTES}-byte messages + {report.single} single sends "
            f"per shard count, {PARTITIONS} partitions; medians of {report.rounds} rounds"
        )
    )
    for column in ("shards", "measurement", "side", "msgs/s", "per server", "proxy/direct"):
        table.add_column(column, justify="right" if column != "measurement" else "left")
    table.add_column("target")
    table.add_column("1 server/shard", justify="right")
    for figure in report.figures:
        met = ""
        if figure.target is not None and figure.ratio is not None:
            met = f">={figure.target:.1f}x {'met' if figure.ratio >= figure.target else 'MISSED'}"
        table.add_row(
            str(figure.shards),
            PHASE_NAMES[figure.phase],
            figure.side,
            f"{figure.msgs_per_s:,.0f}",
            f"{figure.per_server:,.0f}",
            f"{figure.ratio:.2f}x" if figure.ratio is not None else "",
            met,
            f"{figure.projected:,.0f}" if figure.projected is not None else "",
        )
    console = Console(width=160)
    console.print(table)
    console.print(
        "Sums over one client process per server, all on this machine's cores. "
        "'1 server/shard' projects N servers with cores of their own: N x the 1-server "
        "direct figure x the proxy ratio measured at N (while the one proxy server keeps up). "
        f"Load average before {report.load_before}, after {report.load_after}."
    )


def summary(report: Report) -> dict[str, Any]:
    ratios: dict[str, dict[str, list[float]]] = {}
    for figure in report.figures:
        if figure.ratio is not None:
            ratios.setdefault(figure.side, {}).setdefault(figure.phase, []).append(figure.ratio)
    data = asdict(report)
    data["median_ratio"] = {
        side: {phase: statistics.median(r) for phase, r in phases.items()}
        for side, phases in ratios.items()
    }
    data["targets_met"] = all(
        f.ratio >= f.target for f in report.figures if f.target is not None and f.ratio is not None
    )
    return data


def parse_counts(text: str) -> list[int]:
    counts = sorted({int(part) for part in text.split(",") if part.strip()})
    if not counts or any(n not in SHARD_COUNTS for n in counts):
        raise argparse.ArgumentTypeError(f"shard counts among {SHARD_COUNTS}, e.g. 1,2,4")
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cluster",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--shards", type=parse_counts, default=list(SHARD_COUNTS), help="shard counts (1,2,4)"
    )
    parser.add_argument(
        "--messages", type=int, default=60_000, help="batched messages per shard count and side"
    )
    parser.add_argument("--single", type=int, default=800, help="single sends per shard count")
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs of everything; medians are reported (3)"
    )
    parser.add_argument("--json", action="store_true", help="JSON for scripts")
    args = parser.parse_args(argv)
    missing = missing_requirements()
    if missing:
        print("bench/cluster.py needs " + "; ".join(missing), file=sys.stderr)
        return 2
    # Every partition gets as many messages as the others; counts are bounded.
    messages = min(max(PARTITIONS, args.messages // PARTITIONS * PARTITIONS), MAX_MESSAGES)
    single = min(max(PARTITIONS, args.single // PARTITIONS * PARTITIONS), MAX_SINGLE)
    rounds = min(max(1, args.rounds), MAX_ROUNDS)
    report = measure(args.shards, messages, single, rounds)
    if args.json:
        print(json.dumps(summary(report), indent=2))
    else:
        print_table(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
