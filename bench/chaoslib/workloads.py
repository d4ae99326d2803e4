"""The chaos workloads: the transactional copier under faults, a held xmin
horizon, and many producers and consumers at once. Each returns a result the
tests assert on and ``bench/chaos.py`` prints.
"""

from __future__ import annotations

import contextlib
import json
import random
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

import txnq

from .cluster import Managed, OwnedCluster, OwnedServer, child_env, copier, worker
from .history import History, Report, check

INPUT, OUTPUT = "chaos-in", "chaos-out"


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# -- a read_committed consumer that records what it saw -------------------------


class Recorder(threading.Thread):
    """Consumes a topic, acknowledging each batch, and records every poll.

    It survives the server going away: a failed round starts a new consumer
    session (the cursor's position). Messages of a batch whose acknowledgement
    failed may legitimately come again; only those are not recorded twice.
    """

    def __init__(
        self,
        dsn: str,
        topic: str,
        subscription: str,
        history: History,
        *,
        subscription_type: str = "exclusive",
        consumer_name: str | None = None,
        process: str | None = None,
    ) -> None:
        super().__init__(daemon=True, name=f"recorder-{subscription}")
        self.dsn, self.topic, self.subscription = dsn, topic, subscription
        self.subscription_type = subscription_type
        self.consumer_name = consumer_name
        self.process = process or subscription
        self.history = history
        self.stop_event = threading.Event()
        self.seen: set[str] = set()
        self.in_doubt: set[str] = set()
        self.latencies: list[float] = []
        self.errors: list[str] = []
        self.sessions = 0
        self.last_poll = time.monotonic()
        self.lock = threading.Lock()
        self.ready = threading.Event()
        self.consumer: txnq.Consumer | None = None

    def run(self) -> None:
        while not self.stop_event.is_set():
            try:
                with (
                    txnq.Client(self.dsn) as client,
                    client.subscribe(
                        self.topic,
                        self.subscription,
                        self.subscription_type,
                        initial_position="earliest",
                        consumer_name=self.consumer_name,
                        receiver_queue_size=2000,
                    ) as consumer,
                ):
                    self.consumer = consumer
                    self.ready.set()
                    self._consume(consumer)
            except Exception as exc:  # recorded; the harness reports every error
                self.errors.append(f"{type(exc).__name__}: {exc}")
                self.sessions += 1
                time.sleep(0.5)

    def _consume(self, consumer: txnq.Consumer) -> None:
        while not self.stop_event.is_set():
            batch = consumer.batch_receive(1000, timeout="200ms")
            if not batch:
                continue
            now = time.time()
            last: dict[int, txnq.Message] = {}
            fresh = []
            for m in batch:
                value = m.value.decode()
                last[m.message_id.partition] = m
                if value in self.in_doubt:
                    self.in_doubt.discard(value)
                    continue
                fresh.append((m, value))
            try:
                for m in last.values():
                    consumer.acknowledge_cumulative(m)
            except BaseException:
                self.in_doubt.update(v for _, v in fresh)
                self._record(fresh, now)
                raise
            self._record(fresh, now)

    def _record(self, fresh: list[tuple[txnq.Message, str]], now: float) -> None:
        with self.lock:
            for m, value in fresh:
                mid = m.message_id
                self.history.poll(
                    self.process,
                    mid.partition,
                    (mid.offset, mid.batch_index),
                    value,
                    time=now,
                    session=self.sessions,
                    group=self.subscription,
                )
                self.seen.add(value)
                sent = m.properties.get("sent_at")
                if sent is not None:
                    self.latencies.append(now - float(sent))
            self.last_poll = time.monotonic()

    def assigned(self) -> list[int]:
        consumer = self.consumer
        return consumer.assigned_partitions if consumer is not None else []

    def stop(self) -> None:
        self.stop_event.set()
        self.join(timeout=30)


def read_all(dsn: str, topic: str, subscription: str, idle: float = 2.0) -> list[txnq.Message]:
    """All a fresh read_committed subscription reads until ``idle`` seconds bring nothing."""
    out: list[txnq.Message] = []
    with (
        txnq.Client(dsn) as client,
        client.subscribe(topic, subscription, initial_position="earliest") as consumer,
    ):
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < idle:
            batch = consumer.batch_receive(2000, timeout="200ms")
            if batch:
                out.extend(batch)
                quiet_since = time.monotonic()
    return out


