"""What the floor benchmarks share (bench/single_send_floor.py,
bench/commit_floor.py): their command line -- a scratch database, client
counts, rounds and seconds per operation; each script's ``measure(dsn,
clients, rounds, seconds)`` is run for every client count -- their topic,
a partition and a producer per client, and the check of a prepared call's
result."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

import psycopg

Measure = Callable[[str, int, int, float], dict[str, dict[str, float]]]


def checked(result: Any, what: str) -> Any:
    """``result`` of a libpq call (``pgconn.exec_prepared``), or a
    RuntimeError naming ``what`` with the server's message if it failed."""
    if result.status not in (1, 2):  # PGRES_COMMAND_OK, PGRES_TUPLES_OK
        raise RuntimeError(f"{what}: {(result.error_message or b'').decode()}")
    return result


Show = Callable[[dict[str, dict[str, dict[str, float]]], int], None]


def main(doc: str, measure: Measure, show: Show) -> int:
    """Parse the command line, measure for every client count, and print
    the results by client count as JSON (``--json``) or through ``show``
    (results, rounds). A bad argument exits with a usage error."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("--dsn", required=True, help="a scratch database migrated to head")
    parser.add_argument("--clients", default="1,4", help="client counts, comma-separated")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--json", action="store_true")
    ns = parser.parse_args()
    try:
        counts = [int(c) for c in ns.clients.split(",")]
    except ValueError:
        parser.error(f"--clients takes client counts separated by commas, not {ns.clients!r}")
    if ns.rounds < 1 or ns.seconds <= 0 or any(c < 1 for c in counts):
        parser.error("--rounds, --seconds and every --clients count must be positive")
    results = {str(c): measure(ns.dsn, c, ns.rounds, ns.seconds) for c in counts}
    if ns.json:
        print(json.dumps(results, indent=2))
    else:
        show(results, ns.rounds)
    return 0


def topic_with_producers(
    conn: psycopg.Connection[Any], name: str, clients: int
) -> tuple[int, list[tuple[int, int]]]:
    """Create topic ``name`` with a partition per client and register a
    producer per client (``<name>-<i>``): the topic id and each producer's
    (id, epoch)."""
    row = conn.execute(
        "SELECT txnq.create_topic_v2(%s, %s::integer, -1, -1, NULL, 5242880)", (name, clients)
    ).fetchone()
    assert row is not None
    topic_id = int(row[0])
    producers = []
    for i in range(clients):
        got = conn.execute(
            "SELECT producer_id, epoch FROM txnq.register_producer_v2(%s, %s)",
            (topic_id, f"{name}-{i}"),
        ).fetchone()
        assert got is not None
        producers.append((int(got[0]), int(got[1])))
    return topic_id, producers
