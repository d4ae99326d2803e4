"""Exactly once through kill -9: a consume → write-your-own-table → produce
loop in the application's own transaction, killed at random points, ends with
the application table, the output topic and the subscription's cursor in
exact agreement — every input once in the table and once in the output."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import psycopg

import txnq
from tests.helpers import sql, sql_value

INPUTS = 1000
KILLS = 5
DEADLINE_SECONDS = 40.0

# argv: dsn, idle timeout ("-" for none). Prints "ready" once subscribed.
WORKER = textwrap.dedent(
    """
    import sys, time, psycopg, txnq
    dsn, idle = sys.argv[1], sys.argv[2]
    client = txnq.Client(dsn)
    for attempt in range(100):
        try:
            consumer = client.subscribe(
                "in", "etl", subscription_type="failover", initial_position="earliest",
                lease="1s", poll_interval="100ms",
            )
            break
        except txnq.errors.ConsumerBusyError:
            time.sleep(0.1)
    producer = client.producer("out")
    conn = psycopg.connect(dsn)
    print("ready", flush=True)
    idle_timeout = None if idle == "-" else idle
    for message in consumer.process(conn, batch_size=10, idle_timeout=idle_timeout):
        number = int(message.value)
        conn.execute(
            "INSERT INTO processed VALUES (%s, %s, %s)",
            (number, message.message_id.partition, message.message_id.offset),
        )
        producer.send_async(f"out {number}", txn=txnq.attach(conn))
        time.sleep(0.0005)
    print("drained", flush=True)
    """
)


def start_worker(dsn: str, idle: str) -> subprocess.Popen[str]:
    env = {**os.environ, "TXNQ_DSN": dsn}
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, dsn, idle],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_a_processor_killed_at_random_points_processes_every_input_exactly_once(
    dsn: str,
) -> None:
    started = time.monotonic()
    rng = random.Random(8)
    with txnq.Client(dsn) as client:
        client.admin.create_topic("in", partitions=2)
        client.admin.create_topic("out", partitions=1)
        with client.producer("in", batching_max_messages=50) as producer:
            for number in range(INPUTS):
                producer.send_async(str(number), key=str(number))
    with psycopg.connect(dsn, autocommit=True) as conn:
        # No unique key on purpose: a duplicate must show, not fail.
        conn.execute("CREATE TABLE processed (number int, partition int, entry_offset bigint)")

    kills = 0
    progress: list[int] = []
    while kills < KILLS and time.monotonic() - started < DEADLINE_SECONDS / 2:
        worker = start_worker(dsn, "-")
        try:
            assert worker.stdout is not None
            assert worker.stdout.readline().strip() == "ready", worker.stderr
            time.sleep(rng.uniform(0.05, 0.6))
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait(10)
        kills += 1
        done = sql_value(dsn, "SELECT count(*) FROM processed")
        progress.append(done)
        if done >= INPUTS:
            break

    # At least one kill landed while the loop was in the middle of its work.
    assert any(0 < done < INPUTS for done in progress), progress
    # A last worker drains what is left (its predecessors' leases run out first).
    final = start_worker(dsn, "1500ms")
    try:
        out, err = final.communicate(
            timeout=max(5.0, DEADLINE_SECONDS - (time.monotonic() - started))
        )
    finally:
        if final.poll() is None:
            final.kill()
            final.wait()
    assert final.returncode == 0, err
    assert "drained" in out

    processed = sql(dsn, "SELECT number, count(*) FROM processed GROUP BY number ORDER BY number")
    assert processed == [(number, 1) for number in range(INPUTS)]
    outputs = sql(
        dsn,
        "SELECT convert_from(payload, 'UTF8'), count(*) FROM txnq.messages "
        "WHERE topic = 'out' GROUP BY 1",
    )
    assert sorted(outputs) == sorted((f"out {number}", 1) for number in range(INPUTS))
    # The cursor passed every input, and nothing is left staged or pending.
    assert sql(
        dsn,
        "SELECT c.partition, c.mark_delete_offset = h.next_offset - 1 "
        "FROM txnq.cursors c JOIN txnq.partitions h USING (topic_id, partition) "
        "JOIN txnq.topics t USING (topic_id) WHERE t.name = 'in' ORDER BY 1",
    ) == [(0, True), (1, True)]
    assert sql(
        dsn,
        "SELECT (SELECT count(*) FROM txnq.staged_sends), (SELECT count(*) FROM txnq.staged_acks),"
        " (SELECT count(*) FROM txnq.individual_acks)",
    ) == [(0, 0, 0)]
