"""Application-transactions benchmark: exactly-once processing in the
application's own PostgreSQL transaction, next to the same loop without txnq,
measured in one run.

    python bench/app_transactions.py [--dsn DSN] [--messages 20000] [--batch 100]
                                     [--seconds 60] [--json]

Without --dsn (and TXNQ_DSN) it uses the embedded PostgreSQL under ./.txnq.
Messages are 100 bytes on a 4-partition topic (filled beforehand, not timed).
Reported, each a loop of one PostgreSQL transaction per ``--batch`` messages
with one application INSERT per message:

1. the exactly-once processor: ``for msg in consumer.process(conn)``: insert
   one row into the application's table per message; the batch's acks are
   staged and applied inside the same commit;
2. the same plus consume-transform-produce: one output message per input,
   ``send_async(..., txn=txnq.attach(conn))``, published inside the commit;
3. the exactly-once processor of the asyncio client (``txnq.aio``):
   ``async for msg in consumer.process(aconn)`` on a psycopg AsyncConnection,
   the same INSERT per message;
4. the reference without txnq: the messages in a plain table; per batch
   ``SELECT ... ORDER BY id LIMIT n FOR UPDATE SKIP LOCKED``, the same INSERT
   per message, ``DELETE`` of the batch, COMMIT (the classic queue table).

Every loop is bounded in count and in time (--seconds each).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
import uuid
from typing import Any

import psycopg

import txnq

PAYLOAD_BYTES = 100
PARTITIONS = 4
IDLE = 0.3  # the processor's idle timeout, taken off its elapsed time


def payload(i: int) -> bytes:
    return f"{i:010d}".encode().ljust(PAYLOAD_BYTES, b".")


def fill_topic(client: txnq.Client, topic: str, messages: int) -> None:
    client.admin.create_topic(topic, partitions=PARTITIONS)
    with client.producer(topic) as producer:
        for i in range(messages):
            producer.send_async(payload(i), partition=i % PARTITIONS)


def run_processor(
    client: txnq.Client, dsn: str, messages: int, batch: int, seconds: float, produce: bool
) -> float:
    """Messages per second of the exactly-once processor."""
    suffix = uuid.uuid4().hex[:8]
    topic, out, table = f"bench-in-{suffix}", f"bench-out-{suffix}", f"bench_results_{suffix}"
    fill_topic(client, topic, messages)
    if produce:
        client.admin.create_topic(out, partitions=PARTITIONS)
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute(f"CREATE TABLE {table} (entry_offset bigint, batch_index int, body bytea)")
    insert = f"INSERT INTO {table} VALUES (%s, %s, %b)"
    done = 0
    with (
        psycopg.connect(dsn) as conn,
        client.subscribe(topic, "bench", initial_position="earliest", poll_interval="50ms") as c,
        client.producer(out if produce else topic) as producer,
    ):
        started = time.monotonic()
        deadline = started + seconds
        for message in c.process(conn, batch_size=batch, idle_timeout=IDLE):
            conn.execute(
                insert, (message.message_id.offset, message.message_id.batch_index, message.value)
            )
            if produce:
                producer.send_async(message.value, txn=txnq.attach(conn))
            done += 1
            if time.monotonic() > deadline:
                break  # the current batch rolls back: not counted below
        elapsed = time.monotonic() - started - IDLE
    with psycopg.connect(dsn, autocommit=True) as check:
        committed = check.execute(f"SELECT count(*) FROM {table}").fetchone()
        check.execute(f"DROP TABLE {table}")
    assert committed is not None
    return int(committed[0]) / elapsed


def run_processor_async(dsn: str, messages: int, batch: int, seconds: float) -> float:
    """Messages per second of the asyncio client's exactly-once processor."""
    return asyncio.run(_processor_async(dsn, messages, batch, seconds))


async def _processor_async(dsn: str, messages: int, batch: int, seconds: float) -> float:
    suffix = uuid.uuid4().hex[:8]
    topic, table = f"bench-ain-{suffix}", f"bench_aresults_{suffix}"
    with txnq.Client(dsn) as sync_client:
        fill_topic(sync_client, topic, messages)
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as setup:
        await setup.execute(
            f"CREATE TABLE {table} (entry_offset bigint, batch_index int, body bytea)"
        )
    insert = f"INSERT INTO {table} VALUES (%s, %s, %b)"
    async with (
        txnq.aio.Client(dsn) as client,
        client.subscribe(topic, "bench", initial_position="earliest", poll_interval="50ms") as c,
    ):
        conn = await psycopg.AsyncConnection.connect(dsn)
        try:
            started = time.monotonic()
            deadline = started + seconds
            processed = c.process(conn, batch_size=batch, idle_timeout=IDLE)
            async with contextlib.aclosing(processed) as stream:
                async for message in stream:
                    await conn.execute(
                        insert,
                        (message.message_id.offset, message.message_id.batch_index, message.value),
                    )
                    if time.monotonic() > deadline:
                        break  # the current batch rolls back: not counted below
            elapsed = time.monotonic() - started - IDLE
        finally:
            await conn.close()
    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as check:
        cur = await check.execute(f"SELECT count(*) FROM {table}")
        committed = await cur.fetchone()
        await check.execute(f"DROP TABLE {table}")
    assert committed is not None
    return int(committed[0]) / elapsed


