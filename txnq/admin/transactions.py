"""Transaction inspection: list, describe and abort transactions of the
transaction log, and find the hanging ones (Kafka's KIP-664)."""

from __future__ import annotations

from txnq.admin.base import AdminBase
from txnq.admin.info import (
    HangingTransaction,
    TransactionDescription,
    TransactionInfo,
    TxnLogEntry,
    TxnPartitionInfo,
    TxnSubscriptionInfo,
)
from txnq.durations import Duration, parse_duration
from txnq.errors import InvalidArgumentError, TransactionError, TransactionNotFoundError
from txnq.transaction import TxnId

TXN_STATES = ("OPEN", "COMMITTING", "COMMITTED", "ABORTING", "ABORTED")


class TransactionAdmin(AdminBase):
    """The transaction log, as an operator sees it."""

    def list_transactions(
        self,
        *,
        state: str | None = None,
        older_than: Duration | None = None,
        limit: int = 100,
    ) -> list[TransactionInfo]:
        """Transactions of the transaction log, newest first: only those in
        ``state`` (OPEN, COMMITTING, COMMITTED, ABORTING, ABORTED) and opened at
        least ``older_than`` ago, when given; at most ``limit``."""
        wanted = None
        if state is not None:
            if not isinstance(state, str) or state.strip().upper() not in TXN_STATES:
                raise InvalidArgumentError(
                    f"state must be one of {', '.join(TXN_STATES)}, not {state!r}"
                )
            wanted = state.strip().upper()
        age = 0.0 if older_than is None else parse_duration(older_than, what="older_than")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 100_000:
            raise InvalidArgumentError(f"limit must be an int from 1 to 100000, not {limit!r}")
        rows = self._client.query("txn_list", {"state": wanted, "older_than": age, "limit": limit})
        return [TransactionInfo(**row) for row in rows]

    def get_transaction(self, txn_id: TxnId | str | int) -> TransactionInfo:
        key = _txn_key(txn_id)
        rows = self._client.query("txn_describe", key)
        if not rows:
            raise TransactionNotFoundError(
                f"transaction {TxnId(key['txn_tc'], key['txn_seq'])} does not exist: "
                "list them with `txnq txn list`"
            )
        return TransactionInfo(**rows[0])

    def describe_transaction(self, txn_id: TxnId | str | int) -> TransactionDescription:
        """A transaction with the partitions it produced to (and their markers),
        the subscriptions it acknowledged on, and its state history."""
        info = self.get_transaction(txn_id)
        key = {"txn_tc": info.tc_id, "txn_seq": info.txn_seq}
        return TransactionDescription(
            transaction=info,
            partitions=[
                TxnPartitionInfo(**r) for r in self._client.query("txn_describe_partitions", key)
            ],
            subscriptions=[
                TxnSubscriptionInfo(**r)
                for r in self._client.query("txn_describe_subscriptions", key)
            ],
            history=[TxnLogEntry(**r) for r in self._client.query("txn_history", key)],
        )

    def abort_transaction(self, txn_id: TxnId | str | int) -> TransactionInfo:
        """Abort a transaction as an operator (reason ``admin``) and finish the
        abort at once: ABORT markers written, pending acks released. The client
        that owns it gets TransactionEndedError on its next use. Aborting an
        aborted transaction finishes what is left of it; a committed (or
        committing) one cannot be aborted."""
        info = self.get_transaction(txn_id)
        key = {"txn_tc": info.tc_id, "txn_seq": info.txn_seq}
        decided = self._client.query("txn_admin_abort", key)[0]
        if decided["state"] in ("COMMITTING", "COMMITTED"):
            raise TransactionError(
                f"transaction {info.id} is {decided['state']}: a committed transaction "
                "cannot be aborted (its commit completes by itself)"
            )
        self._client.query("complete_txn", key)
        return self.get_transaction(info.txn_id)

    def find_hanging_transactions(self, *, grace: Duration = 10.0) -> list[HangingTransaction]:
        """Transactions that hold a partition's max read offset (and so every
        read_committed consumer) back: open more than ``grace`` past their
        timeout (no scheduler aborts them), decided more than ``grace`` ago
        without their marker (no coordinator worker finishes them), or open
        longer than the maximum transaction timeout. Also open transactions past
        their timeout that wrote nothing. The tool of Kafka's KIP-664."""
        seconds = parse_duration(grace, what="grace")
        rows = self._client.query("txn_find_hanging", {"grace_seconds": seconds})
        return [HangingTransaction(**row) for row in rows]


def _txn_key(txn_id: TxnId | str | int) -> dict[str, int]:
    parsed = TxnId.parse(txn_id) if not isinstance(txn_id, TxnId) else txn_id
    checked = TxnId._checked(parsed.tc_id, parsed.seq)  # a TxnId made by hand may hold anything
    return {"txn_tc": checked.tc_id, "txn_seq": checked.seq}