# -- the transactional copier ------------------------------------------------


@dataclass
class CopierConfig:
    messages: int = 20_000
    input_partitions: int = 4
    output_partitions: int = 3
    copiers: int = 3
    keys: int = 200
    txn_size: int = 500
    abort_ratio: float = 1 / 3
    subscription_type: str = "failover"
    kills_per_copier: int = 3
    coordinators: int = 2
    coordinator_kills: int = 2
    postgres_restarts: int = 1
    pause: float = 0.3
    first_fault: float = 0.2
    last_fault: float = 0.8
    timeout: float = 600.0
    seed: int = 1
    log_dir: str | None = None
    # 0: one server of its own (the embedded PostgreSQL 18). N (a power of
    # two): a cluster of its own, a proxy and N shards on throwaway
    # PostgreSQL 15 servers (docs/cluster.md); its restarts are one shard's.
    shards: int = 0


@dataclass
class CopierResult:
    config: CopierConfig
    report: Report
    faults: dict[str, int]
    crashes: dict[str, int]
    seconds: float
    copy_seconds: float
    txns: dict[str, int]
    output_count: int
    output_distinct: int
    missing_outputs: int
    extra_outputs: int
    order_violations: int
    verifier_report: Report
    verifier_distinct: int
    log_dir: str
    notes: list[str] = field(default_factory=list)
    # Transactions whose rows on a cluster's shards did not all end alike.
    disagreeing_txns: int = 0

    @property
    def throughput(self) -> float:
        return self.config.messages / self.copy_seconds if self.copy_seconds else 0.0

    @property
    def valid(self) -> bool:
        return (
            self.report.valid
            and self.verifier_report.valid
            and self.missing_outputs == 0
            and self.extra_outputs == 0
            and self.output_count == self.output_distinct
            and self.order_violations == 0
            and self.disagreeing_txns == 0
        )


def _input_value(i: int) -> str:
    return f"in-{i:07d}"


def _seed(client: txnq.Client, config: CopierConfig) -> list[str]:
    values = []
    with client.producer(INPUT, name="seeder") as producer:
        for i in range(config.messages):
            value = _input_value(i)
            producer.send_async(value.encode(), key=f"k{i % config.keys}")
            values.append(value)
        producer.flush()
    return values


def _read_copier_logs(log_dir: Path, names: list[str]) -> dict[str, dict[str, Any]]:
    txns: dict[str, dict[str, Any]] = {}
    for name in names:
        path = log_dir / f"{name}.jsonl"
        if not path.exists():
            continue
        for line in path.read_text().splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue  # the line a SIGKILL cut short
            txn = record.get("txn")
            if txn is None:
                continue
            entry = txns.setdefault(
                txn,
                {"process": name, "consumed": [], "produced": [], "commit": None, "outcome": None},
            )
            if record["ev"] == "batch":
                entry["consumed"], entry["produced"] = record["consumed"], record["produced"]
            elif record["ev"] == "commit":
                entry["commit"] = record["t"]
            elif record["ev"] == "end":
                entry["outcome"] = record["outcome"]
    return txns


def _final_states(dsns: list[str], txn_ids: list[str]) -> tuple[dict[str, str], list[str]]:
    """Each transaction's state, read on every server that holds it, and the
    transactions those servers disagree on (a cluster's shards each keep a
    row of a transaction that wrote or acknowledged on them: once settled,
    they must all say the same)."""
    pairs = [tuple(int(x) for x in t.split(":")) for t in txn_ids]
    if not pairs:
        return {}, []
    seen: dict[str, set[str]] = {}
    for dsn in dsns:
        with psycopg.connect(dsn, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT tc_id, txn_seq, state FROM txnq.transactions"
                " WHERE (tc_id, txn_seq) IN (SELECT * FROM unnest(%s::int[], %s::bigint[]))",
                ([p[0] for p in pairs], [p[1] for p in pairs]),
            ).fetchall()
        for tc, seq, state in rows:
            seen.setdefault(f"{tc}:{seq}", set()).add(state)
    states = {txn: next(iter(found)) for txn, found in seen.items() if len(found) == 1}
    disagreements = [
        f"transaction {txn}: the servers say {sorted(found)}"
        for txn, found in seen.items()
        if len(found) > 1
    ]
    return states, disagreements