def run_plain_table(dsn: str, messages: int, batch: int, seconds: float) -> float:
    """Messages per second of the same loop on a plain queue table, without txnq."""
    suffix = uuid.uuid4().hex[:8]
    jobs, results = f"bench_jobs_{suffix}", f"bench_plain_results_{suffix}"
    with psycopg.connect(dsn, autocommit=True) as setup:
        setup.execute(f"CREATE TABLE {jobs} (id bigint PRIMARY KEY, body bytea NOT NULL)")
        setup.execute(f"CREATE TABLE {results} (id bigint, body bytea)")
        with setup.cursor().copy(f"COPY {jobs} (id, body) FROM STDIN") as copy:
            for i in range(messages):
                copy.write_row((i, payload(i)))
        setup.execute(f"VACUUM ANALYZE {jobs}")
    take = f"SELECT id, body FROM {jobs} ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED"
    insert = f"INSERT INTO {results} VALUES (%s, %b)"
    delete = f"DELETE FROM {jobs} WHERE id = ANY(%s)"
    done = 0
    with psycopg.connect(dsn) as conn:
        started = time.monotonic()
        deadline = started + seconds
        while time.monotonic() < deadline:
            with conn.transaction():
                rows = conn.execute(take, (batch,)).fetchall()
                if not rows:
                    break
                for row_id, body in rows:
                    conn.execute(insert, (row_id, body))
                conn.execute(delete, ([row[0] for row in rows],))
            done += len(rows)
        elapsed = time.monotonic() - started
    with psycopg.connect(dsn, autocommit=True) as cleanup:
        cleanup.execute(f"DROP TABLE {jobs}, {results}")
    return done / elapsed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", default=os.environ.get("TXNQ_DSN"))
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.batch < 1 or args.seconds <= 0:
        parser.error("--messages, --batch and --seconds must be positive")

    with txnq.Client(args.dsn) as client:
        dsn = client.dsn
        figures: dict[str, Any] = {
            "messages": args.messages,
            "batch": args.batch,
            "plain_table_msgs_per_s": run_plain_table(dsn, args.messages, args.batch, args.seconds),
            "processor_msgs_per_s": run_processor(
                client, dsn, args.messages, args.batch, args.seconds, produce=False
            ),
            "processor_produce_msgs_per_s": run_processor(
                client, dsn, args.messages, args.batch, args.seconds, produce=True
            ),
            "asyncio_processor_msgs_per_s": run_processor_async(
                dsn, args.messages, args.batch, args.seconds
            ),
        }
    reference = figures["plain_table_msgs_per_s"]
    figures["processor_ratio"] = figures["processor_msgs_per_s"] / reference
    figures["processor_produce_ratio"] = figures["processor_produce_msgs_per_s"] / reference
    figures["asyncio_processor_ratio"] = figures["asyncio_processor_msgs_per_s"] / reference
    if args.json:
        json.dump(figures, sys.stdout, indent=2)
        print()
        return 0
    print(f"{args.messages:,} messages of {PAYLOAD_BYTES} bytes, {args.batch} per transaction\n")
    print(f"{'measurement':<62} {'msgs/s':>10} {'ratio':>7}")
    rows = [
        ("plain queue table: SELECT FOR UPDATE SKIP LOCKED, INSERT, DELETE", reference, None),
        (
            "txnq consumer.process(conn): INSERT per message, acks in the commit",
            figures["processor_msgs_per_s"],
            figures["processor_ratio"],
        ),
        (
            "  ... and one output message per input (send_async, txn=attach)",
            figures["processor_produce_msgs_per_s"],
            figures["processor_produce_ratio"],
        ),
        (
            "txnq.aio consumer.process(aconn): the same on an AsyncConnection",
            figures["asyncio_processor_msgs_per_s"],
            figures["asyncio_processor_ratio"],
        ),
    ]
    for name, rate, ratio in rows:
        shown = "" if ratio is None else f"{ratio:.0%}"
        print(f"{name:<62} {rate:>10,.0f} {shown:>7}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
