"""Fuzzing the SQL API with hypothesis (issue 17: the SQL functions are the
boundary, whoever calls them).

Every function of schema txnq that a role other than its owner may execute
(found in pg_proc, so a new function cannot be forgotten) is called with
arguments drawn from valid, edge and hostile values, against a small prepared
world: two topics, partitions, subscriptions of each type, consumers, a
producer, open, decided, committed and aborted transactions, messages with a
batch entry, individual and pending acks, claims, a delayed message, a
deleted ledger, entry logs in every state (dropped, sealed, active, and two
compactions in progress: one partly copied, one caught up and ready for its
swap), a two-phase-commit sink's prepared transaction, Spark ingestions (one
with a committed run and a plan pending, one new) and per-topic grants.
No function is left out: the ones whose answer depends on the calling role
(grants, listings, txn_find_hanging_v1) are fuzzed as the owner, a superuser
and so a txnq admin; what each role may do is tests/sql_api/test_permissions.py's.

Each call runs in its own PostgreSQL transaction on an autocommit connection
as the database owner, followed by ``SET CONSTRAINTS ALL IMMEDIATE`` (so what
an application transaction stages is published as at its COMMIT), and is
rolled back afterwards: the world never changes, and every failure replays as
itself from the SQL printed in the report. A call must either

- fail with a SQLSTATE of class TQ (and leave the database's fingerprint and
  the session's state as they were), or
- succeed with the invariants intact (:data:`INVARIANTS`): offsets gapless per
  partition, nothing acknowledged, claimed or pending that was never appended
  (offsets below the head, batch indexes within the entry's batch), mark-delete
  and max read offsets never past the head, ledgers contiguous, and what is
  stored readable (timestamps Python and Spark can represent, properties that
  are JSON objects of strings, topic policies finite and at most 100 years),
  and an ingestion's committed and planned positions within what its topic's
  readers can read (never past a max read offset, a plan never behind the
  committed position).

Strategies never look at the database: ids are drawn from the world's fixed
names (:class:`W`), resolved when the call is made; derandomized, so a run
draws the same calls every time. Failures are collected per function and kind
(raw SQLSTATE, broken invariant) and reported together, each with the first
call that showed it, rather than raised at the first one, so one run lists
every defect.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from psycopg import sql

from tests.conftest import _drop_database, dsn_for_database
from tests.fuzz_support import fingerprint_columns

#: Examples per function: a base, and more for each argument (a bad value is
#: mostly tried one argument at a time). About 120 functions of 4 arguments
#: on average, some 7800 calls: the whole file runs in about 40 s on a loaded
#: two-core machine, well under two minutes.
EXAMPLES_BASE = 10
EXAMPLES_PER_ARGUMENT = 15
#: A call that takes longer is reported (57014) instead of holding the run.
STATEMENT_TIMEOUT = "10s"

# -- the prepared world ------------------------------------------------------------


@dataclass(frozen=True)
class W:
    """An id of the prepared world, by name (resolved when the call is made)."""

    name: str


@dataclass(frozen=True)
class Expr:
    """An argument written as a SQL expression (huge values stay short in the report)."""

    text: str


def build_world(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Prepare the world with the SQL API itself; returns its ids by name."""

    def one(query: str, *params: Any) -> Any:
        row = conn.execute(query, params).fetchone()
        assert row is not None, query
        return row[0] if len(row) == 1 else row

    w: dict[str, Any] = {}
    # Entry log 1 is rolled over empty and dropped as GC does; the world's
    # entries go to log 2 (sealed later) and log 3 (active).
    w["log_dropped"] = one("SELECT active_entry_log_id FROM txnq.config")
    one("SELECT txnq.roll_entry_log_v1(true)")
    conn.execute("ALTER TABLE txnq.entries DETACH PARTITION txnq.entries_000001")
    conn.execute("DROP TABLE txnq.entries_000001")
    conn.execute(
        "UPDATE txnq.entry_logs SET state = 'DROPPED', dropped_at = now() WHERE entry_log_id = %s",
        (w["log_dropped"],),
    )

    w["topic_a"] = one("SELECT txnq.create_topic_v1('fz-a', 2, -1, -1, NULL, 1048576)")
    w["topic_b"] = one("SELECT txnq.create_topic_v1('fz-b', 1, 0, 0, 3600, 1048576)")
    w["topic_gone"] = one("SELECT txnq.create_topic_v1('fz-gone', 1, -1, -1, NULL, 1048576)")
    one("SELECT count(*) FROM txnq.delete_topic_v1(%s, true)", w["topic_gone"])
    for name, topic, kind, isolation in [
        ("sub_a_ex", "topic_a", "exclusive", "read_committed"),
        ("sub_a_fo", "topic_a", "failover", "read_committed"),
        ("sub_a_sh", "topic_a", "shared", "read_committed"),
        ("sub_a_ks", "topic_a", "key_shared", "read_committed"),
        ("sub_a_ru", "topic_a", "exclusive", "read_uncommitted"),
        ("sub_b_ex", "topic_b", "exclusive", "read_committed"),
        ("sub_b_sh", "topic_b", "shared", "read_committed"),
    ]:
        w[name] = one(
            "SELECT txnq.subscribe_v1(%s, %s, %s, %s, 'earliest')",
            w[topic],
            name,
            kind,
            isolation,
        )
    for name, sub in [("consumer_ex", "sub_a_ex"), ("consumer_sh", "sub_a_sh")]:
        w[name] = one("SELECT txnq.register_consumer_v1(%s, %s, 0, 3600)", w[sub], name)
    w["consumer_ks"] = one("SELECT txnq.register_consumer_v1(%s, 'ks', 0, 3600)", w["sub_a_ks"])
    w["consumer_fo"] = one("SELECT txnq.register_consumer_v1(%s, 'fo', 1, 3600)", w["sub_a_fo"])

    producer_id, epoch, _partition, _last = one(
        "SELECT * FROM txnq.register_producer_v1(%s, 'fz-producer') WHERE partition = 0",
        w["topic_a"],
    )
    w["producer"], w["producer_epoch"] = producer_id, epoch
    append = (
        "SELECT entry_offset FROM txnq.append_v3(%s, %s, %s, %s, %s, %s::bytea[], %s::bytea[],"
        " %s::jsonb[], %s::timestamptz[], %s, %s)"
    )
    # Topic a, partition 0: a batch entry of three messages (idempotent
    # producer, sequences 0..2), then one message (sequence 3).
    one(
        append,
        w["topic_a"],
        0,
        producer_id,
        epoch,
        0,
        [b"a0-0", b"a0-1", b"a0-2"],
        [b"k1", b"k2", None],
        ['{"n": "0"}', None, '{"n": "2"}'],
        ["2024-01-01 00:00:00+00", None, "2024-01-02 00:00:00+00"],
        None,
        None,
    )
    one(append, w["topic_a"], 0, producer_id, epoch, 3, [b"a0-3"], None, None, None, None, None)
    # Partition 1 and topic b: messages without idempotence.
    for payload in (b"a1-0", b"a1-1"):
        one(append, w["topic_a"], 1, None, None, None, [payload], None, None, None, None, None)
    for payload in (b"b-0", b"b-1"):
        one(append, w["topic_b"], 0, None, None, None, [payload], None, None, None, None, None)
    # Topic b's first ledger closes after offset 1; b's subscriptions consume
    # it and retention (0/0: as soon as consumed) deletes it.
    one("SELECT txnq.roll_ledger_v1(%s, 0, 1)", w["topic_b"])
    one("SELECT txnq.ack_v2(%s, 0, %s, 1)", w["topic_b"], w["sub_b_ex"])
    one("SELECT txnq.ack_v2(%s, 0, %s, 1)", w["topic_b"], w["sub_b_sh"])
    one("SELECT count(*) FROM txnq.apply_retention_v1(%s)", w["topic_b"])

    def open_txn(name: str, tc: int, timeout: float = 600) -> None:
        w[f"{name}_tc"], w[f"{name}_seq"] = one(
            "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(%s, %s)", tc, timeout
        )

    def txn(name: str) -> tuple[Any, Any]:
        return w[f"{name}_tc"], w[f"{name}_seq"]

    # Committed: produced to a/1 and b/0, acknowledged a/0's single message on
    # the exclusive subscription.
    open_txn("committed", 0)
    one(append, w["topic_a"], 1, None, None, None, [b"c-a1"], None, None, None, *txn("committed"))
    one(append, w["topic_b"], 0, None, None, None, [b"c-b0"], None, None, None, *txn("committed"))
    one(
        "SELECT txnq.ack_v2(%s, 0, %s, NULL, ARRAY[1::bigint], ARRAY[-1], ARRAY[1],"
        " NULL, NULL, %s, %s)",
        w["topic_a"],
        w["sub_a_fo"],
        *txn("committed"),
    )
    one("SELECT state FROM txnq.end_txn_v1(%s, %s, true)", *txn("committed"))
    one("SELECT txnq.complete_txn_v1(%s, %s)", *txn("committed"))
    # Aborted: produced to a/0.
    open_txn("aborted", 1)
    one(append, w["topic_a"], 0, None, None, None, [b"x-a0"], None, None, None, *txn("aborted"))
    one("SELECT state FROM txnq.end_txn_v1(%s, %s, false)", *txn("aborted"))
    one("SELECT txnq.complete_txn_v1(%s, %s)", *txn("aborted"))
    # Decided, marker phase not run (what a coordinator worker finishes).
    open_txn("committing", 2)
    one(append, w["topic_b"], 0, None, None, None, [b"k-b0"], None, None, None, *txn("committing"))
    one(
        "SELECT txnq.ack_v2(%s, 1, %s, 0, '{}', '{}', '{}', NULL, NULL, %s, %s)",
        w["topic_a"],
        w["sub_a_ru"],
        *txn("committing"),
    )
    one("SELECT state FROM txnq.end_txn_v1(%s, %s, true)", *txn("committing"))
    # Open, bound to a transactional id: produced to a/1 (holding its max read
    # offset back) and pending-acked message 1 of a/0's batch entry.
    w["transactional_id"] = "fz-tid"
    w["transactional_epoch"] = one("SELECT epoch FROM txnq.init_transactional_id_v1('fz-tid')")
    open_txn("open", 3)
    one("SELECT txnq.bind_txn_v1(%s, %s, 'fz-tid', %s)", *txn("open"), w["transactional_epoch"])
    one(append, w["topic_a"], 1, None, None, None, [b"o-a1"], None, None, None, *txn("open"))
    one(
        "SELECT txnq.ack_v2(%s, 0, %s, NULL, ARRAY[0::bigint], ARRAY[1], ARRAY[3],"
        " NULL, NULL, %s, %s)",
        w["topic_a"],
        w["sub_a_ex"],
        *txn("open"),
    )
    # Open, nothing in it yet.
    open_txn("empty", 4)
    # A two-phase-commit sink of the transactional id began the empty
    # transaction and prepared it for checkpoint 1 (the open one is a sink's
    # to begin).
    one("SELECT txnq.sink_begin_v1('fz-tid', %s, %s)", *txn("empty"))
    one("SELECT count(*) FROM txnq.sink_prepare_v1('fz-tid', %s, %s, 1)", *txn("empty"))

    # Individual acks outside a transaction: message 0 of the batch entry.
    one(
        "SELECT txnq.ack_v2(%s, 0, %s, NULL, ARRAY[0::bigint], ARRAY[0], ARRAY[3])",
        w["topic_a"],
        w["sub_a_ex"],
    )
    # Shared: claims, one acknowledged, one negatively acknowledged; key_shared claims.
    one("SELECT count(*) FROM txnq.claim_v2(%s, %s, %s, 4, 60)", *_ids(w, "a", "sh"))
    one(
        "SELECT txnq.ack_shared_v3(%s, 0, %s, ARRAY[0::bigint], ARRAY[1])",
        w["topic_a"],
        w["sub_a_sh"],
    )
    one(
        "SELECT txnq.nack_shared_v1(%s, 0, %s, %s, ARRAY[0::bigint], ARRAY[2], ARRAY[60.0])",
        w["topic_a"],
        w["sub_a_sh"],
        w["consumer_sh"],
    )
    one("SELECT count(*) FROM txnq.claim_v2(%s, %s, %s, 2, 60)", *_ids(w, "a", "ks"))
    # A delayed message.
    one(
        "SELECT entry_offset FROM txnq.append_delayed_v1(%s, 1, NULL, NULL, NULL,"
        " ARRAY['d-a1']::bytea[], NULL, NULL, NULL, NULL, NULL, now() + interval '1 hour')",
        w["topic_a"],
    )
    # Entry logs 2 and 3 are sealed, 4 takes new entries; 2 is being
    # compacted into 5 (two rows copied so far), 3 into 6 (caught up: ready
    # for the swap).
    w["log_sealed"] = one("SELECT active_entry_log_id FROM txnq.config")
    w["log_sealed_too"] = one("SELECT txnq.roll_entry_log_v1(true)")
    one(append, w["topic_b"], 0, None, None, None, [b"b-late"], None, None, None, None, None)
    w["log_active"] = one("SELECT txnq.roll_entry_log_v1(true)")
    one(append, w["topic_a"], 0, None, None, None, [b"late"], None, None, None, None, None)
    w["log_compacting"] = one("SELECT txnq.compaction_begin_v1(%s)", w["log_sealed"])
    one("SELECT rows FROM txnq.compaction_copy_v1(%s, -1, -1, -1, 2, 1048576)", w["log_compacting"])
    w["log_caught_up"] = one("SELECT txnq.compaction_begin_v1(%s)", w["log_sealed_too"])
    w["caught_up_rows"] = one(
        "SELECT source_rows FROM txnq.compaction_catch_up_v1(%s)", w["log_caught_up"]
    )
    # Spark ingestions: fz-ing committed run 1 and planned run 2 on topic a,
    # fz-ing-idle nothing yet on topic b.
    one("SELECT txnq.spark_ingestion_create_v1('fz-ing', %s)", w["topic_a"])
    one("SELECT count(*) FROM txnq.spark_ingestion_plan_v1('fz-ing', ARRAY[0, 0]::bigint[])")
    one("SELECT count(*) FROM txnq.spark_ingestion_commit_v1('fz-ing', 1)")
    one("SELECT count(*) FROM txnq.spark_ingestion_plan_v1('fz-ing', ARRAY[1, 1]::bigint[])")
    one("SELECT txnq.spark_ingestion_create_v1('fz-ing-idle', %s)", w["topic_b"])
    # Grants: consume on the prefix fz- to txnq_client, produce and admin on
    # fz-a to txnq_reader.
    one("SELECT txnq.grant_topic_permission_v1('txnq_client', 'fz-', true, '{consume}')")
    one("SELECT txnq.grant_topic_permission_v1('txnq_reader', 'fz-a', false, '{produce,admin}')")
    # The last offset of each partition (where its ledger may close).
    for topic, partition in (("a", 0), ("a", 1), ("b", 0)):
        w[f"last_{topic}_{partition}"] = one(
            "SELECT next_offset - 1 FROM txnq.partitions WHERE topic_id = %s AND partition = %s",
            w[f"topic_{topic}"],
            partition,
        )
    return w


