"""The SQL boundary, consume side (issue 17): every public function of
subscriptions, cursors, acknowledgements and shared claims checks each of its
arguments itself. A bad value, from SQL or from Python, gets a documented TQ
SQLSTATE whose message says what to do, and changes nothing; above all, a
message id that names no message of its entry (a batch index past the batch, a
batch size other than the entry's, a marker, an offset not yet readable) never
acknowledges anything, so no message that was never delivered is lost."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql as psycopg_sql

import txnq
from tests.conftest import _drop_database, dsn_for_database
from tests.fuzz_support import fingerprint
from tests.helpers import receive_messages, sql, sql_value
from txnq import errors
from txnq.database.connections import SQLSTATE_ERRORS, translate

# What fuzz_support.fingerprint leaves out and these functions write: claims,
# consumer sessions, staged acks, the transaction log's subscriptions, and the
# cursors' every column (dispatch offset, generation).
MORE_STATE = """
SELECT md5(string_agg(t, '|' ORDER BY k)) FROM (
    SELECT 1 AS k, coalesce(string_agg(format('%s', c.*), ',' ORDER BY c.topic_id, c.partition,
                                       c.subscription_id), '') AS t FROM txnq.cursors c
    UNION ALL SELECT 2, coalesce(string_agg(format('%s', c.*), ',' ORDER BY c.topic_id, c.partition,
                                            c.subscription_id, c.entry_offset, c.batch_index), '')
      FROM txnq.claims c
    UNION ALL SELECT 3, coalesce(string_agg(format('%s', k.*), ',' ORDER BY k.consumer_id), '')
      FROM txnq.consumers k
    UNION ALL SELECT 4, coalesce(string_agg(format('%s', a.*), ',' ORDER BY a.stage_id), '')
      FROM txnq.staged_acks a
    UNION ALL SELECT 5, coalesce(string_agg(format('%s', a.*), ',' ORDER BY a.tc_id, a.txn_seq,
                                            a.subscription_id), '')
      FROM txnq.txn_subscriptions a
    UNION ALL SELECT 6, coalesce(string_agg(format('%s', a.*), ',' ORDER BY a.entry_offset), '')
      FROM txnq.individual_acks a
    UNION ALL SELECT 7, coalesce(string_agg(format('%s', r.*), ',' ORDER BY r.topic_id, r.partition,
                                            r.subscription_id, r.first_offset), '')
      FROM txnq.claim_ranges r
) s
"""


def state(conn: psycopg.Connection[Any]) -> tuple[Any, ...]:
    row = conn.execute(MORE_STATE).fetchone()
    assert row is not None
    return (*fingerprint(conn), row[0])


def one(conn: psycopg.Connection[Any], query: str, params: Any = None) -> Any:
    row = conn.execute(query, params).fetchone()
    assert row is not None
    return row[0]


def build_world(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    """Two topics, every kind of subscription, batch entries, a committed
    transaction (message + marker), an open one holding back the max read
    offset, an open one to acknowledge in, and a consumer per subscription.

    Partition 0 of t1: 0 a batch of 3 (keys k1 k1 k2), 1 one message, 2 a
    committed transaction's message, 3 its COMMIT marker, 4 an open
    transaction's message, 5 a batch of 2 after it (max read offset 3)."""
    world: dict[str, Any] = {}
    world["t1"] = one(conn, "SELECT txnq.create_topic_v1('t1', 2, -1, -1, NULL, 1048576)")
    world["t2"] = one(conn, "SELECT txnq.create_topic_v1('t2', 1, -1, -1, NULL, 1048576)")
    subscribe = "SELECT txnq.subscribe_v2(%s, %s, %s, %s, 'earliest')"
    world["ex"] = one(conn, subscribe, (world["t1"], "ex", "exclusive", "read_committed"))
    world["sh"] = one(conn, subscribe, (world["t1"], "sh", "shared", "read_committed"))
    world["ks"] = one(conn, subscribe, (world["t1"], "ks", "key_shared", "read_committed"))
    world["ex2"] = one(conn, subscribe, (world["t2"], "ex2", "exclusive", "read_committed"))
    world["ru"] = one(conn, subscribe, (world["t1"], "ru", "exclusive", "read_uncommitted"))
    append = (
        "SELECT entry_offset FROM txnq.append_v3(%s, %s, NULL, NULL, NULL, %s, %s, NULL, NULL, "
        "%s, %s)"
    )
    t1 = world["t1"]
    one(conn, append, (t1, 0, [b"a", b"b", b"c"], [b"k1", b"k1", b"k2"], None, None))
    one(conn, append, (t1, 0, [b"d"], None, None, None))
    committed = conn.execute("SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 600)").fetchone()
    assert committed is not None
    one(conn, append, (t1, 0, [b"t"], None, *committed))
    conn.execute(
        "SELECT txnq.complete_txn_v1(%s, %s) FROM txnq.end_txn_v1(%s, %s, true)",
        (*committed, *committed),
    )
    world["ended_tc"], world["ended_seq"] = committed
    writer = conn.execute("SELECT tc_id, txn_seq FROM txnq.open_txn_v1(1, 600)").fetchone()
    assert writer is not None
    one(conn, append, (t1, 0, [b"u"], None, *writer))
    one(conn, append, (t1, 0, [b"e", b"f"], None, None, None))
    one(conn, append, (t1, 1, [b"p", b"q"], None, None, None))
    one(conn, append, (t1, 1, [b"r"], None, None, None))
    one(conn, append, (world["t2"], 0, [b"z"], None, None, None))
    acker = conn.execute("SELECT tc_id, txn_seq FROM txnq.open_txn_v1(2, 600)").fetchone()
    assert acker is not None
    world["tc"], world["seq"] = acker
    register = "SELECT txnq.register_consumer_v2(%s, %s, 0, 600)"
    world["c_sh"] = one(conn, register, (world["sh"], "c-sh"))
    world["c_ks"] = one(conn, register, (world["ks"], "c-ks"))
    world["c_ex"] = one(conn, register, (world["ex"], "c-ex"))
    world["c_ex2"] = one(conn, register, (world["ex2"], "c-ex2"))
    # The shared subscription holds claims: partition 0's first entry is claimed.
    claimed = conn.execute(
        "SELECT partition, entry_offset, batch_index FROM txnq.claim_v3(%s, %s, %s, 3)",
        (t1, world["sh"], world["c_sh"]),
    ).fetchall()
    assert claimed, "the shared consumer claimed nothing"
    return world


