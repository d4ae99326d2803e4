"""What the SQL boundary's checks cost a single send, resolved to a few
microseconds: the producer's own append statement (one message) on an owner
connection and on an application role's connection, alternating call by call
in one process, so that whatever slows the machine down weighs on every side
alike; next to it, the PostgreSQL reference measured the same way: a plain
one-row INSERT on each connection.

    python bench/permission_overhead.py [--dsn DSN] [--calls 4000]
        [--base-revision 0014] [--sync-commit] [--try-sql FILE]

``--dsn`` names a role that may CREATE DATABASE and CREATE ROLE (default: the
local PostgreSQL); the benchmark makes a database ``txnq_permission_bench``
(dropped at the end) and a LOGIN role ``txnq_bench_app`` in ``txnq_client``
with 'admin' on the topic prefix ``bench-``, as docs/security.md sets up an
application.

``--base-revision REV`` adds a second database migrated only to REV by the
same migrations (0014: the schema before the SQL boundary of revision 0015,
whose application roles wrote the tables directly and whose append checked
neither arguments nor permissions), with an owner and a role side of its own,
interleaved with the others: the last rows then say what head costs per call
against REV, and as a share of a whole call.

Commits are asynchronous (``synchronous_commit = off``) unless
``--sync-commit``: the fsync of a commit varies more on a small machine than
the few microseconds measured here (docs/benchmarks.md); with it, the shares
are those of a single send as an application sees it. ``--try-sql FILE``
runs an SQL file (as the owner) on head's database once it is migrated: a
function body measured before it becomes a revision.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass
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

#: What a client of the base revision sends (0014's append_positional and
#: register_producer); head's come from txnq.database.queries.
BASE_APPEND = (
    "SELECT entry_offset, publish_time, duplicate, roll_entry_log"
    "  FROM txnq.append_v3(%s, %s, %s, %s, %s, %b, %b, %s::text[]::jsonb[], %s, %s, %s)"
)
BASE_REGISTER = "SELECT producer_id, epoch FROM txnq.register_producer_v1(%s, %s) LIMIT 1"
HEAD_REGISTER = "SELECT producer_id, epoch FROM txnq.register_producer_v2(%s, %s) LIMIT 1"
BASE_CREATE_TOPIC = "SELECT txnq.create_topic_v1(%s, 1, -1, -1, NULL, 5242880)"


def _dsn_for(dsn: str, dbname: str, user: str | None = None) -> str:
    params: dict[str, Any] = {"dbname": dbname}
    if user is not None:
        params["user"] = user
        params["password"] = None
    return psycopg.conninfo.make_conninfo(libpq_dsn(dsn), **params)


def _create_database(server: str, name: str) -> str:
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        exists = conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (ROLE,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(ROLE)))
    return _dsn_for(server, name)


def _grant_role(owner: str) -> None:
    """The role in txnq_client, with a raw table of its own for the reference."""
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


def _prepare(server: str, try_sql: str | None) -> str:
    """Head's database, migrated, with its topic, role and grant."""
    owner = _create_database(server, DATABASE)
    upgrade(owner)
    if try_sql is not None:
        with (
            open(try_sql, encoding="utf-8") as file,
            psycopg.connect(owner, autocommit=True) as conn,
        ):
            conn.execute(file.read())  # a developer's own file, on a scratch database
    _grant_role(owner)
    client = txnq.Client(owner)
    try:
        client.admin.create_topic(TOPIC, partitions=1)
        client.admin.grant(ROLE, prefix="bench-", actions="admin")
    finally:
        client.close()
    return owner


def _prepare_base(server: str, revision: str) -> str:
    """A database at ``revision`` with the same topic; its role writes through
    txnq_client's table grants, as before revision 0015."""
    owner = _create_database(server, f"{DATABASE}_base")
    upgrade(owner, revision)
    _grant_role(owner)
    with psycopg.connect(owner, autocommit=True) as conn:
        conn.execute(BASE_CREATE_TOPIC, (TOPIC,))
    return owner


