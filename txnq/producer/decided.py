"""A client transaction's commit that carries its producer's last batches.

``txn.commit()`` used to flush the transaction's queued batches first -- one
append transaction per partition, each registering the transaction on its
partition (``txn_partitions``, ``txn_buffer_ongoing``, ``ongoing_txns``) --
and then send the decision, whose marker phase undid that registration
partition by partition: a round trip and a PostgreSQL transaction per
partition, and one more for the decision.

When the last producer that joined the transaction still holds its
batches for it (at most one per partition, nothing else queued: what a
transaction producing less than a batch per partition leaves) and nothing
of the transaction is on the server yet but its open (no entry written, no
acknowledgement: TransactionBase._carries_batches says why), the commit
carries them instead: ``txnq.end_and_complete_txn_v1`` first, then each batch
with ``txnq.append_v6(..., decided => true)``, as one pipeline with one sync:
one round trip, and -- on the producer's autocommit connection -- one
PostgreSQL transaction, since the extended protocol runs everything up to a
sync in one implicit transaction, rolled back whole if a statement fails.
PostgreSQL makes the decision, the marker phase and those entries one
atomic commit with one WAL flush; each entry carries the transaction's id
and is followed by its COMMIT marker, as any committed transaction's
(docs/transactions.md, "A commit that carries its batches").

Only a commit goes through: a decided append refuses to write into anything
but a commit its own PostgreSQL transaction made, so a decision of abort
(timeout, fencing, a crash), like the backlog quota or any other error,
fails the pipeline and rolls all of it back, the decision included. Nothing
of it was written then, and the face writes the batches and commits the
usual way, which reports what happened exactly as before.

A lost connection leaves the outcome unknown: the same calls are sent again
until ``send_timeout``, which is safe (a decision taken is not taken again;
a batch written answers its original offset). Through a cluster's proxy the
decision and each shard's entries are transactions of their own, so there
the commit never carries batches.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, NamedTuple

import psycopg

from txnq import errors
from txnq.database.plans import Batch, Call, Plan, Reconnect, Sleep
from txnq.producer.append_call import append_arguments
from txnq.producer.batch import EntryBatch

if TYPE_CHECKING:
    from txnq.producer.base import ProducerBase
    from txnq.transaction.base import TransactionBase

Taken = list[tuple[int, EntryBatch]]


class Carried(NamedTuple):
    """What a commit that carried its batches answered: each batch's entry
    offset (in the order taken), and the decision as end_and_complete_txn_v1
    returned it (COMMITTING when this call decided, COMMITTED on a retry of
    a call that had)."""

    offsets: list[int]
    state: str
    reason: str | None


def take_for_commit(producer: ProducerBase, txn: TransactionBase) -> Taken | None:
    """The batches of ``txn`` that its commit can carry, taken from the queue
    in partition order (head rows are locked in the protocol's order); None,
    taking nothing, when the commit cannot carry what is queued: a batch of
    something else, a partition with several, nothing queued, a producer
    that failed, or a cluster's proxy (read once per client). The face
    holds its I/O lock and its lock."""
    if (
        producer._client._cluster_proxy is not False  # a proxy, or not known yet
        or txn._wrote  # this producer's thread may have written a batch of it
        or producer._failure is not None
        or producer._closed
    ):
        return None
    partitions = sorted({*producer._sealed, *producer._batches})
    for partition in partitions:
        queued = list(producer._sealed.get(partition, []))
        if partition in producer._batches:
            queued.append(producer._batches[partition])
        if len(queued) > 1 or any(batch.txn is not txn for batch in queued):
            return None
    taken = [(partition, batch) for partition in partitions for batch in producer._take(partition)]
    return taken or None


def carried_commit_plan(
    producer: ProducerBase, txn: TransactionBase, taken: Taken
) -> Plan[Carried | None]:
    """Commit ``txn`` with ``taken``; None when the commit did not go through
    (nothing was written by it: write the batches and commit the usual way).
    Raises ServerUnavailableError when PostgreSQL could not be reached for
    ``send_timeout`` (the outcome is unknown then, as for any commit)."""
    topic_id, (tc_id, seq) = producer._topic.topic_id, txn.txn_id
    firsts = [producer._next_sequence.get(partition, 0) for partition, _ in taken]
    calls = [Call("end_and_complete_txn", {**txn.params, "commit": True, "reason": "client"})]
    for (partition, batch), first in zip(taken, firsts, strict=True):
        identity = (producer._producer_id, producer._epoch, first)
        calls.append(
            Call(
                "append_decided",
                append_arguments(topic_id, partition, identity, batch.columns(), (tc_id, seq)),
            )
        )
    deadline = time.monotonic() + producer._send_timeout
    delay = 0.05
    while True:
        try:
            results = yield Batch(calls, pipeline=True)
            break
        except (psycopg.OperationalError, errors.ServerUnavailableError) as exc:
            if time.monotonic() + delay > deadline:
                raise errors.ServerUnavailableError(
                    f"could not reach PostgreSQL for {producer._send_timeout}s to commit "
                    f"transaction {txn.txn_id} ({exc}); it is aborted at its timeout unless "
                    f"the commit was written: check `txnq txn describe {txn.txn_id}`"
                ) from None
            yield Sleep(delay)
            delay = min(delay * 2, 1.0)
            yield Reconnect()
        except (errors.TxnqError, psycopg.Error):
            return None
    for (partition, batch), first in zip(taken, firsts, strict=True):
        producer._next_sequence[partition] = first + len(batch.payloads)
    producer._unflushed.clear()  # a durable commit flushed every earlier unflushed append
    if any(row[3] for row in results[1:]):
        try:
            yield Call("roll_entry_log", {"force": False}, "none")
        except (errors.TxnqError, psycopg.Error):
            pass  # a hint only: workers roll the entry log too
    state, reason, _final = results[0]
    # A retried batch older than the five remembered has no known offset (-1),
    # as in _append_plan; with one batch per partition it is always the last.
    offsets = [-1 if row[0] is None else int(row[0]) for row in results[1:]]
    return Carried(offsets, str(state), reason)


def settle_carried(producer: ProducerBase, taken: Taken, offsets: list[int]) -> None:
    """The carried batches are written: their futures settle with their
    offsets and they leave the pending count. The face holds its lock and
    runs their callbacks after releasing it."""
    for (_, batch), offset in zip(taken, offsets, strict=True):
        batch.future.set_result(offset)
        producer._pending -= len(batch.payloads)


def fail_carried(producer: ProducerBase, taken: Taken, exc: BaseException) -> None:
    """The commit that carried ``taken`` failed with ``exc`` (it could not
    reach PostgreSQL, or was interrupted): the batches settle with it, their
    transaction records it (its commit aborts) and they leave the pending
    count. The face holds its lock."""
    for _, batch in taken:
        if not batch.future.done():
            batch.future.set_exception(exc)
        if batch.txn is not None:
            batch.txn._record_failure(exc)
        producer._pending -= len(batch.payloads)