@pytest.fixture(scope="module")
def world_dsn(pg_server_dsn: str, template_database: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """One database for the whole module: a rejected call changes nothing (each
    case proves it), so the cases can share it."""
    name = f"txnq_t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_server_dsn, autocommit=True) as conn:
        conn.execute(
            psycopg_sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                psycopg_sql.Identifier(name), psycopg_sql.Identifier(template_database)
            )
        )
    dsn = dsn_for_database(pg_server_dsn, name)
    try:
        with psycopg.connect(dsn, autocommit=True) as conn:
            world = build_world(conn)
        yield dsn, world
    finally:
        _drop_database(pg_server_dsn, name)


ACK3 = "SELECT txnq.ack_v3(%(t1)s, 0, %(ex)s, "
ACK_TXN = ", NULL, NULL, %(tc)s, %(seq)s)"
STAGE = "SELECT txnq.stage_ack_v2(%(t1)s, 0, %(ex)s, "
FETCH = "SELECT * FROM txnq.fetch_v4(%(t1)s, 0, %(ex)s, "
SHARED = "SELECT txnq.ack_shared_v4(%(t1)s, 0, %(sh)s, "
CLAIM = "SELECT * FROM txnq.claim_v3(%(t1)s, %(sh)s, %(c_sh)s, "
NACK = "SELECT txnq.nack_shared_v2(%(t1)s, 0, %(sh)s, %(c_sh)s, "
REGISTER = "SELECT txnq.register_consumer_v2(%(sh)s, "
HEARTBEAT = "SELECT * FROM txnq.heartbeat_consumer_v2("
SEEK = "SELECT txnq.seek_v2(%(t1)s, 0, %(ex)s, "
TOO_MANY = "array_fill(1::bigint, ARRAY[100001]), array_fill(-1, ARRAY[100001])"