def _ids(w: dict[str, Any], topic: str, sub: str) -> tuple[Any, Any, Any]:
    return w[f"topic_{topic}"], w[f"sub_{topic}_{sub}"], w[f"consumer_{sub}"]


# -- values -------------------------------------------------------------------------
#
# Each argument has valid values (the world's ids, in-range numbers) and bad
# ones (NULL, type extremes, NaN and infinities, ids that do not exist or
# belong elsewhere, hostile text, malformed arrays). A call draws how many of
# its arguments are bad (none, one, a few or all) and which: a bad value is
# mostly tried against an otherwise valid call, so it meets the check that
# should catch it rather than an earlier one.


@dataclass(frozen=True)
class Arg:
    valid: st.SearchStrategy[Any]
    bad: st.SearchStrategy[Any]


def values(valid: list[Any], bad: list[Any]) -> Arg:
    return Arg(st.sampled_from(valid), st.sampled_from(bad))


INT4 = [0, 1, -1, 2**31 - 1, -(2**31)]
INT8 = [0, 1, -1, 2**31, 2**63 - 1, -(2**63)]
TOPICS = [W("topic_a"), W("topic_b")]
SUBSCRIPTIONS = [W(f"sub_{s}") for s in ("a_ex", "a_fo", "a_sh", "a_ks", "a_ru", "b_ex", "b_sh")]
CONSUMERS = [W(f"consumer_{c}") for c in ("ex", "sh", "ks", "fo")]
TXNS = ("open", "empty", "committed", "aborted", "committing")
ENTRY_LOGS = [
    W(f"log_{s}") for s in ("dropped", "sealed", "sealed_too", "active", "compacting", "caught_up")
]

