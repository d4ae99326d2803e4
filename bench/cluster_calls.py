"""One call's cost through the cluster proxy: append_v5 and fetch_v4, three ways.

    python -m bench.cluster_calls [--calls 40] [--rounds 3] [--json]

It starts a throwaway proxy and one shard server (txnq.cluster.servers,
127.0.0.1 only, removed at the end), sets a one-shard cluster up and times,
on one connection each, reading every result in binary as the client does:

- direct: the call on the shard database itself;
- packed: through the proxy's routes of this revision (the payloads cross
  the proxy->shard hop as one bytea: append_packed_v1 / fetch_packed_v1);
- text: through the proxy's routes before it (plain PL/Proxy functions of
  the same signature, installed again for the measurement: PL/Proxy 2.10
  sends the bytea[] argument and receives the bytea[] / timestamptz columns
  as text).

The calls: append_v5 of one batch of 1000 x 100-byte payloads (no producer,
no keys), of one 100-byte payload, and fetch_v4 of 20 such entries (20,000 messages, 2 MB). Each
figure is the median milliseconds of --calls calls (after 3 unmeasured
ones), the three ways taking turns --rounds times; the medians of the
rounds' medians are printed (docs/cluster.md, "Throughput").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from typing import Any

import psycopg
from psycopg import sql

import txnq
from txnq.cluster.servers import HOST, ThrowawayServers, missing_requirements
from txnq.cluster.setup import init
from txnq.database.arrays import ByteaArray

DATABASE = "txnq_calls"
PAYLOADS = 1000
PAYLOAD_BYTES = 100
FETCH_ENTRIES = 20
MAX_CALLS = 1000
MAX_ROUNDS = 20
WARMUP = 3
APPEND = "SELECT entry_offset FROM txnq.append_v5(%s, 0, NULL, NULL, NULL, %s)"
FETCH = (
    "SELECT entry_offset, publish_time, payloads FROM txnq.fetch_v4(%s, 0, %s, -1, %s, "
    "1073741824, false)"
)
# The proxy's routes of append_v5 / fetch_v4 before revision 0028: PL/Proxy
# functions that call the shard function of the same name.
TEXT_ROUTES = """
CREATE OR REPLACE FUNCTION txnq.append_v5(
    p_topic_id integer, p_partition integer, p_producer_id bigint, p_producer_epoch integer,
    p_first_sequence bigint, p_payloads bytea[], p_keys bytea[] DEFAULT NULL,
    p_properties jsonb[] DEFAULT NULL, p_event_times timestamptz[] DEFAULT NULL,
    p_txn_tc integer DEFAULT NULL, p_txn_seq bigint DEFAULT NULL,
    OUT entry_offset bigint, OUT publish_time timestamptz, OUT duplicate boolean,
    OUT roll_entry_log boolean)
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
$$;
CREATE OR REPLACE FUNCTION txnq.fetch_v4(
    p_topic_id integer, p_partition integer, p_subscription_id bigint, p_after_offset bigint,
    p_max_entries integer DEFAULT 100, p_max_bytes bigint DEFAULT 8388608,
    p_from_mark_delete boolean DEFAULT true)
RETURNS TABLE (entry_offset bigint, publish_time timestamptz, producer_id bigint,
               first_sequence bigint, message_count integer, payloads bytea[], keys bytea[],
               properties jsonb[], event_times timestamptz[], acked_batch_indexes integer[])
LANGUAGE plproxy AS $$
    CLUSTER 'txnq';
    RUN ON txnq_cluster.route(p_topic_id, p_partition);