# name: (SQLSTATE, statement); %(name)s placeholders come from build_world.
BAD_CALLS: dict[str, tuple[str, str]] = {
    # -- ack_v3: message ids checked against their entries ---------------------
    "ack-index-past-batch": ("TQ005", ACK3 + "NULL, '{0}', '{5}', '{3}')"),
    "ack-index-equal-to-size": ("TQ005", ACK3 + "NULL, '{0}', '{3}', '{3}')"),
    "ack-index-past-looked-up-size": ("TQ005", ACK3 + "NULL, '{0}', '{7}', '{NULL}')"),
    "ack-index-past-one-message-entry": ("TQ005", ACK3 + "NULL, '{1}', '{4}', '{1}')"),
    "ack-index-below-minus-one": ("TQ005", ACK3 + "NULL, '{0}', '{-2}', '{3}')"),
    "ack-index-null": ("TQ005", ACK3 + "NULL, '{0}', '{NULL}', '{3}')"),
    "ack-size-1-for-a-batch": ("TQ005", ACK3 + "NULL, '{0}', '{0}', '{1}')"),
    "ack-size-smaller-than-batch": ("TQ005", ACK3 + "NULL, '{0}', '{1}', '{2}')"),
    "ack-size-larger-than-batch": ("TQ005", ACK3 + "NULL, '{0}', '{1}', '{9}')"),
    "ack-size-0": ("TQ005", ACK3 + "NULL, '{0}', '{1}', '{0}')"),
    "ack-size-negative": ("TQ005", ACK3 + "NULL, '{0}', '{1}', '{-3}')"),
    "ack-offset-null": ("TQ005", ACK3 + "NULL, '{NULL}', '{-1}', '{1}')"),
    "ack-offset-negative": ("TQ005", ACK3 + "NULL, '{-5}', '{-1}', '{1}')"),
    "ack-marker": ("TQ005", ACK3 + "NULL, '{3}', '{-1}', '{1}')"),
    "ack-one-message-entries-with-a-marker": ("TQ005", ACK3 + "NULL, '{1,3}', '{-1,-1}', '{1,1}')"),
    "ack-one-message-entries-with-a-batch": ("TQ005", ACK3 + "NULL, '{1,0}', '{-1,0}', '{1,1}')"),
    "ack-messages-of-one-entry-sizes-differ": ("TQ005", ACK3 + "NULL, '{0,0}', '{0,1}', '{3,2}')"),
    "ack-open-transaction-message": ("TQ005", ACK3 + "NULL, '{4}', '{-1}', '{1}')"),
    "ack-past-max-read-offset": ("TQ005", ACK3 + "NULL, '{5}', '{0}', '{2}')"),
    "ack-past-head": ("TQ005", ACK3 + "NULL, '{6}', '{-1}', '{1}')"),
    "ack-lengths-differ": ("TQ005", ACK3 + "NULL, '{0,1}', '{0}', '{3}')"),
    "ack-too-many": ("TQ005", ACK3 + "NULL, " + TOO_MANY + ", array_fill(1, ARRAY[100001]))"),
    "ack-cumulative-past-head": ("TQ005", ACK3 + "6)"),
    "ack-cumulative-past-max-read-offset": ("TQ005", ACK3 + "5)"),
    "ack-cumulative-below-minus-one": ("TQ005", ACK3 + "-7)"),
    "ack-cumulative-index-past-batch": ("TQ005", ACK3 + "0, '{}', '{}', '{}', 5, 3)"),
    "ack-cumulative-index-negative": ("TQ005", ACK3 + "0, '{}', '{}', '{}', -3, 3)"),
    "ack-cumulative-size-wrong": ("TQ005", ACK3 + "0, '{}', '{}', '{}', 0, 1)"),
    "ack-cumulative-size-0": ("TQ005", ACK3 + "0, '{}', '{}', '{}', 0, 0)"),
    "ack-cumulative-index-alone": ("TQ005", ACK3 + "NULL, '{}', '{}', '{}', 0, 3)"),
    "ack-cumulative-index-on-marker": ("TQ005", ACK3 + "3, '{}', '{}', '{}', 0, NULL)"),
    "ack-topic-null": ("TQ001", "SELECT txnq.ack_v3(NULL, 0, %(ex)s, 1)"),
    "ack-topic-unknown": ("TQ001", "SELECT txnq.ack_v3(999, 0, %(ex)s, 1)"),
    "ack-partition-unknown": ("TQ001", "SELECT txnq.ack_v3(%(t1)s, 7, %(ex)s, 1)"),
    "ack-partition-null": ("TQ001", "SELECT txnq.ack_v3(%(t1)s, NULL, %(ex)s, 1)"),
    "ack-subscription-of-another-topic": ("TQ006", "SELECT txnq.ack_v3(%(t1)s, 0, %(ex2)s, 1)"),
    "ack-subscription-null": ("TQ006", "SELECT txnq.ack_v3(%(t1)s, 0, NULL, 1)"),
    "ack-transaction-unknown": ("TQ014", ACK3 + "NULL, '{1}', '{-1}', '{1}', NULL, NULL, 5, 77)"),
    "ack-transaction-half": ("TQ005", ACK3 + "NULL, '{1}', '{-1}', '{1}', NULL, NULL, 5, NULL)"),
    "ack-transaction-ended": (
        "TQ013",
        ACK3 + "NULL, '{1}', '{-1}', '{1}', NULL, NULL, %(ended_tc)s, %(ended_seq)s)",
    ),
    "ack-in-transaction-index-past-batch": ("TQ005", ACK3 + "NULL, '{0}', '{5}', '{3}'" + ACK_TXN),
    "ack-in-transaction-size-1-for-a-batch": (
        "TQ005",
        ACK3 + "NULL, '{0}', '{0}', '{1}'" + ACK_TXN,
    ),
    "ack-in-transaction-marker": ("TQ005", ACK3 + "NULL, '{3}', '{-1}', '{1}'" + ACK_TXN),
    "ack-in-transaction-past-max-read-offset": ("TQ005", ACK3 + "5, '{}', '{}', '{}'" + ACK_TXN),
    # The versions ack_v3 replaces check the same (they call it).
    "ack-v2-index-past-batch": (
        "TQ005",
        "SELECT txnq.ack_v2(%(t1)s, 0, %(ex)s, NULL, '{0}', '{5}', '{3}')",
    ),
    "ack-v1-size-1-for-a-batch": (
        "TQ005",
        "SELECT txnq.ack_v1(%(t1)s, 0, %(ex)s, NULL, '{0}', '{0}', '{1}')",
    ),
    # -- stage_ack_v2 ----------------------------------------------------------
    "stage-ack-index-past-batch": ("TQ005", STAGE + "'{0}', '{9}', '{3}')"),
    "stage-ack-size-1-for-a-batch": ("TQ005", STAGE + "'{0}', '{0}', '{1}')"),
    "stage-ack-index-below-minus-one": ("TQ005", STAGE + "'{0}', '{-4}', NULL)"),
    "stage-ack-marker": ("TQ005", STAGE + "'{3}', NULL, NULL)"),
    "stage-ack-open-transaction-message": ("TQ005", STAGE + "'{4}', NULL, NULL)"),
    "stage-ack-no-offset": ("TQ005", STAGE + "'{}')"),
    "stage-ack-subscription-of-another-topic": (
        "TQ006",
        "SELECT txnq.stage_ack_v2(%(t1)s, 0, %(ex2)s, '{0}')",
    ),
    "stage-ack-topic-unknown": ("TQ001", "SELECT txnq.stage_ack_v2(999, 0, %(ex)s, '{0}')"),
    "stage-ack-partition-unknown": ("TQ001", "SELECT txnq.stage_ack_v2(%(t1)s, 9, %(ex)s, '{0}')"),
    "stage-ack-v1-index-past-batch": (
        "TQ005",
        "SELECT txnq.stage_ack_v1(%(t1)s, 0, %(ex)s, '{0}', '{9}', '{3}')",
    ),
    # -- fetch -----------------------------------------------------------------
    "fetch-topic-unknown": ("TQ001", "SELECT * FROM txnq.fetch_v4(999, 0, %(ex)s, -1)"),
    "fetch-from-mark-delete-null": ("TQ005", FETCH + "-1, 100, 100, NULL)"),
    "fetch-v3-partition-unknown": ("TQ001", "SELECT * FROM txnq.fetch_v3(%(t1)s, 9, %(ex)s, -1)"),
    "fetch-partition-unknown": ("TQ001", "SELECT * FROM txnq.fetch_v4(%(t1)s, 9, %(ex)s, -1)"),
    "fetch-subscription-of-another-topic": (
        "TQ006",
        "SELECT * FROM txnq.fetch_v4(%(t2)s, 0, %(ex)s, -1)",
    ),
    "fetch-subscription-null": ("TQ006", "SELECT * FROM txnq.fetch_v4(%(t1)s, 0, NULL, -1)"),
    "fetch-after-null": ("TQ005", FETCH + "NULL)"),
    "fetch-after-below-minus-one": ("TQ005", FETCH + "-9)"),
    "fetch-after-past-head": ("TQ005", FETCH + "99)"),
    "fetch-max-entries-null": ("TQ005", FETCH + "-1, NULL)"),
    "fetch-max-entries-negative": ("TQ005", FETCH + "-1, -1)"),
    "fetch-max-entries-0": ("TQ005", FETCH + "-1, 0)"),
    "fetch-max-bytes-null": ("TQ005", FETCH + "-1, 100, NULL)"),
    "fetch-max-bytes-negative": ("TQ005", FETCH + "-1, 100, -1)"),
    "fetch-v2-topic-unknown": ("TQ001", "SELECT * FROM txnq.fetch_v2(999, 0, %(ex)s, -1)"),
    "fetch-v1-max-entries-negative": (
        "TQ005",
        "SELECT * FROM txnq.fetch_v1(%(t1)s, 0, %(ex)s, -1, -1)",
    ),
    # -- ack_shared_v4 ---------------------------------------------------------
    "shared-ack-index-past-batch": ("TQ005", SHARED + "'{0}', '{7}')"),
    "shared-ack-index-below-minus-one": ("TQ005", SHARED + "'{0}', '{-2}')"),
    "shared-ack-index-null": ("TQ005", SHARED + "'{0}', '{NULL}')"),
    "shared-ack-offset-null": ("TQ005", SHARED + "'{NULL}', '{0}')"),
    "shared-ack-marker": ("TQ005", SHARED + "'{3}', '{-1}')"),
    "shared-ack-past-head": ("TQ005", SHARED + "'{99}', '{0}')"),
    "shared-ack-past-max-read-offset": ("TQ005", SHARED + "'{5}', '{0}')"),
    "shared-ack-lengths-differ": ("TQ005", SHARED + "'{0,1}', '{0}')"),
    "shared-ack-too-many": ("TQ005", SHARED + TOO_MANY + ")"),
    "shared-ack-topic-null": ("TQ001", "SELECT txnq.ack_shared_v4(NULL, 0, %(sh)s, '{0}', '{0}')"),
    "shared-ack-partition-unknown": (
        "TQ001",
        "SELECT txnq.ack_shared_v4(%(t1)s, 9, %(sh)s, '{0}', '{0}')",
    ),
    "shared-ack-partition-null": (
        "TQ001",
        "SELECT txnq.ack_shared_v4(%(t1)s, NULL, %(sh)s, '{0}', '{0}')",
    ),
    "shared-ack-exclusive-subscription": (
        "TQ005",
        "SELECT txnq.ack_shared_v4(%(t1)s, 0, %(ex)s, '{0}', '{0}')",
    ),
    "shared-ack-transaction-unknown": ("TQ014", SHARED + "'{0}', '{0}', 7, 7)"),
    "shared-ack-in-transaction-index-past-batch": (
        "TQ005",
        SHARED + "'{0}', '{7}', %(tc)s, %(seq)s)",
    ),
    "shared-ack-v3-index-past-batch": (
        "TQ005",
        "SELECT txnq.ack_shared_v3(%(t1)s, 0, %(sh)s, '{0}', '{7}')",
    ),
    "shared-ack-v2-index-past-batch": (
        "TQ005",
        "SELECT txnq.ack_shared_v2(%(t1)s, 0, %(sh)s, '{0}', '{7}')",
    ),
    "shared-ack-v1-index-past-batch": (
        "TQ005",
        "SELECT txnq.ack_shared_v1(%(t1)s, 0, %(sh)s, '{0}', '{7}')",
    ),
    # -- claim_v3 --------------------------------------------------------------
    "claim-consumer-of-another-subscription": (
        "TQ005",
        "SELECT * FROM txnq.claim_v3(%(t1)s, %(sh)s, %(c_ex)s, 10)",
    ),
    "claim-consumer-null": ("TQ005", "SELECT * FROM txnq.claim_v3(%(t1)s, %(sh)s, NULL, 10)"),
    "claim-consumer-unknown": ("TQ009", "SELECT * FROM txnq.claim_v3(%(t1)s, %(sh)s, 99999, 10)"),
    "claim-max-null": ("TQ005", CLAIM + "NULL)"),
    "claim-max-0": ("TQ005", CLAIM + "0)"),
    "claim-max-huge": ("TQ005", CLAIM + "1000000000)"),
    "claim-ack-timeout-nan": ("TQ005", CLAIM + "10, 'NaN')"),
    "claim-ack-timeout-infinite": ("TQ005", CLAIM + "10, 'Infinity')"),
    "claim-ack-timeout-huge": ("TQ005", CLAIM + "10, 1e300)"),
    "claim-ack-timeout-0": ("TQ005", CLAIM + "10, 0)"),
    "claim-max-redeliver-alone": ("TQ005", CLAIM + "10, NULL, 3)"),
    "claim-dead-letter-topic-alone": ("TQ005", CLAIM + "10, NULL, NULL, %(t2)s)"),
    "claim-max-redeliver-negative": ("TQ005", CLAIM + "10, NULL, -1, %(t2)s)"),
    "claim-dead-letter-topic-unknown": ("TQ001", CLAIM + "10, NULL, 0, 999)"),
    "claim-topic-unknown": ("TQ001", "SELECT * FROM txnq.claim_v3(999, %(sh)s, %(c_sh)s, 10)"),
    "claim-topic-null": ("TQ001", "SELECT * FROM txnq.claim_v3(NULL, %(sh)s, %(c_sh)s, 10)"),
    "claim-subscription-of-another-topic": (
        "TQ006",
        "SELECT * FROM txnq.claim_v3(%(t2)s, %(sh)s, %(c_sh)s, 10)",
    ),
    "claim-exclusive-subscription": (
        "TQ005",
        "SELECT * FROM txnq.claim_v3(%(t1)s, %(ex)s, %(c_ex)s, 10)",
    ),
    "claim-v2-ack-timeout-nan": (
        "TQ005",
        "SELECT * FROM txnq.claim_v2(%(t1)s, %(sh)s, %(c_sh)s, 10, 'NaN')",
    ),
    "claim-v1-ack-timeout-infinite": (
        "TQ005",
        "SELECT * FROM txnq.claim_v1(%(t1)s, %(sh)s, %(c_sh)s, 10, 'Infinity')",
    ),
    # -- nack_shared_v2 --------------------------------------------------------
    "nack-delay-nan": ("TQ005", NACK + "'{0}', '{0}', '{NaN}')"),
    "nack-delay-infinite": ("TQ005", NACK + "'{0}', '{0}', '{Infinity}')"),
    "nack-delay-huge": ("TQ005", NACK + "'{0}', '{0}', '{1e12}')"),
    "nack-delay-negative": ("TQ005", NACK + "'{0}', '{0}', '{-1}')"),
    "nack-delay-null": ("TQ005", NACK + "'{0}', '{0}', '{NULL}')"),
    "nack-arrays-null": ("TQ005", NACK + "NULL, NULL, NULL)"),
    "nack-lengths-differ": ("TQ005", NACK + "'{0,1}', '{0}', '{1}')"),
    "nack-index-negative": ("TQ005", NACK + "'{0}', '{-5}', '{1}')"),
    "nack-index-past-batch": ("TQ005", NACK + "'{0}', '{7}', '{1}')"),
    "nack-past-head": ("TQ005", NACK + "'{99}', '{0}', '{1}')"),
    "nack-partition-unknown": (
        "TQ001",
        "SELECT txnq.nack_shared_v2(%(t1)s, 9, %(sh)s, %(c_sh)s, '{0}', '{0}', '{1}')",
    ),
    "nack-consumer-of-another-subscription": (
        "TQ005",
        "SELECT txnq.nack_shared_v2(%(t1)s, 0, %(sh)s, %(c_ex)s, '{0}', '{0}', '{1}')",
    ),
    "nack-subscription-of-another-topic": (
        "TQ006",
        "SELECT txnq.nack_shared_v2(%(t1)s, 0, %(ex2)s, %(c_ex2)s, '{0}', '{0}', '{1}')",
    ),
    "nack-exclusive-subscription": (
        "TQ005",
        "SELECT txnq.nack_shared_v2(%(t1)s, 0, %(ex)s, %(c_ex)s, '{0}', '{0}', '{1}')",
    ),
    "nack-v1-delay-nan": (
        "TQ005",
        "SELECT txnq.nack_shared_v1(%(t1)s, 0, %(sh)s, %(c_sh)s, '{0}', '{0}', '{NaN}')",
    ),
    # -- release_claims_v2 -----------------------------------------------------
    "release-subscription-null": ("TQ006", "SELECT txnq.release_claims_v2(NULL, NULL)"),
    "release-subscription-unknown": ("TQ006", "SELECT txnq.release_claims_v2(99999, NULL)"),
    "release-consumer-of-another-subscription": (
        "TQ005",
        "SELECT txnq.release_claims_v2(%(sh)s, %(c_ex)s)",
    ),
    "release-v1-subscription-unknown": ("TQ006", "SELECT txnq.release_claims_v1(99999, NULL)"),
    # -- subscribe_v2 / unsubscribe_v2 -----------------------------------------
    "subscribe-initial-position-null": (
        "TQ005",
        "SELECT txnq.subscribe_v2(%(t1)s, 'new', 'exclusive', 'read_committed', NULL)",
    ),
    "subscribe-initial-position-unknown": (
        "TQ005",
        "SELECT txnq.subscribe_v2(%(t1)s, 'new', 'exclusive', 'read_committed', 'middle')",
    ),
    "subscribe-type-unknown": (
        "TQ005",
        "SELECT txnq.subscribe_v2(%(t1)s, 'new', 'queue', 'read_committed', 'earliest')",
    ),
    "subscribe-isolation-null": (
        "TQ005",
        "SELECT txnq.subscribe_v2(%(t1)s, 'new', 'exclusive', NULL, 'earliest')",
    ),
    "subscribe-name-bad": (
        "TQ005",
        "SELECT txnq.subscribe_v2(%(t1)s, 'no spaces', 'exclusive', 'read_committed', 'earliest')",
    ),
    "subscribe-topic-null": (
        "TQ001",
        "SELECT txnq.subscribe_v2(NULL, 'new', 'exclusive', 'read_committed', 'earliest')",
    ),
    "subscribe-v1-initial-position-null": (
        "TQ005",
        "SELECT txnq.subscribe_v1(%(t1)s, 'new', 'exclusive', 'read_committed', NULL)",
    ),
    "unsubscribe-subscription-null": ("TQ006", "SELECT txnq.unsubscribe_v2(NULL)"),
    "unsubscribe-force-null": ("TQ005", "SELECT txnq.unsubscribe_v2(%(ru)s, NULL, NULL)"),
    "unsubscribe-except-consumer-of-another-subscription": (
        "TQ005",
        "SELECT txnq.unsubscribe_v2(%(ex)s, %(c_sh)s, false)",
    ),
    "unsubscribe-v1-force-null": ("TQ005", "SELECT txnq.unsubscribe_v1(%(ru)s, NULL, NULL)"),
    # -- register_consumer_v2 / heartbeat_consumer_v2 --------------------------
    "register-name-null": ("TQ005", REGISTER + "NULL, 0, 60)"),
    "register-name-bad": ("TQ005", REGISTER + "'a b', 0, 60)"),
    "register-name-too-long": ("TQ005", REGISTER + "repeat('x', 201), 0, 60)"),
    "register-priority-null": ("TQ005", REGISTER + "'c', NULL, 60)"),
    "register-lease-null": ("TQ005", REGISTER + "'c', 0, NULL)"),
    "register-lease-nan": ("TQ005", REGISTER + "'c', 0, 'NaN')"),
    "register-lease-infinite": ("TQ005", REGISTER + "'c', 0, 'Infinity')"),
    "register-lease-huge": ("TQ005", REGISTER + "'c', 0, 1e300)"),
    "register-lease-negative": ("TQ005", REGISTER + "'c', 0, -5)"),
    "register-lease-0": ("TQ005", REGISTER + "'c', 0, 0)"),
    "register-subscription-unknown": (
        "TQ006",
        "SELECT txnq.register_consumer_v2(99999, 'c', 0, 60)",
    ),
    "register-v1-lease-nan": (
        "TQ005",
        "SELECT txnq.register_consumer_v1(%(sh)s, 'c', 0, 'NaN')",
    ),
    "heartbeat-lease-null": ("TQ005", HEARTBEAT + "%(c_sh)s, NULL)"),
    "heartbeat-lease-nan": ("TQ005", HEARTBEAT + "%(c_sh)s, 'NaN')"),
    "heartbeat-lease-infinite": ("TQ005", HEARTBEAT + "%(c_sh)s, 'Infinity')"),
    "heartbeat-lease-negative": ("TQ005", HEARTBEAT + "%(c_sh)s, -5)"),
    "heartbeat-consumer-null": ("TQ005", HEARTBEAT + "NULL, 60)"),
    "heartbeat-consumer-unknown": ("TQ009", HEARTBEAT + "99999, 60)"),
    "heartbeat-v1-lease-negative": (
        "TQ005",
        "SELECT * FROM txnq.heartbeat_consumer_v1(%(c_sh)s, -5)",
    ),
    # -- seek_v2 ---------------------------------------------------------------
    "seek-topic-unknown": ("TQ001", "SELECT txnq.seek_v2(999, 0, %(ex)s, 0)"),
    "seek-partition-unknown": ("TQ001", "SELECT txnq.seek_v2(%(t1)s, 9, %(ex)s, 0)"),
    "seek-subscription-of-another-topic": ("TQ006", "SELECT txnq.seek_v2(%(t1)s, 0, %(ex2)s, 0)"),
    "seek-time-infinity": ("TQ005", SEEK + "NULL, 'infinity')"),
    "seek-time-minus-infinity": ("TQ005", SEEK + "NULL, '-infinity')"),
    "seek-time-after-9999": ("TQ005", SEEK + "NULL, '10000-01-01 00:00:00+00')"),
    "seek-neither": ("TQ005", SEEK + "NULL, NULL)"),
    "seek-both": ("TQ005", SEEK + "0, now())"),
    "seek-v1-topic-unknown": ("TQ001", "SELECT txnq.seek_v1(999, 0, %(ex)s, 0)"),
    # -- earliest_offset_v2 / subscription_backlog_v2 --------------------------
    "earliest-topic-unknown": ("TQ001", "SELECT txnq.earliest_offset_v2(999, 0)"),
    "earliest-partition-unknown": ("TQ001", "SELECT txnq.earliest_offset_v2(%(t1)s, 9)"),
    "earliest-partition-null": ("TQ001", "SELECT txnq.earliest_offset_v2(%(t1)s, NULL)"),
    "earliest-v1-topic-unknown": ("TQ001", "SELECT txnq.earliest_offset_v1(999, 0)"),
    "backlog-topic-unknown": ("TQ001", "SELECT * FROM txnq.subscription_backlog_v2(999)"),
    "backlog-topic-null": ("TQ001", "SELECT * FROM txnq.subscription_backlog_v2(NULL)"),
    "backlog-v1-topic-unknown": ("TQ001", "SELECT * FROM txnq.subscription_backlog_v1(999)"),
}