topic_ids = values(TOPICS, [*TOPICS, W("topic_gone"), None, 999, *INT4])
partitions = values([0, 1], [2, None, 4096, *INT4])
subscription_ids = values(SUBSCRIPTIONS, [*SUBSCRIPTIONS, None, 999_999, *INT8])
consumer_ids = values(CONSUMERS, [*CONSUMERS, None, 999_999, *INT8])
ENDED = ("committed", "aborted", "committing")
tc_ids = values([W(f"{t}_tc") for t in TXNS], [*(W(f"{t}_tc") for t in ENDED), None, 16, *INT4])
txn_seqs = values([W(f"{t}_seq") for t in TXNS], [None, 999_999, *INT8])
entry_log_ids = values(ENTRY_LOGS, [None, 99, *INT4])
offsets = values([0, 1, 2, 3, 4, 5, 6], [-1, -2, 7, 9, None, *INT8])
counts = values([1, 2, 3, 10, 100], [None, 0, -1, -2, 4096, 4097, *INT4])
byte_counts = values([100, 1 << 20], [None, 0, 1, (1 << 20) + 1, -1, -2, *INT8])
batch_indexes = values([-1, 0, 1, 2], [3, -2, None, 2**31 - 1, -(2**31)])
batch_sizes = values([1, 3], [2, 4, 0, -1, None, 2**31 - 1, -(2**31)])
booleans = values([True, False], [None])
seconds = values(
    [0.001, 1.0, 30.0, 60.0, 3600.0],
    [None, float("nan"), float("inf"), float("-inf"), -1.0, -0.0, 0.0, 5e-324, 1e-9, 1e9, 1e300],
)
timestamps = values(
    [
        "2024-01-01 00:00:00+00",
        "now",
        "epoch",
        "9999-12-31 23:59:59.999999+00",
        "0001-01-01 00:00:00+00",
    ],
    [
        None,
        "infinity",
        "-infinity",
        "10000-01-01 00:00:00+00",
        "0001-12-31 23:59:59+00 BC",
        "4713-01-01 00:00:00+00 BC",
        "294276-12-31 23:59:59+00",
    ],
)
json_values = values(
    [None, '{"a": "1"}', "{}", '{"it\'s": "%s", "\\u00e9": "\\u2713"}'],
    [
        '{"a": 1}',
        '{"a": null}',
        '{"a": true}',
        '{"a": {"b": "c"}}',
        '{"a": ["b"]}',
        "[1, 2]",
        '["a", "b"]',
        "[]",
        '"text"',
        "1",
        "null",
        "true",
    ],
)
HOSTILE_TEXT = [
    None,
    "",
    " ",
    "it's",
    '"quoted"',
    "%s",
    "%",
    "%I %L",
    "\\",
    "x; DROP TABLE txnq.topics; --",
    "new\nline",
    "é✓ü",
    "a" * 200,
    "a" * 201,
    "a" * 300,
]
hostile_texts = st.one_of(
    st.sampled_from(HOSTILE_TEXT),
    st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=300),
)


def names(*valid: str) -> Arg:
    return Arg(st.sampled_from(valid) if valid else hostile_texts, hostile_texts)


def arrays(element: Arg, *specials: Any) -> Arg:
    """Lists of valid elements; bad: lists with bad elements, NULL, a NULL
    element, a two-dimensional array and ``specials`` (huge arrays)."""
    return Arg(
        st.lists(element.valid, min_size=1, max_size=3),
        st.one_of(
            st.lists(st.one_of(element.valid, element.bad), min_size=1, max_size=4),
            st.sampled_from([None, [], [None], *specials]),
        ),
    )


INT_PAIRS = [[0, 1], [2, 3]]
payloads = Arg(
    st.binary(max_size=12),
    st.sampled_from([None, Expr("convert_to(repeat('x', 1048577), 'UTF8')")]),
)
keys = Arg(st.one_of(st.none(), st.binary(max_size=8)), st.sampled_from([b"\x00" * 1000]))