$$;
"""


def db_dsn(port: int, database: str) -> str:
    return f"postgresql://postgres@{HOST}:{port}/{database}"


def time_calls(dsn: str, query: str, params: tuple[Any, ...], calls: int) -> float:
    """Median milliseconds of ``calls`` executions on one fresh connection."""
    times = []
    with psycopg.connect(dsn, autocommit=True) as conn:
        for n in range(WARMUP + calls):
            start = time.perf_counter()
            conn.execute(query, params, binary=True).fetchall()
            if n >= WARMUP:
                times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def measure(calls: int, rounds: int) -> dict[str, dict[str, float]]:
    # The client's binary bytea[] dumper (psycopg's generic one costs ~10 ms here).
    payloads = ByteaArray(os.urandom(PAYLOAD_BYTES) for _ in range(PAYLOADS))
    with ThrowawayServers(1) as servers:
        assert servers.proxy is not None
        for server in servers.servers:
            with psycopg.connect(server.dsn, autocommit=True) as conn:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        proxy = db_dsn(servers.proxy.port, DATABASE)
        shard = db_dsn(servers.shards[0].port, DATABASE)
        init(proxy, [shard])
        with txnq.Client(proxy) as client:
            topic_id = client.admin.create_topic("calls", partitions=1).topic_id
            client.subscribe("calls", "calls", "exclusive").close()
        with psycopg.connect(proxy, autocommit=True) as conn:
            row = conn.execute(
                "SELECT subscription_id FROM txnq.subscription_by_name_v1(%s, 'calls')",
                (topic_id,),
            ).fetchone()
            assert row is not None
            subscription_id = row[0]
            packed_routes = [
                str(r[0])
                for r in conn.execute(
                    "SELECT pg_get_functiondef(p.oid) FROM pg_proc p"
                    " WHERE p.pronamespace = 'txnq'::regnamespace"
                    " AND p.proname IN ('append_v5', 'fetch_v4')"
                )
            ]
        with psycopg.connect(shard, autocommit=True) as conn:
            for _ in range(FETCH_ENTRIES):
                conn.execute(APPEND, (topic_id, payloads), binary=True)
        ways = {"direct": shard, "packed": proxy, "text": proxy}
        results: dict[str, dict[str, list[float]]] = {
            call: {way: [] for way in ways} for call in ("append", "single", "fetch")
        }
        for _ in range(rounds):
            for way, dsn in ways.items():
                with psycopg.connect(proxy, autocommit=True) as conn:
                    for statement in [TEXT_ROUTES] if way == "text" else packed_routes:
                        conn.execute(statement.encode())
                results["fetch"][way].append(
                    time_calls(dsn, FETCH, (topic_id, subscription_id, FETCH_ENTRIES), calls)
                )
                results["append"][way].append(time_calls(dsn, APPEND, (topic_id, payloads), calls))
                one = ByteaArray(payloads[:1])
                results["single"][way].append(time_calls(dsn, APPEND, (topic_id, one), calls))
    return {
        call: {way: statistics.median(values) for way, values in per_way.items()}
        for call, per_way in results.items()
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.cluster_calls",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--calls", type=int, default=40, help="calls per figure (40)")
    parser.add_argument("--rounds", type=int, default=3, help="turns of the three ways (3)")
    parser.add_argument("--json", action="store_true", help="JSON for scripts")
    args = parser.parse_args(argv)
    missing = missing_requirements()
    if missing:
        print("bench/cluster_calls.py needs " + "; ".join(missing), file=sys.stderr)
        return 2
    figures = measure(min(max(1, args.calls), MAX_CALLS), min(max(1, args.rounds), MAX_ROUNDS))
    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{'call':<40} {'direct ms':>10} {'packed ms':>10} {'text ms':>10}")
    names = {
        "append": f"append_v5, {PAYLOADS} x {PAYLOAD_BYTES} B",
        "single": f"append_v5, 1 x {PAYLOAD_BYTES} B",
        "fetch": f"fetch_v4, {FETCH_ENTRIES} entries ({FETCH_ENTRIES * PAYLOADS} msgs, 2 MB)",
    }
    for call, per_way in figures.items():
        print(
            f"{names[call]:<40} {per_way['direct']:>10.2f} {per_way['packed']:>10.2f}"
            f" {per_way['text']:>10.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
