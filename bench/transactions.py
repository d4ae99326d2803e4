"""Transactions benchmark: txnq transactions next to their non-transactional and
PostgreSQL references, measured in one run.

    python bench/transactions.py [--dsn DSN] [--messages 100000] [--ctp-messages 50000]
                                 [--commits 500] [--clients 4] [--seconds 30] [--json]

Without --dsn (and TXNQ_DSN) it uses the embedded PostgreSQL under ./.txnq.
Messages are 100 bytes; topics have 4 partitions and messages go to partition
``i % 4``, so every 1,000-message transaction writes all four. Reported:

1. non-transactional batched produce (send_async + flush, batches of up to
   1,000 per partition) vs transactional produce (1,000 messages per
   transaction: send_async with txn=, then commit(), which flushes, decides and
   writes the four COMMIT markers)                     target >= 60%;
   and the same with ``commit_async()``: the next transaction opened and
   queued while the commit before runs (Pulsar's commit future);
2. consume-transform-produce: per transaction, receive 500 messages of an input
   topic (filled beforehand, not timed), send one transformed message per input
   to an output topic, acknowledge cumulatively per partition, all with txn=,
   and commit                                           target >= 20,000 msg/s;
3. commit latency of small transactions (one message each) with --clients
   concurrent clients, each its own txnq.Client and producer: p50 and p99 of
   ``commit()``, next to the latency of a raw single-row INSERT + COMMIT with the
   same number of concurrent psycopg connections     target p50 <= 5 ms, p99 <= 25 ms.

Every loop is bounded in count and in time (--seconds per phase).
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
from collections.abc import Callable
from concurrent.futures import Future

import psycopg

import txnq

PAYLOAD_BYTES = 100
PARTITIONS = 4
TXN_MESSAGES = 1000
CTP_BATCH = 500

RAW_TABLE = """
CREATE TABLE IF NOT EXISTS txnq_bench_txn_raw (
    client       integer NOT NULL,
    seq          bigint NOT NULL,
    publish_time timestamptz NOT NULL DEFAULT now(),
    payload      bytea NOT NULL,
    PRIMARY KEY (client, seq)
)
"""
RAW_INSERT_ONE = "INSERT INTO txnq_bench_txn_raw (client, seq, payload) VALUES (%s, %s, %b)"


def payloads(n: int) -> list[bytes]:
    return [os.urandom(PAYLOAD_BYTES) for _ in range(min(n, 4096))]


class Deadline:
    """A phase's time bound: ``expired()`` once ``seconds`` have passed."""

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def expired(self) -> bool:
        return time.monotonic() >= self._end


# -- 1. produce ------------------------------------------------------------------


def produce_plain(
    client: txnq.Client, topic: str, n: int, data: list[bytes], seconds: float
) -> float:
    """Non-transactional batched produce; msgs/s."""
    deadline = Deadline(seconds)
    with client.producer(
        topic, batching_max_messages=TXN_MESSAGES, batching_max_delay="10ms"
    ) as producer:
        start = time.perf_counter()
        sent = 0
        while sent < n and not (sent % TXN_MESSAGES == 0 and deadline.expired()):
            producer.send_async(data[sent % len(data)], partition=sent % PARTITIONS)
            sent += 1
        producer.flush()
        return sent / (time.perf_counter() - start)


def produce_transactional(
    client: txnq.Client,
    topic: str,
    n: int,
    data: list[bytes],
    seconds: float,
    *,
    in_flight: bool = False,
) -> float:
    """1,000 messages per transaction over the four partitions; msgs/s. With
    ``in_flight``, each transaction ends with ``commit_async()`` and the next
    one is opened and queued while that commit runs (Pulsar's
    ``txn.commit()`` future); every commit has succeeded when this returns."""
    deadline = Deadline(seconds)
    with client.producer(
        topic, batching_max_messages=TXN_MESSAGES, batching_max_delay="10ms"
    ) as producer:
        start = time.perf_counter()
        sent = 0
        commits: list[Future[None]] = []
        while sent < n and not deadline.expired():
            txn = client.new_transaction()
            for i in range(sent, min(sent + TXN_MESSAGES, n)):
                producer.send_async(data[i % len(data)], partition=i % PARTITIONS, txn=txn)
            if in_flight:
                commits.append(txn.commit_async())
            else:
                txn.commit()
            sent = min(sent + TXN_MESSAGES, n)
        for commit in commits:
            commit.result()
        return sent / (time.perf_counter() - start)


# -- 2. consume-transform-produce ------------------------------------------------