#: Strategies by (argument name, type) as pg_proc declares them. A function
#: whose argument is missing here fails test_every_public_function_is_fuzzed.
ARGUMENTS: dict[tuple[str, str], Arg] = {
    ("p_topic_id", "integer"): topic_ids,
    ("p_after_topic", "integer"): topic_ids,
    ("p_dead_letter_topic_id", "integer"): topic_ids,
    ("p_partition", "integer"): partitions,
    ("p_after_partition", "integer"): partitions,
    ("p_partitions", "integer"): counts,
    ("p_partitions", "integer[]"): arrays(partitions, INT_PAIRS),
    ("p_subscription_id", "bigint"): subscription_ids,
    ("p_consumer_id", "bigint"): consumer_ids,
    ("p_except_consumer_id", "bigint"): consumer_ids,
    ("p_owners", "bigint[]"): arrays(consumer_ids),
    ("p_producer_id", "bigint"): values([W("producer"), None], [999_999, *INT8]),
    ("p_producer_epoch", "integer"): values([W("producer_epoch"), None], [999, *INT4]),
    ("p_epoch", "integer"): values([W("transactional_epoch")], [None, 999, *INT4]),
    ("p_first_sequence", "bigint"): offsets,
    ("p_count", "integer"): counts,
    ("p_tc_id", "integer"): tc_ids,
    ("p_txn_tc", "integer"): tc_ids,
    ("p_txn_seq", "bigint"): txn_seqs,
    ("p_commit", "boolean"): booleans,
    ("p_notify", "boolean"): booleans,
    ("p_unflushed", "boolean"): booleans,
    ("p_decided", "boolean"): booleans,
    ("p_force", "boolean"): booleans,
    ("p_from_mark_delete", "boolean"): booleans,
    ("p_hand_out", "boolean"): booleans,
    ("p_nullable", "boolean"): booleans,
    ("p_reason", "text"): names("client", "admin"),
    # Transactions across a cluster's shards (cluster_*_txn*, revision 0029).
    ("p_timeout_at", "timestamp with time zone"): timestamps,
    ("p_veto", "text"): names("timeout", "crash", "ended"),
    ("p_transactional_id", "text"): names("fz-tid", "fz-tid", "fz-other"),
    ("p_name", "text"): names(
        "fz-a", "fz-new", "sub_a_ex", "sub-new", "c-new", "fz-ing", "fz-ing-idle"
    ),
    ("p_topic", "text"): names("fz-a", "fz-b"),
    ("p_subscription_type", "text"): names("exclusive", "failover", "shared", "key_shared"),
    ("p_isolation", "text"): names("read_committed", "read_uncommitted"),
    ("p_initial_position", "text"): names("earliest", "latest"),
    ("p_action", "text"): names("produce", "consume", "admin", "create_topic", "abort_transaction"),
    ("p_target", "text"): names("fz-a", "fz-a/sub_a_ex", "1:7"),
    ("p_details", "jsonb"): json_values,
    ("p_error", "text"): names("", "the topic is busy"),
    ("p_what", "text"): names("the value"),
    ("p_prefix", "text"): names("", "e."),
    ("p_lock_timeout", "text"): Arg(
        st.sampled_from(["2s", "100ms", "1min"]),
        st.one_of(
            hostile_texts,
            st.sampled_from(["0", "-1s", "2147483647", "2147483648", "1e400s", "infinity", "nan"]),
        ),
    ),
    ("p_offset", "bigint"): offsets,
    ("p_after_offset", "bigint"): offsets,
    ("p_entry_offset", "bigint"): offsets,
    ("p_last_offset", "bigint"): Arg(
        st.sampled_from([W("last_a_0"), W("last_a_1"), W("last_b_0")]), offsets.bad
    ),
    ("p_cumulative_offset", "bigint"): Arg(st.sampled_from([None, 0, 1, 2, 3]), offsets.bad),
    ("p_offsets", "bigint[]"): arrays(
        offsets, INT_PAIRS, Expr("array_fill(0::bigint, ARRAY[100000])")
    ),
    ("p_batch_index", "integer"): batch_indexes,
    ("p_cumulative_batch_index", "integer"): Arg(st.none(), batch_indexes.bad),
    ("p_cumulative_batch_size", "integer"): Arg(st.none(), batch_sizes.bad),
    ("p_batch_indexes", "integer[]"): arrays(
        batch_indexes, INT_PAIRS, Expr("array_fill(-1, ARRAY[100000])")
    ),
    ("p_batch_sizes", "integer[]"): arrays(
        batch_sizes, INT_PAIRS, Expr("array_fill(3, ARRAY[100000])")
    ),
    ("p_delivered", "integer[]"): arrays(counts, INT_PAIRS),
    ("p_max_entries", "integer"): counts,
    ("p_max_messages", "integer"): counts,
    ("p_max_count", "integer"): counts,
    ("p_max_rows", "integer"): counts,
    ("p_room", "integer"): counts,
    ("p_priority", "integer"): counts,
    ("p_max_redeliver_count", "integer"): counts,
    ("p_max_message_bytes", "integer"): Arg(st.sampled_from([100, 1 << 20]), counts.bad),
    ("p_hash", "integer"): values([12345, 0, -5], [None, *INT4]),
    ("p_points", "integer[]"): arrays(values([-100, 0, 100], [None, *INT4])),
    ("p_max_bytes", "bigint"): byte_counts,
    ("p_retention_bytes", "bigint"): Arg(st.sampled_from([-1, 0, 1 << 20]), byte_counts.bad),
    ("p_source_rows", "bigint"): values([W("caught_up_rows")], [None, 0, 1, 100, -1, *INT8]),
    ("p_entry_log_id", "integer"): entry_log_ids,
    ("p_source", "integer"): values(
        [W("log_sealed"), W("log_sealed_too")], [*ENTRY_LOGS, None, 99, *INT4]
    ),
    ("p_target", "integer"): values(
        [W("log_compacting"), W("log_caught_up")], [*ENTRY_LOGS, None, 99, *INT4]
    ),
    ("p_timeout_seconds", "double precision"): seconds,
    ("p_lease_seconds", "double precision"): seconds,
    ("p_ack_timeout_seconds", "double precision"): seconds,
    ("p_retention_seconds", "double precision"): Arg(
        st.sampled_from([-1.0, 0.0, 3600.0]), seconds.bad
    ),
    ("p_ttl_seconds", "double precision"): Arg(st.sampled_from([None, 60.0]), seconds.bad),
    ("p_value", "double precision"): seconds,
    ("p_minimum", "double precision"): Arg(st.sampled_from([None, 0.0]), seconds.bad),
    ("p_maximum", "double precision"): Arg(st.sampled_from([None, 100.0]), seconds.bad),
    ("p_delays", "double precision[]"): arrays(
        seconds, Expr("array_fill(1.0::float8, ARRAY[100000])")
    ),
    # seek_v1 takes an offset or a time: mostly no time.
    ("p_time", "timestamp with time zone"): Arg(
        st.sampled_from([None, None, "2024-01-01 00:00:00+00", "now"]), timestamps.bad
    ),
    ("p_hold_until", "timestamp with time zone"): timestamps,
    ("p_deliver_at", "timestamp with time zone"): timestamps,
    ("p_values", "timestamp with time zone[]"): arrays(
        timestamps, Expr("array_fill(now(), ARRAY[100000])")
    ),
    ("p_event_times", "timestamp with time zone[]"): arrays(
        timestamps, Expr("array_fill(now(), ARRAY[100000])")
    ),
    ("p_payload", "bytea"): payloads,
    ("p_payloads", "bytea[]"): arrays(
        payloads, [[b"a", b"b"], [b"c", b"d"]], Expr("array_fill('\\x00'::bytea, ARRAY[100000])")
    ),
    ("p_key", "bytea"): keys,
    # append_packed_v1: payloads concatenated and their lengths (-1: NULL).
    ("p_payload_bytes", "bytea"): Arg(
        st.sampled_from([b"ab", b"abc", b"", b"x"]),
        st.sampled_from([None, b"\x00" * 1000, Expr("convert_to(repeat('x', 1048577), 'UTF8')")]),
    ),
    ("p_payload_lengths", "integer[]"): arrays(
        values([0, 1, 2, 3], [-1, -2, None, 1048577, *INT4]),
        INT_PAIRS,
        Expr("array_fill(1, ARRAY[100000])"),
    ),
    ("p_keys", "bytea[]"): arrays(keys, Expr("array_fill('k'::bytea, ARRAY[100000])")),
    # Per-topic permissions: roles that exist (postgres is an admin), and one
    # that does not (granting to it is refused; revoking is allowed).
    ("p_role", "text"): names("txnq_client", "txnq_reader", "postgres", "fz-nobody"),
    ("p_resource", "text"): names("fz-a", "fz-", "fz-new"),
    ("p_is_prefix", "boolean"): booleans,
    ("p_actions", "text[]"): arrays(
        names("produce", "consume", "admin"), [["produce", "consume"], ["admin", "admin"]]
    ),
    # Coordinator workers.
    ("p_tc_ids", "integer[]"): arrays(values([0, 1, 2, 3, 4, 15], [16, None, *INT4]), INT_PAIRS),
    ("p_owner", "text"): names("fz-worker", "host-1:4242"),
    ("p_grace_seconds", "double precision"): Arg(st.sampled_from([0.0, 1.0, 60.0]), seconds.bad),
    ("p_limit", "integer"): counts,
    # Inspection and topic policies.
    ("p_state", "text"): Arg(
        st.sampled_from([None, "OPEN", "COMMITTING", "ABORTING", "COMMITTED", "ABORTED"]),
        hostile_texts,
    ),
    ("p_older_than", "double precision"): Arg(st.sampled_from([0.0, 60.0]), seconds.bad),
    ("p_clear_ttl", "boolean"): booleans,
    ("p_set_bytes", "boolean"): booleans,
    ("p_set_seconds", "boolean"): booleans,
    ("p_set_policy", "boolean"): booleans,
    ("p_limit_bytes", "bigint"): Arg(st.sampled_from([None, -1, 1 << 20]), byte_counts.bad),
    ("p_limit_seconds", "double precision"): Arg(st.sampled_from([None, -1.0, 60.0]), seconds.bad),
    ("p_policy", "text"): Arg(
        st.sampled_from([None, "producer_hold", "producer_error", "consumer_backlog_eviction"]),
        hostile_texts,
    ),
    # Spark: reads, ingestions (fz-ing has run 1 committed and run 2
    # planned), and the two-phase-commit sink.
    ("p_start_offset", "bigint"): offsets,
    ("p_end_offset", "bigint"): offsets,
    ("p_at", "timestamp with time zone"): timestamps,
    ("p_run", "bigint"): values([1, 2, 3], [None, 0, *INT8]),
    ("p_planned_offsets", "bigint[]"): arrays(
        offsets, INT_PAIRS, Expr("array_fill(0::bigint, ARRAY[100000])")
    ),
    ("p_checkpoint_id", "bigint"): values([1, 2, 100], [None, *INT8]),
    ("p_properties", "jsonb"): json_values,
    ("p_properties", "jsonb[]"): arrays(
        json_values,
        Expr("ARRAY[jsonb_build_object('k', repeat('v', 1048577))]"),
        Expr("ARRAY[(SELECT jsonb_object_agg(i::text, 'x') FROM generate_series(1, 100000) i)]"),
    ),
}

