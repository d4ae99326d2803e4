"""Key_shared order when a claim meets a claim row another transaction holds
locked (docs/subscriptions.md, Limits): the interleaving is arranged with one
connection per party, so it is the same on every run.

The parties: consumer ``x`` claimed the key's first message and its lease ran
out (its process hung); it closes now and releases its claims
(``release_claims_v2(sub, x)``), while another consumer's heartbeat sweeps
the claims of dead consumers (``release_claims_v2(sub, NULL)``) and consumer
``y``, the key's owner now, claims. The sweep saw the message held by the
dead ``x``, waited for the close to commit, then found it released already
and left it alone -- but PostgreSQL keeps the row lock such an UPDATE took
for its recheck until the sweep's transaction ends. claim_v4 picked the
waiting messages with FOR UPDATE SKIP LOCKED, so it passed over the key's
first message and handed out the second one; claim_v5 (revision 0021)
stops the key at the locked message, so the second waits for the next claim.
It failed on every run before claim_v5.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import txnq


@pytest.fixture
def client(dsn: str) -> Iterator[txnq.Client]:
    with txnq.Client(dsn) as client:
        yield client


def value(conn: psycopg.Connection[Any], query: str, params: tuple[Any, ...] = ()) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None, query
    return row[0]


def claimed(conn: psycopg.Connection[Any], ids: dict[str, int], consumer: str) -> list[bytes]:
    """One claim_v5 call of ``consumer``: the payloads it hands out, in order."""
    rows = conn.execute(
        "SELECT payload FROM txnq.claim_v5(%s, %s, %s, 10)",
        (ids["topic"], ids["subscription"], ids[consumer]),
    ).fetchall()
    return [bytes(row[0]) for row in rows]


def wait_for_lock_wait(conn: psycopg.Connection[Any], pid: int) -> None:
    """Until backend ``pid`` waits for a lock (bounded: 10 s)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        row = conn.execute(
            "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
        if row is not None and row[0] == "Lock":
            return
        time.sleep(0.02)
    raise AssertionError(f"backend {pid} did not wait for a lock within 10 s")


def test_key_shared_never_hands_out_a_later_message_of_a_key_whose_earlier_one_is_locked(
    dsn: str, client: txnq.Client
) -> None:
    client.admin.create_topic("jobs")
    with client.producer("jobs") as producer:
        producer.send(b"k:0", key="k")
        producer.send(b"k:1", key="k")
    with psycopg.connect(dsn, autocommit=True) as conn:
        ids: dict[str, int] = {}
        ids["topic"] = value(conn, "SELECT topic_id FROM txnq.topics WHERE name = 'jobs'")
        ids["subscription"] = value(
            conn,
            "SELECT txnq.subscribe_v1(%s, 'workers', 'key_shared', 'read_committed', 'earliest')",
            (ids["topic"],),
        )
        register = "SELECT txnq.register_consumer_v2(%s, %s, 0, 60)"
        ids["x"] = value(conn, register, (ids["subscription"], "x"))
        # x, alone on the ring, claims the key's first message ...
        first = conn.execute(
            "SELECT payload FROM txnq.claim_v5(%s, %s, %s, 1)",
            (ids["topic"], ids["subscription"], ids["x"]),
        ).fetchall()
        assert [bytes(r[0]) for r in first] == [b"k:0"]
        ids["y"] = value(conn, register, (ids["subscription"], "y"))
        # ... and its lease runs out: y owns the key now.
        conn.execute(
            "UPDATE txnq.consumers SET lease_expires_at = clock_timestamp() - interval '1 second' "
            "WHERE consumer_id = %s",
            (ids["x"],),
        )
        delivered: list[bytes] = []
        with (
            psycopg.connect(dsn) as claiming,
            psycopg.connect(dsn) as closing,
            psycopg.connect(dsn) as sweeping,
        ):
            # y's claim is in progress (it holds the cursor rows): the key is
            # held by x, so it takes nothing of it.
            delivered += claimed(claiming, ids, "y")
            # x closes: its claim is released (not committed yet).
            closing.execute(
                "SELECT txnq.release_claims_v2(%s, %s)", (ids["subscription"], ids["x"])
            )
            # A heartbeat sweeps dead consumers' claims: it waits for the close.
            swept: list[BaseException] = []

            def sweep() -> None:
                try:
                    sweeping.execute(
                        "SELECT txnq.release_claims_v2(%s, NULL)", (ids["subscription"],)
                    )
                except BaseException as exc:
                    swept.append(exc)

            sweeper = threading.Thread(target=sweep)
            sweeper.start()
            wait_for_lock_wait(conn, sweeping.info.backend_pid)
            closing.commit()
            sweeper.join(timeout=10)
            assert not sweeper.is_alive() and not swept, swept
            claiming.commit()
            # y claims while the sweep's transaction is still open.
            delivered += claimed(conn, ids, "y")
            sweeping.commit()
        delivered += claimed(conn, ids, "y")
        assert delivered == [b"k:0", b"k:1"]
