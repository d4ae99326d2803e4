"""The marker phase of a decided transaction, one step per PostgreSQL
transaction: what coordinator workers run (workers/coordinator.py) to finish
the transactions whose client died after the decision (DESIGN.md,
"Transaction protocol", step 6). A client runs it inline as one call
(``end_and_complete_txn``, ``complete_txn``; txnq.transaction.base)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import psycopg

from txnq import errors
from txnq.database.connections import is_outage
from txnq.database.queries import QUERIES
from txnq.transaction.base import TxnId


class StepFailure(NamedTuple):
    """A step of the marker phase that failed: on a partition (subscription_id
    None) or on a subscription's acks there."""

    topic_id: int
    partition: int
    subscription_id: int | None
    error: psycopg.Error


class MarkerPhaseError(errors.TransactionError):
    """The marker phase of a decided transaction failed on some of its
    partitions or subscriptions (``failures``); its other steps were done, it
    is not finished, and the next run tries the failed steps again."""

    def __init__(self, txn_id: TxnId, failures: list[StepFailure]) -> None:
        self.txn_id = txn_id
        self.failures = failures
        shown = "; ".join(
            f"topic id {f.topic_id} partition {f.partition}"
            + ("" if f.subscription_id is None else f" subscription id {f.subscription_id}")
            + f": {str(f.error).strip().splitlines()[0] if str(f.error).strip() else f.error!r}"
            for f in failures
        )
        super().__init__(
            f"the marker phase of transaction {txn_id} failed on {len(failures)} step(s), "
            f"its other steps are done: {shown}"
        )


def run_marker_phase(
    conn: psycopg.Connection[Any],
    txn_id: TxnId,
    on_step: Callable[[str], None] | None = None,
) -> str:
    """Run the marker phase of a decided transaction one step per PostgreSQL
    transaction (each idempotent), then finish it; returns the final state.

    This is the coordinator workers' way: a crash between steps keeps the
    steps done, and any worker picks up the rest. ``on_step(name)`` runs after
    each step ("partition", "subscription", "markers" when all are marked,
    "finish"): the crash-injection
    hook of the tests, and a place for metrics.

    A step that fails on what it finds (not a lost connection, which is
    raised at once) does not stop the others: one broken partition row
    leaves the transaction's other partitions and subscriptions done, and
    :class:`MarkerPhaseError` lists what failed; the transaction stays
    decided and unfinished until a run does every step.
    """
    params = {"txn_tc": txn_id.tc_id, "txn_seq": txn_id.seq}
    failures: list[StepFailure] = []
    for topic_id, partition in conn.execute(
        QUERIES["coordinator_unmarked_partitions"], params
    ).fetchall():
        try:
            conn.execute(
                QUERIES["complete_txn_partition"],
                {**params, "topic_id": topic_id, "partition": partition},
            )
        except psycopg.Error as exc:
            if is_outage(exc):
                raise
            failures.append(StepFailure(topic_id, partition, None, exc))
            continue
        if on_step is not None:
            on_step("partition")
    for topic_id, partition, subscription in conn.execute(
        QUERIES["coordinator_open_subscriptions"], params
    ).fetchall():
        step = {"topic_id": topic_id, "partition": partition, "subscription_id": subscription}
        try:
            conn.execute(QUERIES["complete_txn_subscription"], {**params, **step})
        except psycopg.Error as exc:
            if is_outage(exc):
                raise
            failures.append(StepFailure(topic_id, partition, subscription, exc))
            continue
        if on_step is not None:
            on_step("subscription")
    if failures:
        raise MarkerPhaseError(txn_id, failures)
    if on_step is not None:
        on_step("markers")
    row = conn.execute(QUERIES["finish_txn"], params).fetchone()
    assert row is not None
    if on_step is not None:
        on_step("finish")
    return str(row[0])