#: Arrays that describe the same messages element by element: the valid ones
#: of a call get the same length.
ALIGNED = [
    ("p_payloads", "p_keys", "p_properties", "p_event_times"),
    ("p_offsets", "p_batch_indexes", "p_batch_sizes", "p_delays", "p_partitions", "p_delivered"),
    ("p_points", "p_owners"),
]
ELEMENTS: dict[str, Arg] = {
    "p_payloads": payloads,
    "p_keys": keys,
    "p_properties": json_values,
    "p_event_times": timestamps,
    "p_offsets": offsets,
    "p_batch_indexes": batch_indexes,
    "p_batch_sizes": batch_sizes,
    "p_delays": seconds,
    "p_partitions": partitions,
    "p_delivered": counts,
    "p_points": values([-100, 0, 100], [None, *INT4]),
    "p_owners": consumer_ids,
}

#: The world's cursors: the valid ids of a call name one of them as a whole
#: (topic, partition, subscription, its consumer), so the call gets past the
#: lookups and reaches the checks behind them.
PLACES = [
    {"p_topic_id": W(f"topic_{t}"), "p_partition": p, "p_subscription_id": W(f"sub_{t}_{s}")}
    | ({"p_consumer_id": W(f"consumer_{s}")} if t == "a" and s in ("ex", "sh", "ks", "fo") else {})
    for t, p, s in [
        ("a", 0, "ex"),
        ("a", 1, "ex"),
        ("a", 0, "fo"),
        ("a", 0, "sh"),
        ("a", 1, "sh"),
        ("a", 0, "ks"),
        ("a", 1, "ru"),
        ("b", 0, "ex"),
        ("b", 0, "sh"),
    ]
]


#: Where the world's transactions wrote and acknowledged: the valid ids of a
#: marker-phase call name one of these as a whole half of the time.
TXN_PLACES = [
    {
        "p_tc_id": W(f"{txn}_tc"),
        "p_txn_seq": W(f"{txn}_seq"),
        "p_topic_id": W(f"topic_{topic}"),
        "p_partition": p,
    }
    | ({"p_subscription_id": W(f"sub_{topic}_{sub}")} if sub else {})
    for txn, topic, p, sub in [
        ("committed", "a", 1, None),
        ("committed", "b", 0, None),
        ("committed", "a", 0, "fo"),
        ("aborted", "a", 0, None),
        ("committing", "b", 0, None),
        ("committing", "a", 1, "ru"),
        ("open", "a", 1, None),
        ("open", "a", 0, "ex"),
    ]
]