@dataclass
class Side:
    """One connection, the producer registered on it, and its two timings."""

    label: str
    conn: psycopg.Connection[Any]
    append_query: str
    topic_id: int
    producer_id: int
    epoch: int
    sequence: int = 0
    append_seconds: float = 0.0
    insert_seconds: float = 0.0

    @classmethod
    def open(cls, label: str, dsn: str, owner: str, base: bool, sync_commit: bool) -> Side:
        with psycopg.connect(owner, autocommit=True) as conn:
            row = conn.execute("SELECT topic_id FROM txnq.topics WHERE name = %s", (TOPIC,))
            topic_id = int(row.fetchone()[0])  # type: ignore[index]
        conn = psycopg.connect(dsn, autocommit=True)
        if not sync_commit:
            conn.execute("SET synchronous_commit = off")
        row = conn.execute(
            BASE_REGISTER if base else HEAD_REGISTER,
            (topic_id, f"bench-{os.getpid()}-{label.replace(' ', '-')}"),
        ).fetchone()
        assert row is not None
        query = BASE_APPEND if base else QUERIES["append_positional"]
        return cls(label, conn, query, topic_id, int(row[0]), int(row[1]))

    def append(self) -> None:
        params = (self.topic_id, 0, self.producer_id, self.epoch, self.sequence, [b"x"])
        start = time.perf_counter()
        self.conn.execute(self.append_query, (*params, None, None, None, None, None), prepare=True)
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


def _run(sides: list[Side], calls: int) -> None:
    for _ in range(200):  # prepared statements, caches
        for side in sides:
            side.append()
            side.insert()
    for side in sides:
        side.append_seconds = side.insert_seconds = 0.0
    for i in range(calls):
        # Every side goes first as often as last.
        for side in sides if i % 2 == 0 else reversed(sides):
            side.append()
            side.insert()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dsn",
        default=os.environ.get("TXNQ_DSN", "postgresql://postgres@127.0.0.1:5432/postgres"),
    )
    parser.add_argument("--calls", type=int, default=4000)
    parser.add_argument(
        "--base-revision", metavar="REV", help="also measure a database at revision REV"
    )
    parser.add_argument("--sync-commit", action="store_true", help="commit synchronously")
    parser.add_argument("--try-sql", metavar="FILE", help="SQL to run on head's database first")
    args = parser.parse_args()
    if args.calls < 100:
        parser.error("--calls must be at least 100")

    databases = [DATABASE] + ([f"{DATABASE}_base"] if args.base_revision else [])
    try:
        head = _prepare(args.dsn, args.try_sql)
        role = _dsn_for(args.dsn, DATABASE, ROLE)
        targets = [("owner", head, head, False), ("role", role, head, False)]
        if args.base_revision:
            base = _prepare_base(args.dsn, args.base_revision)
            base_role = _dsn_for(args.dsn, f"{DATABASE}_base", ROLE)
            targets += [("base owner", base, base, True), ("base role", base_role, base, True)]
        sides = [Side.open(*target, sync_commit=args.sync_commit) for target in targets]
        _run(sides, args.calls)
        for side in sides:
            side.conn.close()
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as conn:
            for name in databases:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )

    def micros(seconds: float) -> float:
        return seconds / args.calls * 1e6

    commit = "synchronous" if args.sync_commit else "asynchronous"
    print(f"bench/permission_overhead.py: {args.calls} calls each, alternating, {commit} commit")
    by_label = {side.label: side for side in sides}
    owner, role = by_label["owner"], by_label["role"]
    print(f"{'per call (us)':<40}{'owner':>10}{'role':>10}{'role extra':>12}")
    for name, attr in (("raw one-row INSERT", "insert_seconds"), ("txnq append", "append_seconds")):
        a, b = micros(getattr(owner, attr)), micros(getattr(role, attr))
        print(f"{name:<40}{a:>10.1f}{b:>10.1f}{b - a:>12.1f}")
    if args.base_revision:
        print(f"\nagainst revision {args.base_revision}, per append call:")
        print(f"{'':<16}{'base (us)':>12}{'head (us)':>12}{'head extra':>12}{'base/head':>12}")
        for label in ("owner", "role"):
            a = micros(by_label[f"base {label}"].append_seconds)
            b = micros(by_label[label].append_seconds)
            print(f"{label:<16}{a:>12.1f}{b:>12.1f}{b - a:>12.1f}{a / b:>12.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
