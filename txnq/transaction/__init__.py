"""Transactions (DESIGN.md, "Transaction protocol"): client transactions
(``client.new_transaction()``), application transactions that live in the
caller's own PostgreSQL transaction (``txnq.attach(conn)``), the one protocol
both implement for producers and consumers, and the marker phase the
coordinator workers run.

    protocol        the transaction protocol producers and consumers call
    pending         PendingSend: what a send returns before it is written
    base            TxnId; client transactions' state, checks and plans
    sync, aio       the two faces of client transactions
    attached_base   application transactions' state, checks and plans
    attached_sync, attached_aio   their two faces; attach() and process()
    staging         what an application transaction stages (pure)
    markers         the marker phase, one step per PostgreSQL transaction
"""

from txnq.transaction.attached_base import AttachedBase
from txnq.transaction.attached_sync import AttachedTransaction, attach, process
from txnq.transaction.base import (
    INLINE_COMPLETION_SECONDS,
    SEQ_BITS,
    TC_BITS,
    TransactionBase,
    TxnId,
)
from txnq.transaction.markers import MarkerPhaseError, StepFailure, run_marker_phase
from txnq.transaction.pending import PendingSend, SendCallback
from txnq.transaction.protocol import (
    AsyncTransaction,
    OutgoingMessage,
    SyncTransaction,
    TransactionProtocol,
)
from txnq.transaction.sync import Transaction

__all__ = [
    "INLINE_COMPLETION_SECONDS",
    "SEQ_BITS",
    "TC_BITS",
    "AsyncTransaction",
    "AttachedBase",
    "AttachedTransaction",
    "MarkerPhaseError",
    "OutgoingMessage",
    "PendingSend",
    "SendCallback",
    "StepFailure",
    "SyncTransaction",
    "Transaction",
    "TransactionBase",
    "TransactionProtocol",
    "TxnId",
    "attach",
    "process",
    "run_marker_phase",
]
