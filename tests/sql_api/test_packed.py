"""append_packed_v1 and fetch_packed_v1 (revision 0028): append_v5 and
fetch_v4 in the encoding a cluster proxy's hop to a shard uses
(docs/cluster.md). Called directly they are those functions in another
encoding: the same entries, results and errors, their own argument checks
(TQ005), nothing written when they refuse."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from txnq.database.arrays import ByteaArray

PACKED_APPEND = (
    "SELECT entry_offset, publish_time, duplicate FROM txnq.append_packed_v1("
    "%s, 0, NULL, NULL, NULL, %s::bytea, %s::integer[], %s::bytea[], %s::jsonb[], "
    "%s::timestamptz[])"
)
FETCH = (
    "SELECT entry_offset, publish_time, producer_id, first_sequence, message_count, payloads, "
    "keys, properties, event_times, acked_batch_indexes "
    "FROM txnq.fetch_v4(%s, 0, %s, -1, 100, 8388608, false)"
)
FETCH_PACKED = (
    "SELECT entry_offset, publish_time_us, producer_id, first_sequence, message_count, "
    "payload_bytes, payload_lengths, keys, properties, event_times, acked_batch_indexes "
    "FROM txnq.fetch_packed_v1(%s, 0, %s, -1, 100, 8388608, false)"
)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@pytest.fixture
def conn(dsn: str) -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        yield conn


@pytest.fixture
def topic(conn: psycopg.Connection[Any]) -> tuple[int, int]:
    """A 1-partition topic (max message 1024 bytes) and an exclusive subscription."""
    row = conn.execute("SELECT txnq.create_topic_v2('packed', 1, 0, 0, NULL, 1024)").fetchone()
    assert row is not None
    topic_id = int(row[0])
    row = conn.execute(
        "SELECT txnq.subscribe_v1(%s, 'packed', 'exclusive', 'read_committed', 'earliest')",
        (topic_id,),
    ).fetchone()
    assert row is not None
    return topic_id, int(row[0])


def entries(conn: psycopg.Connection[Any], topic_id: int) -> int:
    row = conn.execute(
        "SELECT next_offset FROM txnq.partitions WHERE topic_id = %s AND partition = 0",
        (topic_id,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_packed_append_is_the_append_of_its_payloads(
    conn: psycopg.Connection[Any], topic: tuple[int, int]
) -> None:
    topic_id, subscription_id = topic
    payloads = [b"", b"a", b"\x00\xff" * 7, b"x" * 1024, b"\\x41"]
    keys = ByteaArray([None, b"k", None, b"\x00", b"k"])
    properties = [None, '{"a": "1"}', None, None, "{}"]
    event_times = [None, datetime(2024, 1, 1, tzinfo=UTC), None, None, None]
    row = conn.execute(
        PACKED_APPEND,
        (topic_id, b"".join(payloads), [len(p) for p in payloads], keys, properties, event_times),
    ).fetchone()
    assert row is not None and row[0] == 0 and row[2] is False
    conn.execute(
        "SELECT * FROM txnq.append_v5(%s, 0, NULL, NULL, NULL, %s)",
        (topic_id, ByteaArray([b"second", b"entry"])),
    )
    fetched = conn.execute(FETCH, (topic_id, subscription_id)).fetchall()
    assert [bytes(p) for p in fetched[0][5]] == payloads
    assert [None if k is None else bytes(k) for k in fetched[0][6]] == list(keys)
    assert fetched[0][7][1] == {"a": "1"} and fetched[0][8][1] == event_times[1]
    assert fetched[0][1] == row[1]

    packed = conn.execute(FETCH_PACKED, (topic_id, subscription_id)).fetchall()
    assert len(packed) == len(fetched) == 2
    for plain, pack in zip(fetched, packed, strict=True):
        assert pack[0] == plain[0] and pack[2:5] == plain[2:5]
        # The publish time in microseconds, exactly.
        assert EPOCH + timedelta(microseconds=pack[1]) == plain[1]
        lengths = [int(n) for n in pack[6].strip("{}").split(",")]
        data, start = bytes(pack[5]), 0
        unpacked = []
        for length in lengths:
            unpacked.append(data[start : start + length])
            start += length
        assert start == len(data) and unpacked == [bytes(p) for p in plain[5]]
        # Keys, properties, event times and acked indexes as text: the same arrays.
        for column, cast in ((7, "bytea[]"), (8, "jsonb[]"), (9, "timestamptz[]"), (10, "int[]")):
            again = conn.execute(f"SELECT %s::{cast}", (pack[column],)).fetchone()
            assert again is not None and again[0] == plain[column - 1]
    assert packed[1][7] is None and packed[1][8] is None


@pytest.mark.parametrize(
    ("payload_bytes", "lengths"),
    [
        (None, [1]),
        (b"a", None),
        (b"a", []),
        (b"ab", [[1], [1]]),
        (b"ab", [1, None]),
        (b"ab", [3, -2]),
        (b"ab", [1]),
        (b"ab", [1, 2]),
        (b"a", [-1]),  # a NULL payload: append_v5's own refusal
        (b"a" * 1025, [1025]),  # too large: append_v5's TQ004
    ],
    ids=[
        "no-bytes",
        "no-lengths",
        "empty-lengths",
        "2d-lengths",
        "null-length",
        "below-minus-one",
        "short",
        "long",
        "null-payload",
        "too-large",
    ],
)
def test_a_packed_append_refuses_bad_packing_with_tq_codes_and_writes_nothing(
    conn: psycopg.Connection[Any], topic: tuple[int, int], payload_bytes: Any, lengths: Any
) -> None:
    topic_id, _ = topic
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(PACKED_APPEND, (topic_id, payload_bytes, lengths, None, None, None))
    assert caught.value.sqlstate in ("TQ004", "TQ005")
    assert entries(conn, topic_id) == 0


def test_lengths_indexed_from_elsewhere_are_refused(
    conn: psycopg.Connection[Any], topic: tuple[int, int]
) -> None:
    topic_id, _ = topic
    with pytest.raises(psycopg.Error) as caught:
        conn.execute(
            "SELECT * FROM txnq.append_packed_v1(%s, 0, NULL, NULL, NULL, 'ab', '[0:1]={1,1}')",
            (topic_id,),
        )
    assert caught.value.sqlstate == "TQ005"
    assert entries(conn, topic_id) == 0


def test_a_packed_fetch_has_fetch_v4s_errors(
    conn: psycopg.Connection[Any], topic: tuple[int, int]
) -> None:
    topic_id, _ = topic
    for args, sqlstate in (((999, 1), "TQ001"), ((topic_id, 999_999), "TQ006")):
        with pytest.raises(psycopg.Error) as caught:
            conn.execute(FETCH_PACKED, args).fetchall()
        assert caught.value.sqlstate == sqlstate