def fill(client: txnq.Client, topic: str, n: int, data: list[bytes]) -> None:
    with client.producer(topic, batching_max_messages=TXN_MESSAGES) as producer:
        for i in range(n):
            producer.send_async(data[i % len(data)], partition=i % PARTITIONS)


def consume_transform_produce(
    client: txnq.Client, source: str, sink: str, n: int, seconds: float
) -> float:
    """Receive 500, send 500 transformed, ack cumulatively per partition, commit; msgs/s."""
    deadline = Deadline(seconds)
    consumer = client.subscribe(
        source, "ctp", initial_position="earliest", receiver_queue_size=4 * CTP_BATCH
    )
    producer = client.producer(sink, batching_max_messages=CTP_BATCH, batching_max_delay="10ms")
    done = 0
    start = time.perf_counter()
    while done < n and not deadline.expired():
        batch: list[txnq.Message] = []
        while len(batch) < CTP_BATCH and done + len(batch) < n and not deadline.expired():
            batch.extend(consumer.batch_receive(CTP_BATCH - len(batch), timeout=1.0))
        if not batch:
            break
        txn = client.new_transaction()
        last: dict[int, txnq.Message] = {}
        for message in batch:
            producer.send_async(
                message.value.upper(), key=message.key, partition=message.partition, txn=txn
            )
            last[message.partition] = message
        for message in last.values():
            consumer.acknowledge_cumulative(message, txn=txn)
        txn.commit()
        done += len(batch)
    elapsed = time.perf_counter() - start
    producer.close()
    consumer.close()
    if done < n:
        raise SystemExit(f"consume-transform-produce: processed only {done} of {n} messages")
    return done / elapsed


# -- 3. commit latency -----------------------------------------------------------


def concurrently(
    clients: int, work: Callable[[int, threading.Barrier], list[float]]
) -> list[float]:
    """Run ``work(client_index, ready)`` in ``clients`` threads; all their latencies.

    Each ``work`` waits at ``ready`` after its setup, so the timed parts overlap.
    A thread that fails breaks the barrier, and the barrier has a timeout, so
    one client that cannot connect never leaves the others waiting forever.
    """
    ready = threading.Barrier(clients, timeout=60)
    results: list[list[float]] = [[] for _ in range(clients)]
    errors: list[BaseException] = []

    def run(index: int) -> None:
        try:
            results[index] = work(index, ready)
        except BaseException as exc:  # reported below, not lost in a thread
            errors.append(exc)
            ready.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return [latency for per_client in results for latency in per_client]


def commit_latencies(
    dsn: str, topic: str, clients: int, commits: int, data: bytes, seconds: float
) -> list[float]:
    """Seconds each ``commit()`` of a one-message transaction took."""

    def work(index: int, ready: threading.Barrier) -> list[float]:
        latencies: list[float] = []
        with txnq.Client(dsn) as client, client.producer(topic) as producer:
            ready.wait()
            deadline = Deadline(seconds)
            for _ in range(commits):
                if deadline.expired():
                    break
                txn = client.new_transaction()
                producer.send(data, partition=index % PARTITIONS, txn=txn)
                start = time.perf_counter()
                txn.commit()
                latencies.append(time.perf_counter() - start)
        return latencies

    return concurrently(clients, work)


def raw_commit_latencies(
    dsn: str, clients: int, commits: int, data: bytes, seconds: float
) -> list[float]:
    """Seconds each autocommit single-row INSERT (its commit included) took."""

    def work(index: int, ready: threading.Barrier) -> list[float]:
        latencies: list[float] = []
        with psycopg.connect(dsn, autocommit=True) as conn:
            ready.wait()
            deadline = Deadline(seconds)
            for seq in range(commits):
                if deadline.expired():
                    break
                start = time.perf_counter()
                conn.execute(RAW_INSERT_ONE, (index, seq, data))
                latencies.append(time.perf_counter() - start)
        return latencies

    return concurrently(clients, work)