@st.composite
def call_arguments(draw: st.DrawFn, arguments: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    names_ = [name for name, _ in arguments]
    how_many = draw(st.sampled_from([0, 0, 0, 1, 1, 1, 1, 2, len(names_)]))
    bad = set(draw(st.permutations(names_))[:how_many])
    chosen = {
        name: draw(ARGUMENTS[(name, kind)].bad if name in bad else ARGUMENTS[(name, kind)].valid)
        for name, kind in arguments
    }

    def valid(*candidates: str) -> list[str]:
        return [name for name in candidates if name in chosen and name not in bad]

    if "p_topic_id" in chosen:
        place = draw(st.sampled_from(PLACES))
        chosen.update({name: place[name] for name in valid(*place)})
    for tc in ("p_tc_id", "p_txn_tc"):
        if tc in chosen:
            # One of the world's transactions, any for the marker phase; for
            # a write into a transaction, an open one or none (an ended one
            # is among the bad values).
            txn = draw(st.sampled_from(["open", "empty", None, None] if tc == "p_txn_tc" else TXNS))
            for name in valid(tc, "p_txn_seq"):
                part = "tc" if name == tc else "seq"
                chosen[name] = W(f"{txn}_{part}") if txn else None
    if "p_tc_id" in chosen and "p_topic_id" in chosen and draw(st.booleans()):
        place = draw(st.sampled_from(TXN_PLACES))
        chosen.update({name: place[name] for name in valid(*place)})
    if {"p_run", "p_planned_offsets"} & chosen.keys():
        # A run of one of the world's ingestions.
        for name in valid("p_name"):
            chosen[name] = draw(st.sampled_from(["fz-ing", "fz-ing-idle"]))
    if "p_producer_id" in chosen:
        # The world's idempotent producer, or none at all (all three NULL).
        idempotent = draw(st.booleans())
        for name in valid("p_producer_id", "p_producer_epoch", "p_first_sequence"):
            if not idempotent:
                chosen[name] = None
            elif name != "p_first_sequence":
                chosen[name] = W(name.removeprefix("p_").replace("_id", ""))
    arrays_ = {name for name, kind in arguments if kind.endswith("[]")}
    for group in ALIGNED:
        size = draw(st.integers(1, 3))
        for name in sorted(arrays_.intersection(group)):
            element = ELEMENTS[name]
            if name not in bad:
                if chosen[name] is not None or draw(st.booleans()):
                    chosen[name] = draw(st.lists(element.valid, min_size=size, max_size=size))
            elif draw(st.booleans()):
                # The right length, with a bad element among valid ones.
                at = draw(st.integers(0, size - 1))
                chosen[name] = [
                    draw(element.bad if i == at else element.valid) for i in range(size)
                ]
    return chosen


# -- invariants ---------------------------------------------------------------------

#: Each query returns one text per violation; all must return nothing.
INVARIANTS = {
    "an entry at or past its partition's head": """
        SELECT format('entry %s:%s:%s, next offset %s', e.topic_id, e.partition, e.entry_offset,
                      h.next_offset)
          FROM txnq.entries e JOIN txnq.partitions h USING (topic_id, partition)
         WHERE e.entry_offset >= h.next_offset OR e.entry_offset < 0""",
    "an offset written twice": """
        SELECT format('entry %s:%s:%s x%s', topic_id, partition, entry_offset, count(*))
          FROM txnq.entries GROUP BY topic_id, partition, entry_offset HAVING count(*) > 1""",
    "a hole in a partition's offsets": """
        SELECT format('%s:%s offset %s of 0..%s missing', h.topic_id, h.partition, o,
                      h.next_offset - 1)
          FROM txnq.partitions h
         CROSS JOIN LATERAL generate_series(0, least(h.next_offset, 100000) - 1) o
         WHERE NOT EXISTS (SELECT 1 FROM txnq.entries e WHERE e.topic_id = h.topic_id
                              AND e.partition = h.partition AND e.entry_offset = o)
           AND NOT EXISTS (SELECT 1 FROM txnq.ledgers l WHERE l.topic_id = h.topic_id
                              AND l.partition = h.partition AND l.state = 'DELETED'
                              AND o BETWEEN l.first_offset AND l.last_offset)""",
    "a head beyond any sensible offset": """
        SELECT format('%s:%s next offset %s', topic_id, partition, next_offset)
          FROM txnq.partitions WHERE next_offset > 100000 OR next_offset < 0""",
    "a max read offset past the head": """
        SELECT format('%s:%s max read offset %s, next offset %s', topic_id, partition,
                      max_read_offset, next_offset)
          FROM txnq.partitions
         WHERE max_read_offset > next_offset - 1 OR max_read_offset < -1""",
    "a mark-delete offset past the head": """
        SELECT format('cursor %s:%s sub %s mark-delete %s, next offset %s', c.topic_id,
                      c.partition, c.subscription_id, c.mark_delete_offset, h.next_offset)
          FROM txnq.cursors c JOIN txnq.partitions h USING (topic_id, partition)
         WHERE c.mark_delete_offset > h.next_offset - 1 OR c.mark_delete_offset < -1""",
    "an individual ack of an offset never appended": """
        SELECT format('%s:%s sub %s offset %s, next offset %s', a.topic_id, a.partition,
                      a.subscription_id, a.entry_offset, h.next_offset)
          FROM txnq.individual_acks a JOIN txnq.partitions h USING (topic_id, partition)
         WHERE a.entry_offset >= h.next_offset OR a.entry_offset < 0""",
    "an individual ack outside its entry's batch": """
        SELECT format('%s:%s sub %s offset %s: batch size %s, acked %s; the entry has %s',
                      a.topic_id, a.partition, a.subscription_id, a.entry_offset, a.batch_size,
                      a.acked_batch_indexes, e.message_count)
          FROM txnq.individual_acks a
          JOIN txnq.entries e USING (topic_id, partition, entry_offset)
         WHERE (e.marker IS NULL AND a.batch_size IS DISTINCT FROM e.message_count)
            OR EXISTS (SELECT 1 FROM unnest(a.acked_batch_indexes) i
                        WHERE i IS NULL OR i < 0 OR i >= e.message_count)""",
    "a pending ack of an offset never appended": """
        SELECT format('%s:%s sub %s offset %s (txn %s:%s), next offset %s', a.topic_id,
                      a.partition, a.subscription_id, a.entry_offset, a.tc_id, a.txn_seq,
                      h.next_offset)
          FROM txnq.pending_acks a JOIN txnq.partitions h USING (topic_id, partition)
         WHERE a.entry_offset >= h.next_offset OR a.entry_offset < 0""",
    "a pending ack outside its entry's batch": """
        SELECT format('%s:%s sub %s offset %s index %s size %s (txn %s:%s); the entry has %s',
                      a.topic_id, a.partition, a.subscription_id, a.entry_offset, a.batch_index,
                      a.batch_size, a.tc_id, a.txn_seq, e.message_count)
          FROM txnq.pending_acks a
          JOIN txnq.entries e USING (topic_id, partition, entry_offset)
         WHERE a.batch_index < -1 OR a.batch_index >= greatest(e.message_count, 1)
            OR (e.marker IS NULL AND a.batch_size <> e.message_count)""",
    "a claim of an offset never appended": """
        SELECT format('%s:%s sub %s offset %s, next offset %s', c.topic_id, c.partition,
                      c.subscription_id, c.entry_offset, h.next_offset)
          FROM txnq.claims c JOIN txnq.partitions h USING (topic_id, partition)
         WHERE c.entry_offset >= h.next_offset OR c.entry_offset < 0""",
    "a claim outside its entry's batch": """
        SELECT format('%s:%s sub %s offset %s index %s size %s; the entry has %s', c.topic_id,
                      c.partition, c.subscription_id, c.entry_offset, c.batch_index,
                      c.batch_size, e.message_count)
          FROM txnq.claims c JOIN txnq.entries e USING (topic_id, partition, entry_offset)
         WHERE c.batch_index < 0 OR c.batch_index >= e.message_count
            OR c.batch_size <> e.message_count""",
    "ledgers not contiguous": """
        SELECT format('%s:%s ledger %s [%s..%s] after ledger %s [%s..%s]', l.topic_id,
                      l.partition, l.ledger_id, l.first_offset, l.last_offset, p.ledger_id,
                      p.first_offset, p.last_offset)
          FROM txnq.ledgers l
          JOIN txnq.ledgers p ON p.topic_id = l.topic_id AND p.partition = l.partition
                             AND p.ledger_id = l.ledger_id - 1
         WHERE p.last_offset IS NULL OR l.first_offset <> p.last_offset + 1
            OR p.last_offset < p.first_offset - 1""",
    "a partition's open ledger is not its head's": """
        SELECT format('%s:%s head ledger %s from %s; open ledgers %s', h.topic_id, h.partition,
                      h.ledger_id, h.ledger_first_offset,
                      (SELECT array_agg(l.ledger_id || ':' || l.first_offset) FROM txnq.ledgers l
                        WHERE l.topic_id = h.topic_id AND l.partition = h.partition
                          AND l.state = 'OPEN'))
          FROM txnq.partitions h
         WHERE NOT EXISTS (SELECT 1 FROM txnq.ledgers l
                            WHERE l.topic_id = h.topic_id AND l.partition = h.partition
                              AND l.ledger_id = h.ledger_id AND l.state = 'OPEN'
                              AND l.first_offset = h.ledger_first_offset)
            OR (SELECT count(*) FROM txnq.ledgers l WHERE l.topic_id = h.topic_id
                   AND l.partition = h.partition AND l.state = 'OPEN') <> 1""",
    "an entry outside its ledger's range": """
        SELECT format('entry %s:%s:%s in ledger %s [%s..%s]', e.topic_id, e.partition,
                      e.entry_offset, e.ledger_id, l.first_offset, l.last_offset)
          FROM txnq.entries e
          JOIN txnq.ledgers l USING (topic_id, partition, ledger_id)
         WHERE e.entry_offset < l.first_offset OR e.entry_offset > l.last_offset""",
    "a stored message a consumer cannot read": """
        SELECT format('entry %s:%s:%s: %s messages, %s payloads (%s NULL), %s keys,'
                      ' %s properties %s, event times %s', e.topic_id, e.partition,
                      e.entry_offset, e.message_count, cardinality(e.payloads),
                      cardinality(array_positions(e.payloads, NULL)), cardinality(e.keys),
                      cardinality(e.properties), left(e.properties::text, 80), e.event_times)
          FROM txnq.entries e
         WHERE e.marker IS NULL AND (
               e.message_count <> cardinality(e.payloads) OR e.message_count < 1
            OR cardinality(e.keys) <> e.message_count
            OR cardinality(e.properties) <> e.message_count
            OR cardinality(e.event_times) <> e.message_count
            OR EXISTS (SELECT 1 FROM unnest(e.payloads) p WHERE p IS NULL)
            OR EXISTS (SELECT 1 FROM unnest(e.event_times) t
                        WHERE t < '0001-01-01 00:00:00+00' OR t > '9999-12-31 23:59:59.999999+00')
            OR EXISTS (SELECT 1 FROM unnest(e.properties) p
                        WHERE jsonb_typeof(p) <> 'object'
                           OR EXISTS (SELECT 1 FROM jsonb_each(p) kv
                                       WHERE jsonb_typeof(kv.value) <> 'string')))""",
    "an ingestion position its topic cannot have delivered": """
        SELECT format('ingestion %s: committed %s, planned %s; max read offsets %s', i.name,
                      i.committed_offsets, i.planned_offsets,
                      (SELECT array_agg(h.max_read_offset ORDER BY h.partition)
                         FROM txnq.partitions h WHERE h.topic_id = i.topic_id))
          FROM txnq.spark_ingestions i
         WHERE EXISTS (SELECT 1 FROM txnq.topics t WHERE t.topic_id = i.topic_id)
           AND (array_ndims(i.committed_offsets) > 1 OR array_ndims(i.planned_offsets) > 1
            OR cardinality(i.planned_offsets) < cardinality(i.committed_offsets)
            OR EXISTS (SELECT 1
                         FROM (SELECT n, i.committed_offsets[n] AS c, i.planned_offsets[n] AS p
                                 FROM generate_series(1, greatest(cardinality(i.committed_offsets),
                                                                  cardinality(i.planned_offsets))) n
                              ) o
                         LEFT JOIN txnq.partitions h
                                ON h.topic_id = i.topic_id AND h.partition = o.n - 1
                        WHERE h.partition IS NULL
                           OR (o.n <= cardinality(i.committed_offsets)
                               AND (o.c IS NULL OR o.c < -1 OR o.c > h.max_read_offset))
                           OR (o.n <= cardinality(i.planned_offsets)
                               AND (o.p IS NULL OR o.p < coalesce(o.c, -1)
                                    OR o.p > h.max_read_offset))))""",
    # The range of create_topic_v2: durations up to 100 years (longer is
    # "forever", which has its own value), as everywhere in txnq.
    "a topic policy that is not a finite number in range": """
        SELECT format('topic %s: retention %s s / %s bytes, TTL %s s, backlog quota age %s s',
                      name, retention_seconds, retention_bytes, ttl_seconds,
                      backlog_quota_seconds)
          FROM txnq.topics
         WHERE retention_seconds IN ('NaN', 'Infinity', '-Infinity')
            OR ttl_seconds IN ('NaN', 'Infinity', '-Infinity')
            OR backlog_quota_seconds IN ('NaN', 'Infinity', '-Infinity')
            OR (retention_seconds < 0 AND retention_seconds <> -1)
            OR (retention_bytes < 0 AND retention_bytes <> -1)
            OR ttl_seconds < 0
            OR greatest(retention_seconds, ttl_seconds, backlog_quota_seconds) > 3155760000""",
}

INVARIANTS_QUERY = "\nUNION ALL\n".join(
    "(SELECT '{}', v FROM ({}) x(v) LIMIT 3)".format(name.replace("'", "''"), query)
    for name, query in INVARIANTS.items()
)

#: Session state a rolled-back call must not leave behind either (its
#: SESSION_COLUMNS columns come first in Fuzzer.baseline).
SESSION_COLUMNS = 7
SESSION_STATE = """
SELECT current_user, session_user, current_setting('search_path'),
       current_setting('lock_timeout'), current_setting('statement_timeout'),
       current_setting('default_transaction_read_only'),
       (SELECT count(*) FROM pg_locks WHERE pid = pg_backend_pid() AND locktype = 'advisory')
"""

# -- the functions ------------------------------------------------------------------

PUBLIC_FUNCTIONS = """
SELECT p.proname,
       coalesce(p.proargnames, ARRAY[]::text[]),
       coalesce(p.proargmodes::text[], ARRAY[]::text[]),
       coalesce(p.proallargtypes, p.proargtypes::oid[])::regtype[]::text[]
  FROM pg_proc p
 WHERE p.pronamespace = 'txnq'::regnamespace AND p.prokind = 'f'
   AND p.prorettype <> 'trigger'::regtype
   AND (has_function_privilege('public', p.oid, 'EXECUTE')
        OR EXISTS (SELECT 1 FROM pg_roles r
                    WHERE r.rolname IN ('txnq_client', 'txnq_worker', 'txnq_reader')
                      AND has_function_privilege(r.oid, p.oid, 'EXECUTE')))
 ORDER BY p.proname
"""


def public_functions(conn: psycopg.Connection[Any]) -> dict[str, tuple[tuple[str, str], ...]]:
    """Every txnq function that a role other than its owner may call (trigger
    functions aside), with its input arguments (name, type)."""
    functions: dict[str, tuple[tuple[str, str], ...]] = {}
    for name, arg_names, modes, types in conn.execute(PUBLIC_FUNCTIONS):
        modes = modes or ["i"] * len(types)
        assert name not in functions, f"txnq.{name} is overloaded: give each version its own name"
        functions[name] = tuple(
            (arg_names[i] if i < len(arg_names) else f"${i + 1}", types[i])
            for i in range(len(types))
            if modes[i] in ("i", "b", "v")
        )
    return functions


@dataclass
class Failure:
    kind: str
    detail: str
    call: str
    count: int = 1


@dataclass
class Fuzzer:
    conn: psycopg.Connection[Any]
    world: dict[str, Any]
    #: The session state and the fingerprint in one statement, built once.
    state_query: sql.Composed
    baseline: tuple[Any, ...] = ()
    calls: int = 0
    accepted: dict[str, int] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    rejected: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    failures: dict[str, dict[str, Failure]] = field(default_factory=dict)

    def render(
        self, function: str, arguments: tuple[tuple[str, str], ...], values: dict[str, Any]
    ) -> str:
        """The call as a statement that replays it (literals, no parameters)."""
        parts = ", ".join(self.render_value(values[name], kind) for name, kind in arguments)
        return f"SELECT count(*) FROM txnq.{function}({parts})"

    def render_value(self, value: Any, kind: str) -> str:
        if isinstance(value, Expr):
            return value.text
        if isinstance(value, list) and any(isinstance(v, Expr) for v in value):
            element = kind.removesuffix("[]")
            return f"ARRAY[{', '.join(self.render_value(v, element) for v in value)}]::{kind}"
        text = f"({sql.Literal(self.resolve(value)).as_string(self.conn)})::{kind}"
        return f"/* {value.name} */ {text}" if isinstance(value, W) else text

    def resolve(self, value: Any) -> Any:
        if isinstance(value, W):
            return self.world[value.name]
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        return value

    def record(self, function: str, kind: str, detail: str, call: str) -> None:
        seen = self.failures.setdefault(function, {})
        if kind in seen:
            seen[kind].count += 1
        else:
            seen[kind] = Failure(kind, detail, call)

    def call(
        self, function: str, arguments: tuple[tuple[str, str], ...], values: dict[str, Any]
    ) -> None:
        statement = self.render(function, arguments, values)
        self.calls += 1
        try:
            with self.conn.transaction(force_rollback=True):
                try:
                    self.conn.execute(statement)
                    # What an application transaction staged is published at
                    # its COMMIT: fire the deferred triggers now, before the rollback.
                    self.conn.execute("SET CONSTRAINTS ALL IMMEDIATE")
                except psycopg.Error as error:
                    if error.sqlstate is None:
                        raise
                    seen = self.rejected.setdefault(function, {})
                    seen.setdefault(error.sqlstate, [0, error.diag.message_primary])[0] += 1
                    if not error.sqlstate.startswith("TQ"):
                        name = type(error).__name__
                        self.record(
                            function,
                            f"raw SQLSTATE {error.sqlstate} ({name})",
                            str(error.diag.message_primary),
                            statement,
                        )
                    raise _Rejected() from error
                self.accepted[function] = self.accepted.get(function, 0) + 1
                broken = self.conn.execute(INVARIANTS_QUERY).fetchall()
                for invariant, detail in broken:
                    self.record(function, f"accepted, then {invariant}", detail, statement)
        except _Rejected:
            # A rejected call leaves the database as it was: the fingerprint
            # too (an accepted call is rolled back: only the session is checked).
            state = self.state()
            if state[len(self.session) :] != self.baseline[len(self.session) :]:
                self.record(function, "changed the database", "after its rollback", statement)
                self.baseline = state
        session = self.conn.execute(SESSION_STATE).fetchone()
        if session != self.session:
            self.record(function, "changed the session", f"{self.session} -> {session}", statement)
            self.conn.execute("RESET ALL")
            self.conn.execute("SELECT pg_advisory_unlock_all()")
            self.conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
            self.baseline = self.state()

    @property
    def session(self) -> tuple[Any, ...]:
        return self.baseline[:SESSION_COLUMNS]

    def state(self) -> tuple[Any, ...]:
        row = self.conn.execute(self.state_query).fetchone()
        assert row is not None
        return tuple(row)

    def report(self) -> str:
        lines = []
        for function, kinds in sorted(self.failures.items()):
            lines.append(f"txnq.{function}:")
            for failure in kinds.values():
                lines.append(f"  {failure.kind}: {failure.detail} ({failure.count} calls), first:")
                lines.append(f"    {failure.call};")
        return "\n".join(lines)


class _Rejected(Exception):
    """The call failed (with a TQ code, or recorded otherwise): roll back."""


def fuzz_settings(arguments: int) -> settings:
    return settings(
        max_examples=EXAMPLES_BASE + EXAMPLES_PER_ARGUMENT * arguments,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )


@pytest.fixture(scope="module")
def world_dsn(pg_server_dsn: str, template_database: str) -> Iterator[str]:
    """A database of this module's own with the prepared world, committed."""
    name = f"txnq_fz_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template_database)
            )
        )
    dsn = dsn_for_database(pg_server_dsn, name)
    try:
        yield dsn
    finally:
        _drop_database(pg_server_dsn, name)