@pytest.mark.parametrize(("sqlstate", "statement"), list(BAD_CALLS.values()), ids=list(BAD_CALLS))
def test_consume_functions_refuse_bad_arguments_with_a_tq_code_and_change_nothing(
    world_dsn: tuple[str, dict[str, Any]], sqlstate: str, statement: str
) -> None:
    dsn, world = world_dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        before = state(conn)
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(statement, world).fetchall()
        after = state(conn)

    assert raised.value.sqlstate == sqlstate, raised.value.diag.message_primary
    assert raised.value.diag.message_primary
    assert raised.value.diag.message_hint, "the error says what to do"
    assert isinstance(translate(raised.value), SQLSTATE_ERRORS[sqlstate])
    assert after == before


GOOD_CALLS: dict[str, str] = {
    "ack-whole-entry": ACK3 + "NULL, '{0}', '{-1}', '{3}')",
    "ack-message-of-a-batch": ACK3 + "NULL, '{0}', '{2}', '{3}')",
    "ack-size-looked-up": ACK3 + "NULL, '{0}', '{1}', '{NULL}')",
    "ack-message-0-of-a-one-message-entry": ACK3 + "NULL, '{1}', '{0}', '{NULL}')",
    "ack-one-message-entries": ACK3 + "NULL, '{2,1}', '{0,-1}', '{1,1}')",
    "ack-messages-of-one-entry": ACK3 + "NULL, '{0,0,0}', '{2,0,-1}', '{3,3,3}')",
    "ack-entries-of-different-sizes": ACK3 + "NULL, '{0,1}', '{1,-1}', '{3,1}')",
    "ack-cumulative-inside-a-batch": ACK3 + "0, '{}', '{}', '{}', 1, NULL)",
    "ack-cumulative-up-to-max-read-offset": ACK3 + "3)",
    "ack-read-uncommitted-past-max-read-offset": (
        "SELECT txnq.ack_v3(%(t1)s, 0, %(ru)s, NULL, '{4}', '{-1}', '{1}')"
    ),
    "ack-nothing": ACK3 + "NULL)",
    "ack-in-transaction": ACK3 + "NULL, '{0}', '{2}', '{3}'" + ACK_TXN,
    "stage-ack-whole-entries": STAGE + "'{0,1}')",
    "stage-ack-null-index-is-the-whole-entry": STAGE + "'{0}', '{NULL}', '{NULL}')",
    "fetch-from-the-cursor": FETCH + "-1, 1, 1)",
    "fetch-v2-from-below-the-cursor": "SELECT * FROM txnq.fetch_v2(%(t1)s, 0, %(ex)s, -1)",
    "fetch-v3-from-the-cursor": "SELECT * FROM txnq.fetch_v3(%(t1)s, 0, %(ex)s, -1)",
    "fetch-from-below-the-cursor": FETCH + "-1, 10, 8388608, false)",
    "shared-ack-claimed-message": SHARED + "'{0}', '{0}')",
    "shared-ack-whole-entry": SHARED + "'{0}', '{-1}')",
    "shared-ack-not-claimed-is-idempotent": SHARED + "'{1}', '{0}')",
    "claim": CLAIM + "10, 30, 3, %(t2)s)",
    "nack-claimed-message": NACK + "'{0}', '{0}', '{0.5}')",
    "release-gone-consumers": "SELECT txnq.release_claims_v2(%(sh)s, NULL)",
    "release-a-consumer-that-is-gone": "SELECT txnq.release_claims_v2(%(sh)s, 99999)",
    "seek-to-the-ends-as-python-does": SEEK
    + "-4611686018427387904), "
    + ("txnq.seek_v2(%(t1)s, 0, %(ex)s, 4611686018427387904)"),
    "seek-by-time": SEEK + "NULL, '2000-01-01 00:00:00+00')",
    "earliest": "SELECT txnq.earliest_offset_v2(%(t1)s, 1)",
    "backlog": "SELECT * FROM txnq.subscription_backlog_v2(%(t1)s)",
    "heartbeat": HEARTBEAT + "%(c_sh)s, 600)",
}