def _wait_transactions_settled(dsns: list[str], timeout: float) -> int:
    """Wait until no transaction is open or half-finished on any of the
    servers; how many still are."""
    deadline = time.monotonic() + timeout
    while True:
        left = 0
        for dsn in dsns:
            with psycopg.connect(dsn, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM txnq.transactions"
                    " WHERE state IN ('OPEN', 'COMMITTING', 'ABORTING')"
                ).fetchone()
            left += int(row[0]) if row else 0
        if left == 0 or time.monotonic() > deadline:
            return left
        time.sleep(0.5)


def diagnose(dsns: str | list[str]) -> str:
    """Where a stalled run stands: unfinished transactions, partition heads,
    cursors (on every server of a cluster)."""
    queries = {
        "unfinished transactions": "SELECT tc_id, txn_seq, state, reason, transactional_id,"
        " opened_at, timeout_at FROM txnq.transactions"
        " WHERE state NOT IN ('COMMITTED', 'ABORTED') ORDER BY opened_at",
        "partitions": "SELECT t.name, p.partition, p.next_offset, p.max_read_offset"
        " FROM txnq.partitions p JOIN txnq.topics t USING (topic_id) ORDER BY 1, 2",
        "ongoing": "SELECT * FROM txnq.txn_buffer_ongoing",
        "cursors": "SELECT s.name, c.partition, c.mark_delete_offset, c.generation"
        " FROM txnq.cursors c JOIN txnq.subscriptions s USING (subscription_id) ORDER BY 1, 2",
        "pending acks": "SELECT subscription_id, partition, tc_id, txn_seq, count(*),"
        " min(entry_offset), max(entry_offset) FROM txnq.pending_acks GROUP BY 1, 2, 3, 4",
        "consumers": "SELECT * FROM txnq.consumers",
    }
    out = []
    for dsn in [dsns] if isinstance(dsns, str) else dsns:
        out.append(f"== {dsn}")
        try:
            with psycopg.connect(dsn, autocommit=True) as conn:
                for title, query in queries.items():
                    out.append(f"-- {title}")
                    out.extend(repr(r) for r in conn.execute(query).fetchall())
        except psycopg.Error as exc:
            out.append(f"(diagnosis failed: {exc})")
    return "\n".join(out)


