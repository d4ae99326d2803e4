"""Transactions across a cluster's shards: the coordinator worker's recovery
through a proxy (docs/cluster.md, "Transactions across shards").

A client's ``commit()`` / ``abort()`` through a proxy runs the whole protocol
in the proxy's ``end_txn_v3`` and ``complete_txn_v2`` (sql/proxy/
transactions.sql). When the client dies after the decision, or a shard's
timeout job decided an abort, ``txnq worker coordinator`` with its DSN at the
proxy finishes the transaction here, one shard transaction per step: the home
shard's decision applied with its markers and pending acks on every other
shard (``cluster_txn_apply_v1``, idempotent), then the home shard's own marker
phase and finish (``complete_txn_v2``), last, so a transaction is finished
only when every shard has done its part.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg

from txnq.database.queries import QUERIES
from txnq.database.shards import is_proxy
from txnq.transaction.base import TxnId

__all__ = ["is_proxy", "run_cluster_marker_phase"]


def run_cluster_marker_phase(
    conn: psycopg.Connection[Any],
    txn_id: TxnId,
    on_step: Callable[[str], None] | None = None,
) -> str:
    """Finish a decided transaction on every shard through the proxy: each
    participant shard applies the home shard's decision ("partition" step
    after each), then the home shard completes and finishes ("markers" before,
    "finish" after). Returns the state on the home shard after the run (OPEN
    when the home shard has not decided: a participant's own timeout abort, or
    a prepared mirror, waits for the home shard's decision)."""
    params = {"txn_tc": txn_id.tc_id, "txn_seq": txn_id.seq}
    row = conn.execute(QUERIES["txn_state"], params).fetchone()
    if row is None or row[0] == "OPEN":
        return "UNKNOWN" if row is None else "OPEN"
    # A finished home shard (a worker run on it directly finished its part
    # alone) still has its decision applied on the other shards here.
    state, reason = str(row[0]), row[1] or "client"
    commit = state in ("COMMITTING", "COMMITTED")
    shards = conn.execute(QUERIES["cluster_txn_participants"], params).fetchone()
    assert shards is not None
    for shard in shards[1]:
        conn.execute(
            QUERIES["cluster_txn_apply"],
            {**params, "shard": shard, "commit": commit, "reason": reason},
        )
        if on_step is not None:
            on_step("partition")
    if on_step is not None:
        on_step("markers")
    if state in ("COMMITTED", "ABORTED"):
        return state
    final = conn.execute(QUERIES["cluster_txn_complete_home"], params).fetchone()
    assert final is not None
    if on_step is not None:
        on_step("finish")
    return str(final[0])