@pytest.fixture(scope="module")
def fuzzer(world_dsn: str) -> Iterator[Fuzzer]:
    with psycopg.connect(world_dsn, autocommit=True) as conn:
        with conn.transaction():
            world = build_world(conn)
        conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
        state_query = sql.SQL("{}, {}").format(
            sql.SQL(SESSION_STATE.strip()), sql.SQL(", ").join(fingerprint_columns(conn))
        )
        fuzzer = Fuzzer(conn, world, state_query)
        fuzzer.baseline = fuzzer.state()
        yield fuzzer


def test_every_public_function_is_fuzzed(fuzzer: Fuzzer) -> None:
    missing = [
        f"txnq.{function}: argument {name} {kind}"
        for function, arguments in public_functions(fuzzer.conn).items()
        for name, kind in arguments
        if (name, kind) not in ARGUMENTS
    ]
    assert not missing, (
        "arguments without a strategy (add them to ARGUMENTS in "
        "tests/sql_api/test_fuzz_sql_api.py):\n" + "\n".join(missing)
    )


def test_the_prepared_world_keeps_the_invariants(fuzzer: Fuzzer) -> None:
    assert fuzzer.conn.execute(INVARIANTS_QUERY).fetchall() == []
    w = fuzzer.world
    states = dict(
        fuzzer.conn.execute(
            "SELECT tc_id || ':' || txn_seq, state FROM txnq.transactions"
        ).fetchall()
    )
    assert {name: states[f"{w[f'{name}_tc']}:{w[f'{name}_seq']}"] for name in TXNS} == {
        "open": "OPEN",
        "empty": "OPEN",
        "committed": "COMMITTED",
        "aborted": "ABORTED",
        "committing": "COMMITTING",
    }
    logs = dict(fuzzer.conn.execute("SELECT entry_log_id, state FROM txnq.entry_logs").fetchall())
    names = ("dropped", "sealed", "sealed_too", "active", "compacting", "caught_up")
    assert [logs[w[f"log_{n}"]] for n in names] == [
        "DROPPED",
        "SEALED",
        "SEALED",
        "ACTIVE",
        "COMPACTING",
        "COMPACTING",
    ]
    for table in ("individual_acks", "pending_acks", "claims", "delayed_entries", "aborted_txns"):
        assert fuzzer.conn.execute(f"SELECT count(*) FROM txnq.{table}").fetchone() != (0,), table


