"""What the data-path tests share: looking into the database with plain SQL,
and waiting for a condition or for messages with a deadline (never a bare sleep).
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

import psycopg
from psycopg import sql as pgsql
from psycopg.conninfo import make_conninfo
from txnq.workers.coordinator import CoordinatorWorker

from txnq import Consumer, Message

T = TypeVar("T")


def sql(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    """Run one statement in its own autocommit connection; its rows (or [])."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        cur = conn.execute(query, params)
        return cur.fetchall() if cur.description else []


def sql_value(dsn: str, query: str, params: Any = None) -> Any:
    """The first column of the first row of one statement."""
    rows = sql(dsn, query, params)
    assert rows, f"no row from {query!r}"
    return rows[0][0]


def expire_transaction(dsn: str, txn_id: tuple[int, int]) -> None:
    """Move a transaction's timeout into the past, as if it had run too long."""
    sql(
        dsn,
        "UPDATE txnq.transactions SET timeout_at = now() - interval '1 s' "
        "WHERE tc_id = %s AND txn_seq = %s",
        tuple(txn_id),
    )


def databases(dsn: str) -> list[str]:
    """The databases that hold the txnq tables behind ``dsn``: ``dsn`` itself,
    or, when ``dsn`` is a cluster's proxy (the cluster pass,
    tests/cluster_pass.py), every shard's database in shard order. Every
    shard holds every topic's metadata (topics, head rows, subscriptions,
    cursors, producers) and a partition's entries only on its owner."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT to_regclass('txnq_cluster.shards') IS NOT NULL").fetchone()
        if row is None or not row[0]:
            return [dsn]
        return [
            str(r[0]) for r in conn.execute("SELECT dsn FROM txnq_cluster.shards ORDER BY shard")
        ]


def through_proxy(dsn: str) -> bool:
    """Whether ``dsn`` is a cluster's proxy (the cluster pass)."""
    return databases(dsn) != [dsn]


def partition_database(dsn: str, topic: str, partition: int = 0) -> str:
    """The database that holds ``topic``'s ``partition``: its entries, ledgers,
    cursor position and individual acks. ``dsn`` itself, or through a
    cluster's proxy the shard that owns the partition (txnq_cluster.shard_of)."""
    shards = databases(dsn)
    if shards == [dsn]:
        return dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT txnq_cluster.shard_of(t.topic_id, %s) FROM txnq.topic_by_name_v1(%s) t",
            (partition, topic),
        ).fetchone()
    assert row is not None, f"no topic {topic!r} behind {dsn}"
    return shards[int(row[0])]


def sql_everywhere(dsn: str, query: str, params: Any = None) -> list[list[tuple[Any, ...]]]:
    """One statement's rows on each of :func:`databases`: metadata that every
    shard of a cluster holds alike reads the same on each."""
    return [sql(database, query, params) for database in databases(dsn)]


def sql_union(dsn: str, query: str, params: Any = None) -> list[tuple[Any, ...]]:
    """One statement's rows on each of :func:`databases`, one after the other:
    what a cluster holds once (entries, messages), each on its owner shard."""
    return [row for database in databases(dsn) for row in sql(database, query, params)]


def sql_total(dsn: str, query: str, params: Any = None) -> int:
    """The sum of a count (the first column of the first row) over
    :func:`databases`: what a cluster holds once, on one shard or another."""
    return sum(int(sql_value(database, query, params)) for database in databases(dsn))


def wait_until(
    condition: Callable[[], T | None], timeout: float = 5.0, what: str = "condition"
) -> T:
    """Poll ``condition`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} not met within {timeout}s (last value: {value!r})")
        time.sleep(0.02)


def receive_messages(consumer: Consumer, count: int, timeout: float = 5.0) -> list[Message]:
    """Exactly ``count`` messages, received within ``timeout`` seconds overall."""
    deadline = time.monotonic() + timeout
    messages: list[Message] = []
    while len(messages) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        message = consumer.receive(timeout=remaining)
        if message is not None:
            messages.append(message)
    assert len(messages) == count, (
        f"received {len(messages)} of {count} messages within {timeout}s: "
        f"{[str(m.message_id) for m in messages]}"
    )
    return messages


def assert_nothing_more(consumer: Consumer, timeout: float = 0.5) -> None:
    """No further message arrives within ``timeout`` seconds."""
    extra = consumer.receive(timeout=timeout)
    assert extra is None, f"unexpected message {extra!r}"


@contextmanager
def running_coordinator(dsn: str) -> Iterator[CoordinatorWorker]:
    """A coordinator worker running in a thread of the test (finishes timed-out
    transactions), stopped when the block ends."""
    coordinator = CoordinatorWorker(dsn, poll_interval=0.2, grace_seconds=0.0)
    stop = threading.Event()
    thread = threading.Thread(target=coordinator.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield coordinator
    finally:
        stop.set()
        thread.join(timeout=10)


def drop_role(dsn: str, name: str) -> None:
    """End the role's sessions, then drop it (if it exists): a test's own LOGIN role."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
            (name,),
        )
        conn.execute(pgsql.SQL("DROP ROLE IF EXISTS {}").format(pgsql.Identifier(name)))


@dataclass(frozen=True)
class Login:
    """A LOGIN role made for one test: its name and a DSN that logs in as it."""

    name: str
    dsn: str


def dsn_as_user(dsn: str, user: str, password: str) -> str:
    """``dsn`` with another user and password (a URL stays a URL)."""
    parts = urlsplit(dsn)
    if parts.scheme in ("postgresql", "postgres"):
        host = parts.netloc.rsplit("@", 1)[-1]
        return urlunsplit(
            parts._replace(netloc=f"{quote(user, safe='')}:{quote(password, safe='')}@{host}")
        )
    return make_conninfo(dsn, user=user, password=password)


def console_caller(url: str) -> Callable[..., tuple[int, Any]]:
    """A call of the web console's API at ``url``: (status, JSON body); a
    body is POSTed with the header actions need."""

    def call(path: str, body: object = None, *, header: bool = True) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(url + path.lstrip("/"), data=data)
        if data is not None:
            request.add_header("content-type", "application/json")
            if header:
                request.add_header("x-txnq-console", "1")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read())

    return call
