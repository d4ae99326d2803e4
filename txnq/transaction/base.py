"""Transactions: produce to many partitions and acknowledge on many
subscriptions, atomically (DESIGN.md, "Transaction protocol").

``client.new_transaction(timeout="1m")`` opens one on a coordinator picked
round-robin. ``producer.send(..., txn=txn)`` and ``consumer.acknowledge(msg,
txn=txn)`` write into it: the messages are appended at once but stay invisible
to read_committed consumers, the acks are held as pending acks. ``commit()``
writes the decision (the point of no return) and then runs the marker phase
inline, so it returns when everything is visible; ``abort()`` does the same for
an abort. If this process dies after the decision, a coordinator worker
finishes the marker phase; if it dies before, the transaction times out and the
scheduler aborts it.
"""

from __future__ import annotations

import re
import time
from datetime import datetime
from typing import Any, NamedTuple, NoReturn, TypeVar

import psycopg

from txnq import errors
from txnq.database.plans import Call, Plan, Reconnect, Sleep
from txnq.failpoints import armed, failpoint
from txnq.transaction.attached_base import AttachedBase

T = TypeVar("T")
TC_BITS = 16
SEQ_BITS = 128 - TC_BITS
_TEXT_ID = re.compile(r"\(?\s*(\d+)\s*[:,]\s*(\d+)\s*\)?")

# How long commit()/abort() keep retrying the marker phase inline before they
# leave it to the coordinator workers (the decision is durable by then).
INLINE_COMPLETION_SECONDS = 10.0


class TxnId(NamedTuple):
    """A transaction id: 128 bits, the high 16 the coordinator (``tc_id``), the
    rest a per-coordinator increasing number (``seq``). ``str()`` gives
    ``"tc:seq"``; :meth:`parse` reads that, or the 128-bit integer."""

    tc_id: int
    seq: int

    def __str__(self) -> str:
        return f"{self.tc_id}:{self.seq}"

    def __int__(self) -> int:
        return (self.tc_id << SEQ_BITS) | self.seq

    @classmethod
    def parse(cls, text: str | int) -> TxnId:
        """A TxnId from ``"tc:seq"``, ``"(tc,seq)"``, or the 128-bit integer (int or text)."""
        if isinstance(text, bool) or not isinstance(text, str | int):
            raise errors.InvalidArgumentError(
                f"a transaction id is text like '3:42' or an int, not {type(text).__name__}"
            )
        if isinstance(text, str):
            match = _TEXT_ID.fullmatch(text.strip())
            if match:
                return cls._checked(int(match.group(1)), int(match.group(2)))
            try:
                text = int(text.strip(), 0)
            except ValueError:
                raise errors.InvalidArgumentError(
                    f"{text!r} is not a transaction id: use 'tc:seq' such as '3:42'"
                ) from None
        if not 0 <= text < 1 << 128:
            raise errors.InvalidArgumentError(f"transaction id {text} is not a 128-bit number")
        return cls._checked(text >> SEQ_BITS, text & ((1 << SEQ_BITS) - 1))

    @classmethod
    def _checked(cls, tc_id: int, seq: int) -> TxnId:
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (tc_id, seq)):
            raise errors.InvalidArgumentError(
                f"a transaction id is two ints (tc_id, seq), not ({tc_id!r}, {seq!r})"
            )
        if not 0 <= tc_id < 1 << TC_BITS or not 0 <= seq < 1 << 63:
            raise errors.InvalidArgumentError(
                f"transaction id {tc_id}:{seq} is out of range: the coordinator is 0..65535"
            )
        return cls(tc_id, seq)


#: What a producer or consumer of each face takes as ``txn=``.
FACE_HINTS = {
    "sync": "a sync txnq.Transaction from client.new_transaction()",
    "asyncio": "an asyncio transaction from `await client.new_transaction()` of txnq.aio",
}


def refuse_transaction(txn: object, hint: str) -> NoReturn:
    """``txn`` is no transaction of the face that was given it."""
    other = (
        " (sync and asyncio transactions do not mix: use the transaction of the "
        "client this producer/consumer came from)"
        if isinstance(txn, TransactionBase | AttachedBase)
        else ""
    )
    raise errors.InvalidArgumentError(f"txn must be {hint}, not {type(txn).__name__}{other}")