@pytest.mark.timeout(600)
def test_public_functions_reject_bad_arguments_with_tq_codes_or_keep_the_invariants(
    fuzzer: Fuzzer,
) -> None:
    started = time.monotonic()
    functions = public_functions(fuzzer.conn)
    for function, arguments in functions.items():
        if any(argument not in ARGUMENTS for argument in arguments):
            continue  # test_every_public_function_is_fuzzed names it

        @fuzz_settings(len(arguments))
        @given(values=call_arguments(arguments))
        def fuzz(values: dict[str, Any]) -> None:
            fuzzer.call(function, arguments, values)  # noqa: B023 (runs within the iteration)

        began = time.monotonic()
        fuzz()
        fuzzer.seconds[function] = time.monotonic() - began
    elapsed = time.monotonic() - started
    # How deep the run reached (shown with -s, or under a failure's captured output).
    print(f"{fuzzer.calls} calls in {elapsed:.0f}s; accepted and rejected calls per function:")
    for function in functions:
        print(
            f"  {function}: {fuzzer.accepted.get(function, 0)} accepted"
            f" ({fuzzer.seconds.get(function, 0):.1f}s)"
        )
        for code, (n, message) in sorted(fuzzer.rejected.get(function, {}).items()):
            print(f"    {code} x{n}, e.g. {message}")
    if fuzzer.failures:
        pytest.fail(
            f"{len(fuzzer.failures)} of {len(functions)} functions failed"
            f" ({fuzzer.calls} calls in {elapsed:.0f}s); each kind of failure with the first"
            f" call that showed it (replay it on a database prepared by build_world):\n"
            f"{fuzzer.report()}",
            pytrace=False,
        )
