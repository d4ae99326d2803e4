"""txnq: the same operations through its public API, driven the way
bench/produce_consume.py and bench/transactions.py drive it."""

from __future__ import annotations

import threading
from typing import Any

import txnq
from bench.peers.common import (
    BATCH,
    Config,
    PeerRun,
    Skipped,
    analyze,
    bounded,
    latency_summary,
    measure_storage,
    overall,
    single_phases,
    timed,
)
from bench.produce_consume import PARTITIONS, txnq_consume, txnq_produce_batched
from bench.transactions import (
    commit_latencies,
    concurrently,
    consume_transform_produce,
    fill,
    produce_transactional,
)
from txnq.database.migrate import upgrade

name = "txnq"
title = "txnq"
payload = "bytes"


def available(server_dsn: str) -> str | None:
    return None


def single_sends(
    dsn: str, topic: str, cfg: Config, clients: int, data: list[bytes]
) -> tuple[int, float]:
    """Synchronous ``send()`` (one commit each) from ``clients`` clients, each
    with its own txnq.Client and producer; the count and msgs/s overall."""

    def work(index: int, ready: threading.Barrier) -> list[float]:
        with txnq.Client(dsn) as client, client.producer(topic) as producer:
            ready.wait()

            def one(i: int) -> int:
                producer.send(data[i % len(data)])
                return 1

            return timed(*bounded(cfg.single, cfg.seconds, one))

    return overall(concurrently(clients, work))


def consume_shared(client: txnq.Client, topic: str, n: int, cfg: Config) -> tuple[int, float]:
    """A shared subscription: receive in batches of up to 1000 and acknowledge
    each batch individually (shared subscriptions have no cumulative ack).
    Time-bounded like the other peers' consume phases: returns how many it
    consumed and the rate over those."""
    try:
        consumer = client.subscribe(
            topic,
            "bench-shared",
            subscription_type="shared",
            initial_position="earliest",
            receiver_queue_size=20_000,
        )
    except txnq.errors.TxnqError as exc:
        raise Skipped(f"this txnq refuses shared subscriptions: {exc}") from exc
    try:

        def step(_: int) -> int:
            batch = consumer.batch_receive(BATCH, timeout=5)
            if batch:
                consumer.acknowledge(batch)
            return len(batch)

        done, rate = bounded(n, cfg.seconds, step)
    finally:
        consumer.close()
    if done == 0:
        raise Skipped(f"the shared consumer received nothing in {cfg.seconds:g}s")
    return done, rate


def run(dsn: str, cfg: Config, data: list[bytes], progress: Any) -> PeerRun:
    result = PeerRun()
    progress("migrate")
    upgrade(dsn)
    topic = "bench"
    with txnq.Client(dsn) as client:
        client.admin.create_topic(topic, partitions=PARTITIONS)
        for extra in ("txn", "ctp-in", "ctp-out", "latency"):
            client.admin.create_topic(extra, partitions=PARTITIONS)
        sent_single = single_phases(
            result,
            dsn,
            cfg,
            lambda part, k: single_sends(dsn, topic, part, k, data),
            progress,
            "send()",
        )
        progress("batched send")
        result.rates["send_batch"] = txnq_produce_batched(client, topic, cfg.messages, data)
        total = sent_single + cfg.messages
        analyze(dsn)
        progress("consume + cumulative ack (exclusive)")
        result.rates["consume_ack"] = txnq_consume(client, topic, total)
        # batch_receive(BATCH) never hands out more than BATCH: the same figure.
        result.rates["consume_ack_1000"] = result.rates["consume_ack"]
        progress("consume + ack (shared)")
        try:
            done, result.rates["consume_ack_shared"] = consume_shared(client, topic, total, cfg)
            if done < total:
                result.notes.append(
                    f"shared consume + ack: {done:,} of {total:,} messages within {cfg.seconds:g}s"
                )
        except Skipped as exc:
            result.skipped["consume_ack_shared"] = str(exc)
    progress("storage")
    result.storage = measure_storage(dsn, total)
    with txnq.Client(dsn) as client:
        progress("transactional produce")
        result.rates["txn_produce"] = produce_transactional(
            client, "txn", cfg.ctp_messages, data, cfg.seconds
        )
        progress("transactional produce, commits in flight")
        result.rates["txn_produce_in_flight"] = produce_transactional(
            client, "txn", cfg.ctp_messages, data, cfg.seconds, in_flight=True
        )
        progress("consume-transform-produce")
        fill(client, "ctp-in", cfg.ctp_messages, data)
        try:
            result.rates["ctp"] = consume_transform_produce(
                client, "ctp-in", "ctp-out", cfg.ctp_messages, cfg.seconds
            )
        except SystemExit as exc:  # the helper's way of saying it ran out of time
            result.skipped["ctp"] = str(exc)
    progress(f"commit() latency, {cfg.clients} clients")
    result.latencies["commit"] = latency_summary(
        commit_latencies(dsn, "latency", cfg.clients, cfg.commits, data[0], cfg.seconds)
    )
    return result