@pytest.mark.parametrize("statement", list(GOOD_CALLS.values()), ids=list(GOOD_CALLS))
def test_valid_consume_calls_still_work(
    world_dsn: tuple[str, dict[str, Any]], statement: str
) -> None:
    dsn, world = world_dsn
    with psycopg.connect(dsn) as conn:  # rolled back: the next case sees the same world
        conn.execute(statement, world).fetchall()
        conn.rollback()


# -- the data-loss bug, end to end ---------------------------------------------


def batch_topic(dsn: str, messages: int = 3) -> tuple[int, int]:
    """A topic whose offset 0 is one entry of ``messages`` messages, and an
    exclusive subscription from the earliest."""
    topic_id = int(sql_value(dsn, "SELECT txnq.create_topic_v1('orders', 1, -1, -1, NULL, 1024)"))
    subscription_id = int(
        sql_value(
            dsn,
            "SELECT txnq.subscribe_v1(%s, 'billing', 'exclusive', 'read_committed', 'earliest')",
            (topic_id,),
        )
    )
    sql(
        dsn,
        "SELECT * FROM txnq.append_v3(%s, 0, NULL, NULL, NULL, %s)",
        (topic_id, [f"m{i}".encode() for i in range(messages)]),
    )
    return topic_id, subscription_id


