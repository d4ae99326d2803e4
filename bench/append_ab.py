"""A/B of two append function versions for a single send (one message, one
commit per call), interleaved so that the shared machine's load weighs on
both alike.

    python bench/append_ab.py --dsn DSN [--old append_v5] [--new append_v6]
        [--rounds 6] [--seconds 5] [--clients 1] [--sync-commit] [--alternate]

DSN names an existing database migrated to head, with the function versions
to compare loaded (the variants of issue 23's fourth round live on the branch
``append-v6``, bench/append_variants/, loaded by psql: prelude.sql first, then
``SELECT txnq.grant_roles_v6()``; docs/benchmarks.md) -- a scratch one: the
benchmark creates a topic ``append-ab-<pid>`` with one partition per client
and turns ``track_functions`` on for the database). Each round runs both
versions in turn (the order alternates), each for ``--seconds`` with
``--clients`` processes, every process appending to its own partition with
its own registered producer, as ``producer.send()`` does: one call per
message, autocommit. Printed per round and in total: calls per second over
all clients, and server time per call of the function itself
(pg_stat_user_functions total_time / calls). With ``--alternate`` the
two take turns call by call within each client instead (each first as often
as last), and the client's time per call replaces the rate: the tighter
comparison, as bench/permission_overhead.py makes it.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import time
from typing import Any

import psycopg

QUERY = (
    "SELECT entry_offset, publish_time, duplicate, roll_entry_log FROM txnq.{fn}("
    "$1::integer, $2::integer, $3::bigint, $4::integer, $5::bigint, $6::bytea[], "
    "NULL, NULL, NULL, NULL, NULL)"
)


def _worker(args: tuple[str, str, int, int, int, int, int, float, bool]) -> list[tuple[int, float]]:
    """Append for ``seconds``; ``fns`` is one function name, or several
    separated by commas that take turns call by call (each first as often as
    last). Returns (calls, client seconds) per function."""
    dsn, fns, topic_id, partition, producer_id, epoch, first, seconds, sync_commit = args
    names = fns.split(",")
    done = [(0, 0.0)] * len(names)
    payload = ("{\\\\x" + (b"x" * 100).hex() + "}").encode()
    with psycopg.connect(dsn, autocommit=True) as conn:
        if not sync_commit:
            conn.execute("SET synchronous_commit = off")
        pgconn = conn.pgconn
        for k, fn in enumerate(names):
            pgconn.prepare(f"a{k}".encode(), QUERY.format(fn=fn).encode())
        deadline = time.perf_counter() + seconds
        seq = first
        turn = 0
        while time.perf_counter() < deadline:
            order = range(len(names)) if turn % 2 == 0 else reversed(range(len(names)))
            turn += 1
            for k in order:
                params = [str(v).encode() for v in (topic_id, partition, producer_id, epoch, seq)]
                start = time.perf_counter()
                res = pgconn.exec_prepared(f"a{k}".encode(), [*params, payload])
                took = time.perf_counter() - start
                if res.status != 2:  # PGRES_TUPLES_OK
                    raise RuntimeError(res.error_message.decode())
                done[k] = (done[k][0] + 1, done[k][1] + took)
                seq += 1
    return done


def _stats(dsn: str, fn: str) -> tuple[int, float]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        row = conn.execute(
            "SELECT coalesce(sum(calls), 0), coalesce(sum(total_time), 0) "
            "FROM pg_stat_user_functions "
            "WHERE schemaname = 'txnq' AND funcname = %s",
            (fn,),
        ).fetchone()
        assert row is not None
        return int(row[0]), float(row[1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", required=True)
    parser.add_argument("--old", default="append_v5")
    parser.add_argument("--new", default="append_v6")
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--sync-commit", action="store_true")
    parser.add_argument(
        "--alternate",
        action="store_true",
        help="the two functions take turns call by call in every client (client time per call) "
        "instead of round by round (calls per second)",
    )
    ns = parser.parse_args()
    with psycopg.connect(ns.dsn, autocommit=True) as conn:
        db = conn.info.dbname
        conn.execute(f"ALTER DATABASE \"{db}\" SET track_functions = 'all'")
        name = f"append-ab-{os.getpid()}"
        row = conn.execute(
            "SELECT txnq.create_topic_v2(%s, %s::integer, -1, -1, NULL, 5242880)",
            (name, ns.clients),
        ).fetchone()
        assert row is not None
        topic_id = int(row[0])
        producers: list[tuple[int, int]] = []
        for i in range(ns.clients):
            rows = conn.execute(
                "SELECT producer_id, epoch FROM txnq.register_producer_v2(%s, %s)",
                (topic_id, f"ab-{i}"),
            ).fetchall()
            producers.append((int(rows[0][0]), int(rows[0][1])))
    next_seq = [0] * ns.clients
    # Per function: calls, seconds of the rounds (client rate) or client
    # seconds of its own calls (--alternate), server milliseconds.
    totals: dict[str, list[float]] = {ns.old: [0.0, 0.0, 0.0], ns.new: [0.0, 0.0, 0.0]}
    with multiprocessing.Pool(ns.clients) as pool:
        for r in range(ns.rounds):
            if ns.alternate:
                windows = [f"{ns.old},{ns.new}" if r % 2 == 0 else f"{ns.new},{ns.old}"]
            else:
                windows = [ns.old, ns.new] if r % 2 == 0 else [ns.new, ns.old]
            line: list[str] = [f"round {r + 1}:"]
            for window in windows:
                names = window.split(",")
                before = [_stats(ns.dsn, fn) for fn in names]
                work: list[Any] = [
                    (
                        ns.dsn,
                        window,
                        topic_id,
                        i,
                        *producers[i],
                        next_seq[i],
                        ns.seconds,
                        ns.sync_commit,
                    )
                    for i in range(ns.clients)
                ]
                start = time.perf_counter()
                done = pool.map(_worker, work)
                elapsed = time.perf_counter() - start
                for i, per_fn in enumerate(done):
                    next_seq[i] += sum(n for n, _ in per_fn)
                time.sleep(0.7)  # the statistics' flush
                for k, fn in enumerate(names):
                    c0, t0 = before[k]
                    c1, t1 = _stats(ns.dsn, fn)
                    calls = sum(per_fn[k][0] for per_fn in done)
                    seconds = sum(per_fn[k][1] for per_fn in done) if ns.alternate else elapsed
                    totals[fn][0] += calls
                    totals[fn][1] += seconds
                    totals[fn][2] += t1 - t0
                    server = (t1 - t0) * 1000 / max(c1 - c0, 1)
                    if ns.alternate:
                        client = seconds * 1e6 / max(calls, 1)
                        line.append(f"{fn} {client:.1f} us client, {server:.1f} us server")
                    else:
                        line.append(f"{fn} {calls / elapsed:,.0f}/s, {server:.1f} us server")
            print("  ".join(line), flush=True)
    for fn, (n_calls, seconds, ms) in totals.items():
        server = ms * 1000 / n_calls
        if ns.alternate:
            client = seconds * 1e6 / n_calls
            print(f"total {fn}: {client:.1f} us per call at the client, {server:.1f} us server")
        else:
            print(f"total {fn}: {n_calls / seconds:,.0f} calls/s, {server:.1f} us server per call")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