def percentile_ms(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


# -- main ------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dsn", default=os.environ.get("TXNQ_DSN"))
    parser.add_argument("--messages", type=int, default=100_000, help="produce phase")
    parser.add_argument("--ctp-messages", type=int, default=50_000, help="transform phase")
    parser.add_argument("--commits", type=int, default=500, help="per client, latency phase")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--seconds", type=float, default=30.0, help="time bound per phase")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    for name in ("messages", "ctp_messages", "commits", "clients"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")

    client = txnq.Client(args.dsn)
    dsn = client.dsn
    suffix = uuid.uuid4().hex[:8]
    topics = {name: f"bench-{name}-{suffix}" for name in ("plain", "txn", "in", "out", "lat")}
    created: list[str] = []
    data = payloads(max(args.messages, args.ctp_messages))
    try:
        for topic in topics.values():
            client.admin.create_topic(topic, partitions=PARTITIONS)
            created.append(topic)
        with psycopg.connect(txnq.database.connections.libpq_dsn(dsn), autocommit=True) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            version = row[0] if row else "?"
            conn.execute(RAW_TABLE)
            conn.execute("TRUNCATE txnq_bench_txn_raw")
        plain_rate = produce_plain(client, topics["plain"], args.messages, data, args.seconds)
        txn_rate = produce_transactional(client, topics["txn"], args.messages, data, args.seconds)
        in_flight_rate = produce_transactional(
            client, topics["txn"], args.messages, data, args.seconds, in_flight=True
        )
        fill(client, topics["in"], args.ctp_messages, data)
        ctp_rate = consume_transform_produce(
            client, topics["in"], topics["out"], args.ctp_messages, args.seconds
        )
        raw = raw_commit_latencies(
            txnq.database.connections.libpq_dsn(dsn),
            args.clients,
            args.commits,
            data[0],
            args.seconds,
        )
        commits = commit_latencies(
            dsn, topics["lat"], args.clients, args.commits, data[0], args.seconds
        )
    finally:
        with psycopg.connect(txnq.database.connections.libpq_dsn(dsn), autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS txnq_bench_txn_raw")
        for topic in created:
            client.admin.delete_topic(topic, force=True)
        client.close()

    p50, p99 = percentile_ms(commits, 0.50), percentile_ms(commits, 0.99)
    raw_p50, raw_p99 = percentile_ms(raw, 0.50), percentile_ms(raw, 0.99)
    checks = {
        "txn_produce_ratio": (txn_rate / plain_rate, txn_rate / plain_rate >= 0.6),
        "ctp_msgs_per_s": (ctp_rate, ctp_rate >= 20_000),
        "commit_p50_ms": (p50, p50 <= 5.0),
        "commit_p99_ms": (p99, p99 <= 25.0),
    }
    if args.json:
        print(
            json.dumps(
                {
                    "server_version": version,
                    "messages": args.messages,
                    "ctp_messages": args.ctp_messages,
                    "clients": args.clients,
                    "plain_produce_msgs_per_s": round(plain_rate),
                    "txn_produce_msgs_per_s": round(txn_rate),
                    "txn_produce_in_flight_msgs_per_s": round(in_flight_rate),
                    "ctp_msgs_per_s": round(ctp_rate),
                    "commit_latency_ms": {"p50": p50, "p99": p99, "count": len(commits)},
                    "raw_commit_latency_ms": {"p50": raw_p50, "p99": raw_p99, "count": len(raw)},
                    "targets_met": {name: met for name, (_, met) in checks.items()},
                },
                indent=2,
            )
        )
        return 0

    def verdict(name: str) -> str:
        return "met" if checks[name][1] else "NOT met"

    print(
        f"PostgreSQL {version}; {PAYLOAD_BYTES}-byte messages, {PARTITIONS} partitions; "
        f"{args.clients} concurrent clients for latencies"
    )
    print(f"{'measurement':52} {'figure':>14} {'ratio':>7}  target")
    print(f"{'non-transactional batched produce':52} {plain_rate:10,.0f} msg/s")
    print(
        f"{'transactional produce (1,000 msgs/txn, 4 partitions)':52} {txn_rate:10,.0f} msg/s"
        f" {txn_rate / plain_rate:7.0%}  >= 60% {verdict('txn_produce_ratio')}"
    )
    print(
        f"{'  the same, commits in flight (commit_async)':52} {in_flight_rate:10,.0f} msg/s"
        f" {in_flight_rate / plain_rate:7.0%}"
    )
    print(
        f"{'consume-transform-produce (500 msgs/txn)':52} {ctp_rate:10,.0f} msg/s"
        f" {'':7}  >= 20,000 {verdict('ctp_msgs_per_s')}"
    )
    print(
        f"{'raw single-row INSERT+COMMIT latency p50 / p99':52} {raw_p50:6.2f} / {raw_p99:5.2f} ms"
    )
    print(
        f"{'txnq commit() latency p50 / p99 (1-msg txns)':52} {p50:6.2f} / {p99:5.2f} ms"
        f" {p50 / raw_p50:6.1f}x  p50 <= 5 ms {verdict('commit_p50_ms')}, "
        f"p99 <= 25 ms {verdict('commit_p99_ms')}"
    )
    print(
        f"({len(commits)} commits, {len(raw)} raw commits; mean commit "
        f"{1000 * statistics.fmean(commits):.2f} ms)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