class TransactionBase:
    """What the sync and asyncio transactions share: state, checks, and the
    plans (txnq.database.plans) that bind, end and complete a transaction. A face adds
    the lock, the connection and the flushing of its producers."""

    def __init__(self, client: Any, txn_id: TxnId, timeout: float, timeout_at: datetime) -> None:
        self._client = client
        self.txn_id = txn_id
        self.timeout = timeout
        self.timeout_at = timeout_at
        self._state = "OPEN"
        self._reason: str | None = None
        self._producers: list[Any] = []
        self._consumers: list[Any] = []
        self._bound: tuple[str, int] | None = None
        self._failure: BaseException | None = None
        # An append of it was written (txnq.producer.decided: no batch rides
        # the commit then).
        self._wrote = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.txn_id}, {self._state.lower()})"

    @property
    def state(self) -> str:
        """OPEN, COMMITTED or ABORTED as this client knows it (COMMITTING/ABORTING
        when ``commit(wait=False)`` left the marker phase to the workers;
        COMMITTING while a ``commit_async()`` is in flight)."""
        return self._state

    @property
    def params(self) -> dict[str, int]:
        return {"txn_tc": self.txn_id.tc_id, "txn_seq": self.txn_id.seq}

    # -- checks -------------------------------------------------------------

    def _check_open(self) -> None:
        if self._state == "OPEN":
            return
        if self._reason == "fenced":
            raise self._fenced_error()
        if self._reason == "timeout":
            raise errors.TransactionTimedOutError(
                f"transaction {self.txn_id} passed its timeout of {self.timeout}s and was "
                "aborted: open a new transaction"
            )
        if self._reason == "crash":
            raise errors.TransactionAbortedError(
                f"transaction {self.txn_id} was aborted, not committed: PostgreSQL restarted "
                "after a crash (or failed over) while it was open, and writes of it may have "
                "been lost; run the work again in a new transaction"
            )
        raise errors.TransactionEndedError(
            f"transaction {self.txn_id} has ended ({self._state.lower()}): open a new transaction"
        )

    def _fenced_error(self) -> errors.ProducerFencedError:
        return errors.ProducerFencedError(
            f"transaction {self.txn_id} was aborted because a newer producer with the same "
            "transactional id took over: close this producer"
        )

    def _check_client(self, client: Any) -> None:
        if client is not self._client and client.dsn != self._client.dsn:
            raise errors.InvalidArgumentError(
                f"transaction {self.txn_id} belongs to another database than this producer/consumer"
            )

    @classmethod
    def checked(cls, txn: object, client: Any) -> Any:
        """``txn`` as given to a send or an ack: a client transaction of this
        face (sync or asyncio) on ``client``'s database."""
        if not isinstance(txn, cls):
            refuse_transaction(txn, FACE_HINTS[cls._face])
        txn._check_client(client)
        return txn

    _face = "sync"

    def _record_failure(self, exc: BaseException) -> None:
        """A queued send of this transaction failed (the face's override may
        also read the state from the server)."""
        self._note_failure(exc)

    def _note_failure(self, exc: BaseException) -> bool:
        """A queued send of this transaction failed: commit() will abort.
        True when the face should refresh the state from the server."""
        if self._failure is None:
            self._failure = exc
        return isinstance(exc, errors.TransactionEndedError | errors.ProducerFencedError)

    def _aborted_failure(self, cause: BaseException) -> errors.TransactionAbortedError:
        return errors.TransactionAbortedError(
            f"transaction {self.txn_id} was aborted, not committed: a message sent in it "
            f"could not be written ({cause}); fix the cause and run the work again in "
            "a new transaction"
        )

    # -- plans ----------------------------------------------------------------

    def _joined_already(self, producer: Any) -> bool:
        """Whether ``producer`` needs nothing more to write in this open
        transaction: it joined before and its session is bound. Checked for
        every send, so that the common case (the thousandth message of a
        transaction) costs no plan and no trip through the client's pool
        (a fifth of a transactional send_async's client time before)."""
        return (
            self._state == "OPEN"
            and producer in self._producers
            and (producer.transactional is None or self._bound == producer.transactional)
        )

    def _join_producer_plan(self, producer: Any) -> Plan[None]:
        """Before a producer's first write in this transaction: bind a
        transactional producer's session (fencing is checked by the server)."""
        self._check_open()
        if producer not in self._producers:
            self._producers.append(producer)
        transactional = producer.transactional
        if transactional is None or self._bound == transactional:
            return
        transactional_id, epoch = transactional
        yield from self._call_plan(
            "bind_txn_unflushed", {"transactional_id": transactional_id, "epoch": epoch}
        )
        self._bound = transactional

    def _join_consumer(self, consumer: Any) -> None:
        self._check_open()
        if consumer not in self._consumers:
            self._consumers.append(consumer)

    def _check_commit(self, wait: object) -> None:
        """Before commit() flushes: a transaction the system aborted (timeout,
        fencing) rewinds its consumers, then raises why it cannot commit."""
        self._check_wait(wait)
        if self._state in ("ABORTED", "ABORTING"):
            self._rewind_consumers()
        self._check_open()

    def _aborted_already(self) -> bool:
        """abort() of a transaction the system aborted already is a no-op
        (its consumers rewind); of a committed one it raises."""
        if self._state in ("ABORTED", "ABORTING"):
            self._rewind_consumers()
            return True
        self._check_open()
        return False

    @staticmethod
    def _check_wait(wait: object) -> None:
        if not isinstance(wait, bool):
            raise errors.InvalidArgumentError(f"wait must be True or False, not {wait!r}")

    def _commit_plan(self, *, wait: bool) -> Plan[None]:
        """Commit after the face flushed its producers: abort instead if a send
        failed. A send that failed because a newer session of the transactional
        id aborted the transaction raises ProducerFencedError, as a commit of it
        would: the work cannot go on with this producer."""
        if self._failure is not None:
            cause = self._failure
            yield from self._end_plan(commit=False, wait=True)
            if self._reason == "fenced":
                raise self._fenced_error() from cause
            raise self._aborted_failure(cause) from cause
        yield from self._end_plan(commit=True, wait=wait)

    def _end_plan(self, *, commit: bool, wait: bool) -> Plan[None]:
        if wait and not armed("client_after_decision"):
            # The fast path: decision and marker phase in one PostgreSQL
            # transaction (one round trip, one WAL flush).
            state, reason, final = yield from self._retrying_plan(
                "end_and_complete_txn", {"commit": commit, "reason": "client"}, row=True
            )
            self._state, self._reason = str(final), reason
        else:
            state, reason = yield from self._retrying_plan(
                "end_txn", {"commit": commit, "reason": "client", "notify": not wait}, row=True
            )
            self._state, self._reason = state, reason
            failpoint("client_after_decision")
            if wait:
                yield from self._complete_plan()
        self._ended(commit, state)

    def _carries_batches(self, wait: bool) -> bool:
        """Whether commit() may carry its producer's last batches
        (txnq.producer.decided): the fast path of :meth:`_end_plan`, no
        send failed, and nothing of it on the server yet but its open -- no
        entry written, no acknowledgement -- so that the commit takes its
        locks in the protocol's order (the transaction row, then head rows
        in partition order): a marker phase or acks applied before the
        carried appends would lock head rows or cursors first, which two
        such commits could take in opposite orders."""
        return (
            wait
            and self._failure is None
            and not self._wrote
            and not self._consumers
            and not armed("client_after_decision")
        )

    def _committed_with_batches(self, state: str, reason: str | None) -> None:
        """A producer's commit that carried its batches went through
        (txnq.producer.decided): the transaction is COMMITTED."""
        self._state, self._reason = "COMMITTED", reason
        self._ended(True, state)

    def _ended(self, commit: bool, state: str) -> None:
        """After the decision (``state``, as the server answered it): the
        consumers rewind or forget the transaction, and a commit that was
        aborted, or an abort of a committed transaction, raises why."""
        if state in ("ABORTING", "ABORTED"):
            self._rewind_consumers()
        else:
            for consumer in self._consumers:
                consumer._txn_ended(self.txn_id, rewind=False)
        if commit and state in ("ABORTING", "ABORTED"):
            self._check_open()  # raises what it was aborted for
        if not commit and state in ("COMMITTING", "COMMITTED"):
            raise errors.TransactionEndedError(
                f"transaction {self.txn_id} was committed already; it cannot be aborted"
            )

    def _rewind_consumers(self) -> None:
        """The transaction aborted: every consumer that acknowledged in it (or
        tried to: an ack refused for a conflict counts) delivers those partitions
        again from the cursor, so no message handed to the aborted work is lost."""
        for consumer in self._consumers:
            consumer._txn_ended(self.txn_id, rewind=True)

    def _complete_plan(self) -> Plan[None]:
        """The marker phase inline; the workers finish it if this keeps failing."""
        deadline = time.monotonic() + INLINE_COMPLETION_SECONDS
        delay = 0.02
        while True:
            try:
                self._state = str((yield from self._call_plan("complete_txn", {})))
                return
            except (psycopg.OperationalError, errors.ServerUnavailableError):
                if time.monotonic() + delay > deadline:
                    return  # decided and durable: a coordinator worker completes it
                yield Sleep(delay)
                yield Reconnect()
                delay = min(delay * 2, 1.0)

    def _refresh_state_plan(self) -> Plan[None]:
        try:
            row = yield Call("txn_state", self.params)
        except (errors.TxnqError, psycopg.Error):
            return
        if row is not None:
            self._state, self._reason = row[0], row[1]

    def _retrying_plan(self, name: str, extra: dict[str, Any], *, row: bool = False) -> Plan[Any]:
        """A call that is idempotent on the server: retried across a broken connection."""
        deadline = time.monotonic() + INLINE_COMPLETION_SECONDS
        delay = 0.05
        while True:
            try:
                return (yield from self._call_plan(name, extra, row=row))
            except (psycopg.OperationalError, errors.ServerUnavailableError):
                if time.monotonic() + delay > deadline:
                    raise errors.ServerUnavailableError(
                        f"could not reach PostgreSQL to end transaction {self.txn_id}; it is "
                        "aborted at its timeout unless the decision was written: check "
                        f"`txnq txn describe {self.txn_id}`"
                    ) from None
                yield Sleep(delay)
                yield Reconnect()
                delay = min(delay * 2, 1.0)

    def _call_plan(self, name: str, extra: dict[str, Any], *, row: bool = False) -> Plan[Any]:
        try:
            found = yield Call(name, {**self.params, **extra})
        except (errors.TransactionEndedError, errors.ProducerFencedError):
            yield from self._refresh_state_plan()
            raise
        if found is None:
            return None
        return found if row else found[0]