def delivered(dsn: str, topic_id: int, subscription_id: int) -> list[tuple[int, list[int]]]:
    """(entry offset, acknowledged batch indexes) of what fetch still delivers."""
    rows = sql(
        dsn,
        "SELECT f.entry_offset, coalesce(f.acked_batch_indexes, '{}') "
        "FROM txnq.cursors c, LATERAL txnq.fetch_v2(c.topic_id, c.partition, c.subscription_id, "
        "c.mark_delete_offset, 1000) f WHERE c.topic_id = %s AND c.subscription_id = %s",
        (topic_id, subscription_id),
    )
    return [(int(offset), list(acked)) for offset, acked in rows]


@pytest.mark.parametrize("version", ["ack_v1", "ack_v2", "ack_v3"])
def test_an_ack_past_the_batch_never_marks_the_undelivered_messages_consumed(
    dsn: str, version: str
) -> None:
    topic_id, subscription_id = batch_topic(dsn)
    ack = f"SELECT txnq.{version}(%s, 0, %s, NULL, %s::bigint[], %s::int[], %s::int[])"

    with pytest.raises(psycopg.Error) as raised:
        sql(dsn, ack, (topic_id, subscription_id, [0], [5], [3]))
    assert raised.value.sqlstate == "TQ005"
    # Messages 0 and 1 acknowledged: message 2 is still to be delivered (before
    # the fix, the index 5 counted as a third acknowledged message, and the
    # entry as a whole was consumed).
    sql(dsn, ack, (topic_id, subscription_id, [0, 0], [0, 1], [3, 3]))

    assert delivered(dsn, topic_id, subscription_id) == [(0, [0, 1])]