def run_copier(config: CopierConfig, progress: Any = None) -> CopierResult:
    """Seed, copy under faults, check. ``progress(done, total, note)`` is called as it goes."""
    rng = random.Random(config.seed)
    log_dir = Path(config.log_dir or tempfile.mkdtemp(prefix="txnq-chaos-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    server: OwnedServer | OwnedCluster = (
        OwnedCluster(config.shards) if config.shards else OwnedServer()
    )
    managed: list[Managed] = []
    verifier: Recorder | None = None
    notes: list[str] = []

    def say(note: str) -> None:
        notes.append(f"{time.monotonic() - started:7.1f}s {note}")
        if progress is not None:
            progress(len(verifier.seen) if verifier else 0, config.messages, note)

    try:
        dsn = server.start()
        say(server.describe())
        with txnq.Client(dsn) as client:
            client.admin.create_topic(INPUT, partitions=config.input_partitions)
            client.admin.create_topic(OUTPUT, partitions=config.output_partitions)
            inputs = _seed(client, config)
        say(f"seeded {len(inputs)} messages")

        settings = {"consumer_lease_seconds": "3", "poll_interval_seconds": "0.5"}
        env = child_env(dsn, **settings)
        # The lifecycle (timeouts, TTL, ...) runs per server: one scheduler
        # each, against a cluster's shards directly (docs/cluster.md).
        schedulers = [
            worker(f"scheduler-{i}", "scheduler", target, child_env(target, **settings), log_dir)
            for i, target in enumerate(server.scheduler_dsns)
        ]
        coordinators = [
            worker(f"coordinator-{i}", "coordinator", dsn, env, log_dir)
            for i in range(config.coordinators)
        ]
        copiers = [
            copier(
                f"copier-{i}",
                dsn,
                env,
                log_dir,
                *("--input", INPUT, "--output", OUTPUT),
                *("--subscription-type", config.subscription_type),
                *("--txn-size", str(config.txn_size), "--abort-ratio", str(config.abort_ratio)),
                *("--pause", str(config.pause), "--seed", str(config.seed * 100 + i)),
            )
            for i in range(config.copiers)
        ]
        managed = [*schedulers, *coordinators, *copiers]
        history = History()
        verifier = Recorder(dsn, OUTPUT, "verifier", history, process="verifier")
        verifier.start()
        verifier.ready.wait(60)
        for m in managed:
            m.start()
        copy_started = time.monotonic()

        # The fault plan: every fault at its own share of progress, in a random order.
        plan: list[tuple[str, int]] = [
            ("copier", i) for i in range(config.copiers) for _ in range(config.kills_per_copier)
        ]
        plan += [
            ("coordinator", i % max(1, config.coordinators))
            for i in range(config.coordinator_kills)
        ]
        plan += [("postgres", 0)] * config.postgres_restarts
        rng.shuffle(plan)
        step = (config.last_fault - config.first_fault) / max(1, len(plan) - 1)
        thresholds = [config.first_fault + k * step for k in range(len(plan))]
        faults = {"copier_kills": 0, "coordinator_kills": 0, "postgres_restarts": 0}
        deadline = started + config.timeout
        last_progress = (0, time.monotonic())
        next_fault_after = 0
        # Until every message is seen and every planned fault fired: a copy
        # whose output becomes visible in a burst (a coordinator restarted
        # with decided transactions to mark) can reach the end between two
        # polls, and a fault still planned then fires during the settling.
        while len(verifier.seen) < config.messages or plan:
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"copied {len(verifier.seen)} of {config.messages} within {config.timeout}s"
                )
            for m in managed:
                if m.check():
                    say(f"{m.name} exited by itself ({m.exit_codes[-1]}), restarted")
            done = len(verifier.seen)
            if done != last_progress[0]:
                last_progress = (done, time.monotonic())
            elif time.monotonic() - last_progress[1] > 60:
                raise TimeoutError(
                    f"no progress for 60 s at {done} of {config.messages}:\n"
                    + diagnose(server.direct_dsns)
                )
            # Faults at their share of progress, at least one transaction apart --
            # unless progress jumped past several shares in one poll (a burst
            # after a lease ran out; shared copiers finish 20,000 in seconds):
            # then every fault that is due fires now, or the copy could end
            # before the plan does.
            while plan and done >= thresholds[0] * config.messages:
                overdue = done >= 0.9 * config.messages or (
                    len(thresholds) > 1 and done >= thresholds[1] * config.messages
                )
                if done < next_fault_after and not overdue:
                    break
                kind, index = plan.pop(0)
                thresholds.pop(0)
                if kind == "copier":
                    copiers[index].kill()
                    copiers[index].start()
                    faults["copier_kills"] += 1
                elif kind == "coordinator":
                    coordinators[index].kill()
                    coordinators[index].start()
                    faults["coordinator_kills"] += 1
                else:
                    took = server.restart()
                    faults["postgres_restarts"] += 1
                    kind = f"postgres ({took:.1f}s)"
                next_fault_after = done + config.txn_size
                say(f"fault at {done}: {kind} {index}")
                done = len(verifier.seen)
            time.sleep(0.1)
        copy_seconds = time.monotonic() - copy_started
        say(f"all {config.messages} copied in {copy_seconds:.1f}s; settling")
        # A little longer: a duplicate committed late must still be seen.
        time.sleep(2.0)
        for m in copiers:
            m.stop()
        left = _wait_transactions_settled(server.direct_dsns, 30)
        if left:
            notes.append(f"{left} transactions still unfinished after 30 s")
        time.sleep(1.0)
        verifier.stop()
        for m in [*schedulers, *coordinators]:
            m.stop()

        final = read_all(dsn, OUTPUT, "final")
        txns = _read_copier_logs(log_dir, [c.name for c in copiers])
        states, disagreements = _final_states(server.direct_dsns, list(txns))
        notes.extend(disagreements)
        counts = {"committed": 0, "aborted": 0, "unknown_resolved": 0, "unknown": 0}
        for name, t in txns.items():
            state = states.get(name)
            outcome = t["outcome"]
            if outcome in (None, "unknown"):
                if state in ("COMMITTED", "ABORTED"):
                    outcome = state.lower()
                    counts["unknown_resolved"] += 1
                else:
                    outcome = "unknown"
                    counts["unknown"] += 1
            elif state is not None and state.lower() != outcome:
                notes.append(f"transaction {name}: the copier saw {outcome}, the log says {state}")
                outcome = "unknown"
            if outcome != "unknown":
                counts[outcome] += 1
            history.txn(name, outcome, t["commit"])
            for value in t["produced"]:
                history.send(t["process"], value, "ok", txn=name)
            history.consume(name, t["consumed"])
        history.expect_consumed(inputs)
        report = check(history)

        # The fresh read of the whole output: the set, duplicates and per-key order.
        final_history = History()
        for t_name, t in txns.items():
            final_history.txn(t_name, history.txns[t_name].outcome)
            for value in t["produced"]:
                final_history.send(t["process"], value, "ok", txn=t_name)
        for m in final:
            mid = m.message_id
            final_history.poll(
                "final", mid.partition, (mid.offset, mid.batch_index), m.value.decode()
            )
        final_report = check(final_history)
        values = [m.value.decode() for m in final]
        expected = {"out:" + v for v in inputs}
        # Per-key order is a promise of exclusive and failover subscriptions.
        # Shared ones spread a key over consumers; key_shared ones deliver an
        # aborted transaction's inputs again after later messages of their key
        # (docs/subscriptions.md, "What is guaranteed about key order").
        ordered = config.subscription_type in ("exclusive", "failover")
        order_violations = per_key_order_violations(final) if ordered else 0
        if not ordered:
            notes.append(
                f"per-key order not checked: {config.subscription_type} does not promise it"
            )
        for kind, n in final_report.anomalies().items():
            notes.append(f"fresh read of the output: {n} {kind}")
        return CopierResult(
            config=config,
            report=report,
            faults=faults,
            crashes={m.name: m.crashes for m in managed if m.crashes},
            seconds=time.monotonic() - started,
            copy_seconds=copy_seconds,
            txns=counts,
            output_count=len(values),
            output_distinct=len(set(values)),
            missing_outputs=len(expected - set(values)),
            extra_outputs=len(set(values) - expected),
            order_violations=order_violations,
            verifier_report=final_report,
            verifier_distinct=len(verifier.seen),
            log_dir=str(log_dir),
            notes=notes,
            disagreeing_txns=len(disagreements),
        )
    finally:
        if verifier is not None and verifier.is_alive():
            verifier.stop()
        for m in managed:
            with contextlib.suppress(Exception):
                m.stop(timeout=5)
        server.stop()


