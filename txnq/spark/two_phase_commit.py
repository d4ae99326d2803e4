"""A two-phase-commit sink for external engines: :class:`TwoPhaseCommitSink`.

It is Flink's ``TwoPhaseCommitSinkFunction`` pattern (as its Kafka producer
uses it) on txnq transactions:

- ``begin_transaction()`` opens a txnq transaction, bound to the sink's
  transactional id and session epoch, and records it (``OPEN``) in
  ``txnq.sink_transactions``;
- ``send(txn, ...)`` writes into it (invisible to read_committed readers);
- ``pre_commit(txn, checkpoint_id)`` flushes and records it ``PREPARED`` with
  the engine's checkpoint id — the engine's checkpoint then holds the
  transaction id;
- ``commit(txn)`` (when the engine's checkpoint completed) and ``abort(txn)``
  end it; the record goes in the same PostgreSQL transaction as the decision.

After an engine restart, ``recover(committed_checkpoint)`` — which must run
before the first ``begin_transaction()`` of a sink — commits every PREPARED
transaction whose checkpoint id is at or below the last checkpoint the engine
completed, aborts every other recorded one, and then starts a new session of
the transactional id: older sessions (zombies of the engine) are fenced, and
any transaction they still hold open is aborted.

Timeouts: a prepared transaction is still an open txnq transaction, so the
scheduler aborts it at its timeout (invariant 5). ``transaction_timeout``
(default: the server's ``TXN_MAX_TIMEOUT``, 900 s) must therefore cover the
checkpoint interval plus the longest restart of the engine — the rule Flink
documents for Kafka's ``transaction.timeout.ms``. A prepared transaction that
timed out before ``recover()`` could commit it is reported as lost
(:class:`PreparedTransactionLostError`), never silently dropped.
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row

from txnq import errors
from txnq.client import Client
from txnq.database.queries import QUERIES
from txnq.durations import Duration, parse_duration
from txnq.names import validate_name
from txnq.spark.appender import TxnAppender
from txnq.spark.shards import refuse_writes_through_proxy
from txnq.transaction import TxnId


@dataclass
class SinkTransaction:
    """A transaction of a sink: its id, and the checkpoint it was prepared for."""

    txn_id: TxnId
    timeout_at: datetime
    checkpoint_id: int | None = None
    state: str = "OPEN"
    _appender: TxnAppender | None = field(default=None, repr=False)
    _conn: Any = field(default=None, repr=False)

    @property
    def producer_name(self) -> str:
        return f"sink.{self.txn_id.tc_id}.{self.txn_id.seq}"


@dataclass(frozen=True)
class RecoveryReport:
    """What :meth:`TwoPhaseCommitSink.recover` did: transactions committed,
    aborted, and the epoch of the new session."""

    committed: list[tuple[TxnId, int]]
    aborted: list[TxnId]
    epoch: int


class TwoPhaseCommitSink:
    """See the module docstring. ``transactional_id``: stable across engine
    restarts (e.g. job name + sink operator + subtask index)."""

    def __init__(
        self,
        topic: str,
        transactional_id: str,
        *,
        dsn: str | None = None,
        client: Client | None = None,
        transaction_timeout: Duration | None = None,
    ) -> None:
        self.transactional_id = validate_name(transactional_id, "transactional id")
        self._own_client = client is None
        self._client = client if client is not None else Client(dsn)
        try:
            with self._client.connection() as conn:
                refuse_writes_through_proxy(conn)  # the sink protocol is not routed yet
            self._topic = self._client.admin.get_topic(topic)
            _, max_timeout = self._client._transaction_limits()
            self._timeout = (
                max_timeout
                if transaction_timeout is None
                else parse_duration(
                    transaction_timeout, what="transaction_timeout", allow_zero=False
                )
            )
            if self._timeout > max_timeout:
                raise errors.InvalidArgumentError(
                    f"transaction_timeout {self._timeout:g}s is above the server's "
                    f"TXN_MAX_TIMEOUT of {max_timeout:g}s: shorten it, or raise "
                    "TXNQ_TXN_MAX_TIMEOUT and run txnq migrate"
                )
        except BaseException:
            if self._own_client:
                self._client.close()
            raise
        self.topic = self._topic.name
        self.epoch: int | None = None

    @property
    def client(self) -> Client:
        return self._client

    @property
    def dsn(self) -> str:
        return self._client.dsn

    @property
    def topic_id(self) -> int:
        return self._topic.topic_id

    # -- recovery -------------------------------------------------------------

    def recover(self, committed_checkpoint: int | None) -> RecoveryReport:
        """Settle what an earlier run of the engine left, then start this
        session: commit PREPARED transactions with ``checkpoint_id <=
        committed_checkpoint``, abort the rest (``None``: no checkpoint
        completed, abort all), fence older sessions.

        All of it is one PostgreSQL transaction that holds the transactional
        id's row FOR UPDATE from the start: a zombie instance of the engine,
        whose commit() and begin_transaction() take that row FOR SHARE, waits
        and then finds itself fenced, so it can neither commit what recovery
        aborts nor begin anything meanwhile.

        Raises :class:`PreparedTransactionLostError` (after settling all the
        others) when a transaction to commit had been aborted meanwhile.
        """
        if committed_checkpoint is not None and (
            isinstance(committed_checkpoint, bool) or not isinstance(committed_checkpoint, int)
        ):
            raise errors.InvalidArgumentError(
                f"committed_checkpoint must be an int or None, not {committed_checkpoint!r}"
            )
        committed: list[tuple[TxnId, int]] = []
        aborted: list[TxnId] = []
        lost: list[str] = []
        ident = {"transactional_id": self.transactional_id}
        with self._client.connection() as conn, conn.transaction():
            conn.execute(QUERIES["sink_session_lock"], ident)
            with conn.cursor(row_factory=dict_row) as cursor:
                pending = cursor.execute(QUERIES["sink_pending"], ident).fetchall()
            for row in pending:
                txn_id = TxnId(int(row["tc_id"]), int(row["txn_seq"]))
                checkpoint = row["checkpoint_id"]
                commit = (
                    row["state"] == "PREPARED"
                    and committed_checkpoint is not None
                    and checkpoint <= committed_checkpoint
                )
                state, reason = self._end_in(conn, txn_id, commit=commit)
                if commit and state in ("COMMITTING", "COMMITTED"):
                    committed.append((txn_id, int(checkpoint)))
                elif commit:
                    lost.append(f"{txn_id} (checkpoint {checkpoint}, aborted: {reason})")
                else:
                    aborted.append(txn_id)
            session = conn.execute(QUERIES["init_transactional_id"], ident).fetchone()
            assert session is not None
            epoch, fenced_tc_ids, fenced_txn_seqs = session
            for tc_id, txn_seq in zip(fenced_tc_ids, fenced_txn_seqs, strict=True):
                # Open transactions of older sessions that no record names
                # (e.g. a zombie began one just before): aborted by the fencing.
                self._end_in(conn, TxnId(int(tc_id), int(txn_seq)), commit=False)
                aborted.append(TxnId(int(tc_id), int(txn_seq)))
        self.epoch = int(epoch)
        if lost:
            raise errors.PreparedTransactionLostError(
                f"sink {self.transactional_id!r}: prepared transactions of completed checkpoints "
                f"were aborted before recovery could commit them: {', '.join(lost)}. Their "
                "messages are lost; raise transaction_timeout above the checkpoint interval "
                "plus the engine's restart time"
            )
        return RecoveryReport(committed, aborted, self.epoch)

    # -- the two phases -------------------------------------------------------

    def begin_transaction(self) -> SinkTransaction:
        """Open and record a transaction of this sink's session."""
        if self.epoch is None:
            raise errors.TransactionError(
                f"sink {self.transactional_id!r} has no session yet: call "
                "recover(last_completed_checkpoint) first (None on a first start), so what an "
                "earlier run prepared is settled before anything new begins"
            )
        tc_count, _ = self._client._transaction_limits()
        tc_id = uuid.uuid4().int % tc_count
        with self._client.connection() as conn, conn.transaction():
            opened = conn.execute(
                QUERIES["open_txn"], {"tc_id": tc_id, "timeout_seconds": self._timeout}
            ).fetchone()
            assert opened is not None
            params = {"txn_tc": opened[0], "txn_seq": opened[1]}
            conn.execute(
                QUERIES["bind_txn"],
                {**params, "transactional_id": self.transactional_id, "epoch": self.epoch},
            )
            conn.execute(
                QUERIES["sink_begin"], {**params, "transactional_id": self.transactional_id}
            )
        return SinkTransaction(TxnId(int(opened[0]), int(opened[1])), opened[2])

    def send(
        self,
        txn: SinkTransaction,
        value: object,
        *,
        key: str | bytes | None = None,
        properties: dict[str, str] | None = None,
        event_time: datetime | float | None = None,
        partition: int | None = None,
    ) -> None:
        """Write one message into ``txn`` (buffered; ``pre_commit`` flushes)."""
        self._check(txn, "OPEN")
        if txn._appender is None:
            proxy = self._client.checkout()
            txn._conn = proxy
            txn._appender = TxnAppender(
                proxy.driver_connection,
                self.topic_id,
                self._topic_partitions(),
                f"{self.transactional_id}.{txn.producer_name}",
                (txn.txn_id.tc_id, txn.txn_id.seq),
            )
        txn._appender.add(value, key, properties, event_time, partition)

    def pre_commit(self, txn: SinkTransaction, checkpoint_id: int) -> None:
        """Flush ``txn`` and record it PREPARED for ``checkpoint_id``: from now
        on only the engine's checkpoint decides whether it commits."""
        if isinstance(checkpoint_id, bool) or not isinstance(checkpoint_id, int):
            raise errors.InvalidArgumentError(
                f"checkpoint_id must be an int, not {checkpoint_id!r}"
            )
        self._check(txn, "OPEN")
        try:
            if txn._appender is not None:
                txn._appender.flush()
        finally:
            self._release(txn)
        rows = self._client.query(
            "sink_prepare",
            {
                "transactional_id": self.transactional_id,
                "txn_tc": txn.txn_id.tc_id,
                "txn_seq": txn.txn_id.seq,
                "checkpoint_id": checkpoint_id,
            },
        )
        if not rows:
            raise errors.TransactionEndedError(
                f"transaction {txn.txn_id} of sink {self.transactional_id!r} is no longer open "
                "(timed out, fenced or aborted): it cannot be prepared; fail the checkpoint"
            )
        txn.state, txn.checkpoint_id = "PREPARED", checkpoint_id

    def commit(self, txn: SinkTransaction) -> None:
        """Commit a prepared transaction (its checkpoint completed). Repeating
        it is harmless."""
        if txn.state == "COMMITTED":
            return
        self._check(txn, "PREPARED")
        state, reason = self._end(txn.txn_id, commit=True, check_session=True)
        if state not in ("COMMITTING", "COMMITTED"):
            txn.state = "ABORTED"
            raise errors.TransactionAbortedError(
                f"transaction {txn.txn_id} of sink {self.transactional_id!r} was aborted "
                f"({reason}) before it could commit: its messages are lost; raise "
                "transaction_timeout above the checkpoint interval"
            )
        txn.state = "COMMITTED"

    def abort(self, txn: SinkTransaction) -> None:
        """Abort ``txn`` (open or prepared); aborting an aborted one is a no-op."""
        if txn.state == "ABORTED":
            return
        if txn.state == "COMMITTED":
            raise errors.TransactionEndedError(f"transaction {txn.txn_id} was committed")
        self._release(txn)
        self._end(txn.txn_id, commit=False, check_session=False)
        txn.state = "ABORTED"

    def close(self) -> None:
        if self._own_client:
            self._client.close()

    def __enter__(self) -> TwoPhaseCommitSink:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- internals ------------------------------------------------------------

    def _topic_partitions(self) -> int:
        rows = self._client.query("topic_partition_count", {"topic_id": self.topic_id})
        return int(rows[0]["partitions"])

    def _check(self, txn: object, expected: str) -> None:
        if not isinstance(txn, SinkTransaction):
            raise errors.InvalidArgumentError(
                f"txn must be a SinkTransaction from begin_transaction(), not {type(txn).__name__}"
            )
        if txn.state != expected:
            raise errors.TransactionEndedError(
                f"transaction {txn.txn_id} is {txn.state.lower()}, not {expected.lower()}"
            )

    def _release(self, txn: SinkTransaction) -> None:
        if txn._conn is not None:
            with contextlib.suppress(Exception):
                txn._conn.close()
            txn._conn = None
            txn._appender = None

    def _end(self, txn_id: TxnId, *, commit: bool, check_session: bool) -> tuple[str, str | None]:
        """Decide and complete ``txn_id`` and forget its record, in one
        PostgreSQL transaction; the state and reason that stand."""
        with self._client.connection() as conn, conn.transaction():
            if check_session:
                epoch = conn.execute(
                    QUERIES["sink_session_epoch"], {"transactional_id": self.transactional_id}
                ).fetchone()
                if epoch is None or int(epoch[0]) != self.epoch:
                    raise errors.ProducerFencedError(
                        f"sink session {self.epoch} of {self.transactional_id!r} is fenced: a "
                        f"newer one (epoch {None if epoch is None else epoch[0]}) recovered its "
                        "transactions; stop this instance"
                    )
            return self._end_in(conn, txn_id, commit=commit)

    def _end_in(
        self, conn: psycopg.Connection[Any], txn_id: TxnId, *, commit: bool
    ) -> tuple[str, str | None]:
        """Decide and complete ``txn_id`` and forget its record inside the
        caller's PostgreSQL transaction; the state and reason that stand."""
        params = {"txn_tc": txn_id.tc_id, "txn_seq": txn_id.seq}
        try:
            with conn.transaction():  # a savepoint: a failure keeps the outer transaction
                state, reason, _ = conn.execute(
                    QUERIES["end_and_complete_txn"],
                    {**params, "commit": commit, "reason": "client"},
                ).fetchone() or (None, None, None)
        except psycopg.Error as exc:
            if exc.sqlstate != "TQ014":  # a transaction that no longer exists: forget it
                raise
            state, reason = "ABORTED", "missing"
        conn.execute(QUERIES["sink_forget"], {**params, "transactional_id": self.transactional_id})
        return str(state), reason