@pytest.mark.parametrize("size", [1, 2])
def test_a_batch_size_smaller_than_the_entry_never_acknowledges_the_whole_entry(
    dsn: str, size: int
) -> None:
    topic_id, subscription_id = batch_topic(dsn)

    with pytest.raises(psycopg.Error) as raised:
        sql(
            dsn,
            "SELECT txnq.ack_v2(%s, 0, %s, NULL, '{0,0}', '{0,1}', %s::int[])",
            (topic_id, subscription_id, [size, size]),
        )

    assert raised.value.sqlstate == "TQ005"
    assert delivered(dsn, topic_id, subscription_id) == [(0, [])]


def test_a_cumulative_ack_cannot_pass_a_transaction_still_open(dsn: str) -> None:
    topic_id, subscription_id = batch_topic(dsn, messages=1)
    tc_id, txn_seq = sql(dsn, "SELECT tc_id, txn_seq FROM txnq.open_txn_v1(0, 60)")[0]
    sql(
        dsn,
        "SELECT * FROM txnq.append_v3(%s, 0, NULL, NULL, NULL, ARRAY['in txn']::bytea[], "
        "NULL, NULL, NULL, %s, %s)",
        (topic_id, tc_id, txn_seq),
    )
    sql(
        dsn,
        "SELECT * FROM txnq.append_v3(%s, 0, NULL, NULL, NULL, ARRAY['after']::bytea[])",
        (topic_id,),
    )

    # Offset 2 is written but not readable (offset 1's transaction is open).
    with pytest.raises(psycopg.Error) as raised:
        sql(dsn, "SELECT txnq.ack_v2(%s, 0, %s, 2)", (topic_id, subscription_id))
    assert raised.value.sqlstate == "TQ005"

    sql(
        dsn,
        "SELECT txnq.complete_txn_v1(%s, %s) FROM txnq.end_txn_v1(%s, %s, true)",
        (tc_id, txn_seq, tc_id, txn_seq),
    )
    assert [offset for offset, _ in delivered(dsn, topic_id, subscription_id)] == [0, 1, 2]