# -- a held xmin horizon ----------------------------------------------------------


HOT_TABLES_DEAD = """
SELECT coalesce(sum(n_dead_tup), 0)::bigint FROM pg_stat_user_tables
 WHERE schemaname = 'txnq' AND relname = ANY(%s)
"""


@dataclass
class HeldXminResult:
    rate_before: float
    rate_during: float
    rate_after: float
    dead_before: int
    dead_peak: int
    dead_after: int
    hold_seconds: float
    messages: int
    lost: int
    vacuumed: list[str]

    @property
    def ratio(self) -> float:
        return self.rate_during / self.rate_before if self.rate_before else 0.0


#: Seconds held_xmin's consumer waits for more after the producer finished.
DRAIN_SECONDS = 5.0


def held_xmin(
    dsn: str,
    *,
    phase_seconds: float = 10.0,
    hold_seconds: float = 25.0,
    target_rate: float = 1000.0,
    batch: int = 50,
) -> HeldXminResult:
    """Produce and consume at ``target_rate`` while a snapshot is held for ``hold_seconds``.

    Rates are messages consumed per second in each phase (before, during,
    after); dead tuples are summed over txnq's hot tables, then the
    scheduler's ``vacuum_hot_tables`` job runs once the snapshot is gone.
    """
    from txnq import lifecycle

    topic = "xmin-hot"
    with txnq.Client(dsn) as admin_client:
        admin_client.admin.create_topic(topic, partitions=4)
    stop = threading.Event()
    producer_done = threading.Event()  # its last batch flushed (or it failed)
    consumed: list[float] = []
    produced: list[str] = []
    failures: list[str] = []

    def produce() -> None:
        try:
            with txnq.Client(dsn) as c, c.producer(topic) as producer:
                next_at = time.monotonic()
                i = 0
                while not stop.is_set():
                    for _ in range(batch):
                        value = f"x-{i}"
                        producer.send_async(value.encode(), key=f"k{i % 64}")
                        produced.append(value)
                        i += 1
                    producer.flush()
                    next_at += batch / target_rate
                    delay = next_at - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
        except Exception as exc:  # reported, and the test fails on it
            failures.append(repr(exc))
        finally:
            producer_done.set()

    seen: set[str] = set()

    def consume() -> None:
        try:
            with (
                txnq.Client(dsn) as c,
                c.subscribe(topic, "steady", initial_position="earliest") as consumer,
            ):
                # After the stop, read on until the producer's last batch (it
                # flushes as it closes) is in, for at most DRAIN_SECONDS of
                # silence: quitting at the first empty receive counted that
                # batch as lost (50 = one batch, once in CI).
                quiet_since: float | None = None
                while not (producer_done.is_set() and len(seen) >= len(produced)):
                    msgs = consumer.batch_receive(500, timeout="200ms")
                    if not msgs:
                        if producer_done.is_set():
                            quiet_since = quiet_since or time.monotonic()
                            if time.monotonic() - quiet_since > DRAIN_SECONDS:
                                break
                        continue
                    quiet_since = None
                    last: dict[int, txnq.Message] = {}
                    for m in msgs:
                        last[m.message_id.partition] = m
                    for m in last.values():
                        consumer.acknowledge_cumulative(m)
                    now = time.monotonic()
                    for m in msgs:
                        seen.add(m.value.decode())
                        consumed.append(now)
        except Exception as exc:
            failures.append(repr(exc))

    def dead(conn: psycopg.Connection[Any]) -> int:
        row = conn.execute(HOT_TABLES_DEAD, (list(lifecycle.HOT_TABLES),)).fetchone()
        return int(row[0]) if row else 0

    stats = psycopg.connect(dsn, autocommit=True)
    holder = psycopg.connect(dsn)
    threads = [threading.Thread(target=produce), threading.Thread(target=consume)]
    try:
        with txnq.Client(dsn) as c:
            lifecycle.vacuum_hot_tables(c, min_dead=0)
        for t in threads:
            t.start()
        t0 = time.monotonic()
        time.sleep(phase_seconds)
        time.sleep(1.1)  # statistics reach pg_stat at most once a second
        dead_before = dead(stats)
        # The long analytics query: a REPEATABLE READ snapshot held open.
        holder.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT count(*) FROM txnq.entries").fetchone()
        t1 = time.monotonic()
        time.sleep(hold_seconds)
        time.sleep(1.1)
        dead_peak = dead(stats)
        t2 = time.monotonic()
        holder.rollback()
        time.sleep(phase_seconds)
        t3 = time.monotonic()
        stop.set()
        for t in threads:
            t.join(timeout=60)
        with txnq.Client(dsn) as c:
            vacuumed = lifecycle.vacuum_hot_tables(c, min_dead=0)
        time.sleep(1.1)
        dead_after = dead(stats)
    finally:
        stop.set()
        holder.close()
        stats.close()

    def rate(a: float, b: float) -> float:
        return sum(1 for x in consumed if a <= x < b) / (b - a)

    return (
        HeldXminResult(
            rate_before=rate(t0 + 1.0, t1),  # the first second warms up
            rate_during=rate(t1, t2),
            rate_after=rate(t2, t3),
            dead_before=dead_before,
            dead_peak=dead_peak,
            dead_after=dead_after,
            hold_seconds=t2 - t1,
            messages=len(produced),
            lost=len(set(produced) - seen),
            vacuumed=[f"{v.table} ({v.dead_tuples})" for v in vacuumed],
        )
        if not failures
        else _raise(failures)
    )


