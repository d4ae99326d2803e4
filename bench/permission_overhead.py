"""What the permission checks cost an application role, per append, resolved to
a few microseconds: the producer's own statement (``append_positional``, one
message) on an owner connection and on an application role's connection,
alternating call by call in one process, so that whatever slows the machine
down weighs on both alike; next to it, the PostgreSQL reference measured the
same way: a plain one-row INSERT on each connection.

    python bench/permission_overhead.py [--dsn DSN] [--calls 4000] [--try-sql FILE]

``--dsn`` names a role that may CREATE DATABASE and CREATE ROLE (default: the
local PostgreSQL); the benchmark makes a database ``txnq_permission_bench``
(dropped at the end) and a LOGIN role ``txnq_bench_app`` in ``txnq_client``
with 'admin' on the topic prefix ``bench-``, as docs/security.md sets up an
application. Commits are asynchronous (``synchronous_commit = off``) on both
connections: the fsync of a commit varies more on a small machine than the
few microseconds measured here (docs/benchmarks.md). ``--try-sql FILE`` runs
an SQL file (as the owner) on the benchmark's database once it is migrated:
a function body measured before it becomes a revision.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import psycopg
from psycopg import sql

import txnq
from txnq.database.connections import libpq_dsn
from txnq.database.migrate import upgrade
from txnq.database.queries import QUERIES

DATABASE = "txnq_permission_bench"
ROLE = "txnq_bench_app"
TOPIC = "bench-permissions"
RAW_TABLE = "txnq_permission_bench_raw"


def _dsn_for(dsn: str, dbname: str, user: str | None = None) -> str:
    params: dict[str, Any] = {"dbname": dbname}
    if user is not None:
        params["user"] = user
        params["password"] = None
    return psycopg.conninfo.make_conninfo(libpq_dsn(dsn), **params)


def _prepare(server: str, try_sql: str | None) -> str:
    """The benchmark's database, migrated, with its topic, role and grant."""
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DATABASE)))
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(ROLE)))
    owner = _dsn_for(server, DATABASE)
    upgrade(owner)
    if try_sql is not None:
        with (
            open(try_sql, encoding="utf-8") as file,
            psycopg.connect(owner, autocommit=True) as conn,
        ):
            conn.execute(file.read())  # a developer's own file, on a scratch database
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(sql.SQL("GRANT txnq_client TO {}").format(sql.Identifier(ROLE)))
        conn.execute(sql.SQL("GRANT CREATE ON SCHEMA public TO {}").format(sql.Identifier(ROLE)))
        conn.execute(
            sql.SQL("CREATE TABLE {} (id bigint, payload bytea)").format(sql.Identifier(RAW_TABLE))
        )
        conn.execute(
            sql.SQL("GRANT INSERT ON {} TO {}").format(
                sql.Identifier(RAW_TABLE), sql.Identifier(ROLE)
            )
        )
    client = txnq.Client(owner)
    try:
        client.admin.create_topic(TOPIC, partitions=1)
        client.admin.grant(ROLE, prefix="bench-", actions="admin")
    finally:
        client.close()
    return owner


class Side:
    """One connection and the producer registered on it."""

    def __init__(self, dsn: str, topic_id: int) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        self.conn.execute("SET synchronous_commit = off")
        row = self.conn.execute(
            "SELECT producer_id, epoch FROM txnq.register_producer_v2(%s, %s) LIMIT 1",
            (topic_id, f"bench-{os.getpid()}-{id(self)}"),
        ).fetchone()
        assert row is not None
        self.topic_id, self.producer_id, self.epoch = topic_id, int(row[0]), int(row[1])
        self.sequence = 0
        self.append_seconds = 0.0
        self.insert_seconds = 0.0

    def append(self) -> None:
        params = (self.topic_id, 0, self.producer_id, self.epoch, self.sequence, [b"x"])
        start = time.perf_counter()
        self.conn.execute(
            QUERIES["append_positional"], (*params, None, None, None, None, None), prepare=True
        )
        self.append_seconds += time.perf_counter() - start
        self.sequence += 1

    def insert(self) -> None:
        start = time.perf_counter()
        self.conn.execute(
            sql.SQL("INSERT INTO {} VALUES (%s, %s)").format(sql.Identifier(RAW_TABLE)),
            (self.sequence, b"x"),
            prepare=True,
        )
        self.insert_seconds += time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dsn",
        default=os.environ.get("TXNQ_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument(
        "--try-sql", metavar="FILE", help="SQL to run on the migrated database first"
    )
    args = parser.parse_args()
    if args.calls < 100:
        parser.error("--calls must be at least 100")

    owner_dsn = _prepare(args.dsn, args.try_sql)
    try:
        with psycopg.connect(owner_dsn, autocommit=True) as conn:
            row = conn.execute("SELECT topic_id FROM txnq.topics WHERE name = %s", (TOPIC,))
            topic_id = int(row.fetchone()[0])  # type: ignore[index]
        owner = Side(owner_dsn, topic_id)
        role = Side(_dsn_for(args.dsn, DATABASE, ROLE), topic_id)
        sides = (owner, role)
        for _ in range(200):  # prepared statements, caches
            for side in sides:
                side.append()
                side.insert()
        for side in sides:
            side.append_seconds = side.insert_seconds = 0.0
        for _ in range(args.calls):
            for side in sides:
                side.append()
                side.insert()
        for side in sides:
            side.conn.close()
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(DATABASE)))

    def micros(seconds: float) -> float:
        return seconds / args.calls * 1e6

    print(f"bench/permission_overhead.py: {args.calls} calls each, alternating, async commit")
    print(f"{'per call (us)':<40}{'owner':>10}{'role':>10}{'role extra':>12}")
    for name, attr in (("raw one-row INSERT", "insert_seconds"), ("txnq append", "append_seconds")):
        a, b = micros(getattr(owner, attr)), micros(getattr(role, attr))
        print(f"{name:<40}{a:>10.1f}{b:>10.1f}{b - a:>12.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