def test_an_application_transaction_cannot_stage_an_ack_past_the_batch(dsn: str) -> None:
    topic_id, subscription_id = batch_topic(dsn)
    with psycopg.connect(dsn) as conn:
        with pytest.raises(psycopg.Error) as raised:
            conn.execute(
                "SELECT txnq.stage_ack_v1(%s, 0, %s, '{0}', '{5}', '{3}')",
                (topic_id, subscription_id),
            )
        assert raised.value.sqlstate == "TQ005"
        conn.rollback()
        conn.execute(
            "SELECT txnq.stage_ack_v1(%s, 0, %s, '{0,0}', '{0,1}', '{3,3}')",
            (topic_id, subscription_id),
        )
        conn.commit()

    assert delivered(dsn, topic_id, subscription_id) == [(0, [0, 1])]


def test_python_acknowledgement_of_a_message_id_past_the_batch_is_refused(dsn: str) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("orders", partitions=1)
        with client.producer("orders") as producer:
            for i in range(3):
                producer.send_async(f"m{i}")
            producer.flush()
        with client.subscribe(
            "orders", "billing", initial_position="earliest", poll_interval="200ms"
        ) as consumer:
            first = receive_messages(consumer, 3)
            assert {m.message_id.offset for m in first} == {0}, "one batch entry"
            with pytest.raises(errors.InvalidArgumentError):
                consumer.acknowledge(txnq.MessageId("orders", 0, 0, 5))
            with pytest.raises(errors.InvalidArgumentError):
                consumer.acknowledge(txnq.MessageId("orders", 0, 0, -2))
            consumer.acknowledge(first[:2])
        with client.subscribe(
            "orders", "billing", initial_position="earliest", poll_interval="200ms"
        ) as consumer:
            again = receive_messages(consumer, 1)
    assert again[0].value == b"m2"


def test_a_shared_ack_past_the_batch_is_refused_inside_and_outside_a_transaction(
    dsn: str,
) -> None:
    with txnq.Client(dsn) as client:
        client.admin.create_topic("jobs", partitions=1)
        with client.producer("jobs") as producer:
            for i in range(3):
                producer.send_async(f"j{i}")
            producer.flush()
        with client.subscribe(
            "jobs", "workers", subscription_type="shared", initial_position="earliest"
        ) as consumer:
            messages = receive_messages(consumer, 3)
            with pytest.raises(errors.InvalidArgumentError):
                consumer.acknowledge(txnq.MessageId("jobs", 0, 0, 9))
            txn = client.new_transaction()
            with pytest.raises(errors.InvalidArgumentError):
                consumer.acknowledge(txnq.MessageId("jobs", 0, 0, 9), txn=txn)
            txn.abort()
            consumer.acknowledge(messages)
    assert int(sql_value(dsn, "SELECT count(*) FROM txnq.claims")) == 0
    assert int(sql_value(dsn, "SELECT count(*) FROM txnq.claim_ranges")) == 0


def test_sparse_acknowledgements_are_checked_entry_by_entry(dsn: str) -> None:
    """Offsets far apart are looked up one by one (not by one range scan)."""
    topic_id, subscription_id = batch_topic(dsn, messages=1)
    sql(
        dsn,
        "SELECT txnq.append_v3(%s, 0, NULL, NULL, NULL, ARRAY['single']::bytea[]) "
        "FROM generate_series(1, 199)",
        (topic_id,),
    )
    sql(
        dsn,
        "SELECT * FROM txnq.append_v3(%s, 0, NULL, NULL, NULL, ARRAY['a', 'b']::bytea[])",
        (topic_id,),
    )
    ack = "SELECT txnq.ack_v3(%s, 0, %s, NULL, '{0,200}', %s::int[], '{NULL,NULL}')"

    with pytest.raises(psycopg.Error) as raised:
        sql(dsn, ack, (topic_id, subscription_id, [-1, 2]))
    assert raised.value.sqlstate == "TQ005"
    assert "holds 2" in raised.value.diag.message_primary

    sql(dsn, ack, (topic_id, subscription_id, [-1, 1]))
    assert delivered(dsn, topic_id, subscription_id)[-1] == (200, [1])