def _raise(failures: list[str]) -> HeldXminResult:
    raise AssertionError("held-xmin workload failed: " + "; ".join(failures))


# -- load: many producers and consumers ------------------------------------------


@dataclass
class LoadResult:
    producers: int
    consumers: int
    seconds: float
    sent: int
    received: int
    report: Report
    errors: list[str]
    deadlocks: int
    latency_p50: float
    latency_p99: float
    latency_max: float

    @property
    def throughput(self) -> float:
        return self.received / self.seconds if self.seconds else 0.0


def _deadlocks(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(deadlocks), 0)::bigint FROM pg_stat_database"
        ).fetchone()
    return int(row[0]) if row else 0


def load(
    dsn: str,
    *,
    producers: int = 16,
    consumers: int = 8,
    seconds: float = 20.0,
    partitions: int = 8,
    batch: int = 20,
    rate_per_producer: float = 200.0,
    transactional_share: float = 0.25,
) -> LoadResult:
    """``producers`` threads send (a share of their batches in transactions, some
    of them aborted) and ``consumers`` consumers of one failover subscription
    receive, for ``seconds``; every send and poll is checked as a history."""
    topic = "load"
    with txnq.Client(dsn) as c:
        c.admin.create_topic(topic, partitions=partitions)
    history = History()
    lock = threading.Lock()
    failures: list[str] = []
    stop = threading.Event()
    deadlocks_before = _deadlocks(dsn)

    recorders = [
        Recorder(
            dsn,
            topic,
            "load",
            history,
            subscription_type="failover",
            consumer_name=f"c{i:02d}",
            process=f"c{i:02d}",
        )
        for i in range(consumers)
    ]
    for r in recorders:
        r.start()
    for r in recorders:
        r.ready.wait(60)
    # Let the failover assignment settle before the load starts: each consumer
    # recomputes it at its heartbeat (a third of the lease), so until then two
    # may both read a partition (at-least-once without transactions).
    settle_deadline = time.monotonic() + 30
    while time.monotonic() < settle_deadline:
        time.sleep(0.5)
        owned = [p for r in recorders for p in r.assigned()]
        if sorted(owned) == list(range(partitions)):
            break
    time.sleep(0.5)

    def produce(index: int) -> None:
        rng = random.Random(index)
        name = f"p{index:02d}"
        try:
            with txnq.Client(dsn) as c, c.producer(topic, name=name) as producer:
                next_at = time.monotonic()
                n = 0
                while not stop.is_set():
                    txn = c.new_transaction("30s") if rng.random() < transactional_share else None
                    abort = txn is not None and rng.random() < 1 / 3
                    pending = []
                    for _ in range(batch):
                        value = f"{name}-{n}"
                        n += 1
                        pending.append(
                            (
                                value,
                                producer.send_async(
                                    value.encode(),
                                    key=f"{name}-{n % 16}",
                                    properties={"sent_at": repr(time.time())},
                                    txn=txn,
                                ),
                            )
                        )
                    producer.flush()
                    txn_name = None
                    if txn is not None:
                        txn_name = str(txn.txn_id)
                        commit_at = time.time()
                        if abort:
                            txn.abort()
                        else:
                            txn.commit()
                        with lock:
                            history.txn(
                                txn_name,
                                "aborted" if abort else "committed",
                                None if abort else commit_at,
                            )
                    with lock:
                        for value, p in pending:
                            mid = p.result(30)
                            history.send(
                                name,
                                value,
                                "ok",
                                partition=mid.partition,
                                position=(mid.offset, mid.batch_index),
                                txn=txn_name,
                            )
                    next_at += batch / rate_per_producer
                    delay = next_at - time.monotonic()
                    if delay > 0:
                        time.sleep(delay)
        except Exception as exc:
            failures.append(f"{name}: {exc!r}")

    threads = [threading.Thread(target=produce, args=(i,)) for i in range(producers)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    elapsed = time.monotonic() - t0
    # Drain: until every consumer has been quiet for 2 s.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(
        time.monotonic() - r.last_poll < 2.0 for r in recorders
    ):
        time.sleep(0.2)
    for r in recorders:
        r.stop()
    latencies = [x for r in recorders for x in r.latencies]
    errors_seen = failures + [e for r in recorders for e in r.errors]
    report = check(history)
    return LoadResult(
        producers=producers,
        consumers=consumers,
        seconds=elapsed,
        sent=report.sends_ok,
        received=len(history.polls),
        report=report,
        errors=errors_seen,
        deadlocks=_deadlocks(dsn) - deadlocks_before,
        latency_p50=_percentile(latencies, 0.50),
        latency_p99=_percentile(latencies, 0.99),
        latency_max=max(latencies) if latencies else float("nan"),
    )


def per_key_order_violations(messages: list[txnq.Message]) -> int:
    """Messages whose trailing number is not above the previous one of their key."""
    last: dict[str, int] = defaultdict(lambda: -1)
    bad = 0
    for m in sorted(messages, key=lambda m: m.message_id):
        index = int(m.value.decode().rsplit("-", 1)[1])
        key = m.key or ""
        if index <= last[key]:
            bad += 1
        last[key] = index
    return bad
