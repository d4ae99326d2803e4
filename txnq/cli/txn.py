"""``txnq txn``: list and describe transactions of the transaction log, abort
one as an operator, and find those that hang (hold read_committed consumers back)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from txnq.cli.help_format import Commands
from txnq.cli.options import DsnOption, JsonOption, LimitOption, open_client
from txnq.cli.output import (
    Column,
    console,
    duration_text,
    print_json,
    print_tables,
    properties_table,
    table,
    time_text,
)

if TYPE_CHECKING:
    from txnq.admin import HangingTransaction, TransactionDescription, TransactionInfo

transactions_app = Commands(
    help="Inspect transactions, abort one, and find those that hang (hold read_committed "
    "consumers back).",
    no_args_is_help=True,
)

TxnIdArgument = Annotated[
    str,
    typer.Argument(
        metavar="TXN_ID",
        help="Transaction id as printed by `txnq txn list`: tc:seq (e.g. 3:1042), or the "
        "128-bit integer.",
        show_default=False,
    ),
]


def _txns_table(transactions: list[TransactionInfo]) -> Table:
    return table(
        "Transactions",
        [
            "Id",
            "State",
            Column("Reason", "text"),
            "Opened",
            "Age",
            "Timeout",
            "Partitions",
            "Subscriptions",
            "Transactional id",
        ],
        (
            [
                t.id,
                t.state,
                t.reason,
                t.opened_at,
                f"{t.age_seconds:.1f}s",
                duration_text(t.timeout_seconds),
                t.partitions,
                t.subscriptions,
                t.transactional_id,
            ]
            for t in transactions
        ),
    )


def _txn_properties(t: TransactionInfo) -> Table:
    overdue = f"{t.overdue_seconds:.1f}s past its timeout" if t.overdue_seconds else None
    return properties_table(
        f"Transaction {t.id}",
        [
            ("state", t.state),
            ("reason", t.reason),
            ("coordinator", t.tc_id),
            ("opened", t.opened_at),
            ("timeout", f"{duration_text(t.timeout_seconds)} (at {time_text(t.timeout_at)})"),
            ("decided", t.decided_at),
            ("completed", t.completed_at),
            ("overdue", overdue),
            ("transactional id", t.transactional_id),
            ("producer epoch", t.producer_epoch),
            ("partitions (marked)", f"{t.partitions} ({t.partitions_marked})"),
            ("subscriptions (done)", f"{t.subscriptions} ({t.subscriptions_done})"),
        ],
    )


def _txn_description_tables(d: TransactionDescription) -> list[Table]:
    return [
        table(
            "Partitions written",
            ["Topic", "Partition", "First offset", "Marker offset"],
            ([p.topic, p.partition, p.first_offset, p.marker_offset] for p in d.partitions),
        ),
        table(
            "Subscriptions acknowledged on",
            ["Topic", "Partition", "Subscription", "Pending acks", "Done"],
            (
                [s.topic, s.partition, s.subscription, s.pending_acks, "yes" if s.done else "no"]
                for s in d.subscriptions
            ),
        ),
        table(
            "History",
            ["At", "State", "Reason", Column("Detail", "payload")],
            ([h.at, h.state, h.reason, h.detail] for h in d.history),
        ),
    ]


def _hanging_table(hanging: list[HangingTransaction]) -> Table:
    return table(
        "Hanging transactions",
        [
            "Id",
            "Topic",
            "Partition",
            "First offset",
            "Max read",
            "State",
            "Age",
            Column("Why", "text"),
        ],
        (
            [
                h.id,
                h.topic,
                h.partition,
                h.first_offset,
                h.max_read_offset,
                h.state,
                None if h.age_seconds is None else f"{h.age_seconds:.1f}s",
                h.why,
            ]
            for h in hanging
        ),
    )


@transactions_app.command("list")
def txn_list(
    state: Annotated[
        str | None,
        typer.Option(
            "--state",
            metavar="STATE",
            show_default=False,
            help="Only transactions in this state: OPEN, COMMITTING, COMMITTED, ABORTING "
            "or ABORTED.",
        ),
    ] = None,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="DURATION",
            show_default=False,
            help="Only transactions opened at least this long ago, e.g. 30s, 5m, 1h.",
        ),
    ] = None,
    limit: LimitOption = 100,
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """List transactions of the transaction log, newest first."""
    with open_client(dsn) as client:
        transactions = client.admin.list_transactions(
            state=state, older_than=older_than, limit=limit
        )
    if as_json:
        print_json([t.to_dict() for t in transactions])
        return
    print_tables(_txns_table(transactions))


@transactions_app.command("describe")
def txn_describe(txn_id: TxnIdArgument, dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Show a transaction: state, timeout, the partitions it wrote (and their
    markers), the subscriptions it acknowledged on, and its state history."""
    with open_client(dsn) as client:
        description = client.admin.describe_transaction(txn_id)
    if as_json:
        print_json(description.to_dict())
        return
    print_tables(_txn_properties(description.transaction), *_txn_description_tables(description))


@transactions_app.command("abort")
def txn_abort(txn_id: TxnIdArgument, dsn: DsnOption = None, as_json: JsonOption = False) -> None:
    """Abort a transaction as an operator (reason admin) and finish the abort: ABORT
    markers written, its messages never delivered, its pending acks released. Its
    client gets TransactionEndedError on its next call. A committed transaction
    cannot be aborted."""
    with open_client(dsn) as client:
        info = client.admin.abort_transaction(txn_id)
    if as_json:
        print_json(info.to_dict())
        return
    console.print(f"Transaction {info.id} is {info.state} ({info.reason})", highlight=False)


@transactions_app.command("find-hanging")
def txn_find_hanging(
    grace: Annotated[
        str,
        typer.Option(
            "--grace",
            metavar="DURATION",
            help="How far past its timeout (or its decision) a transaction must be to count.",
        ),
    ] = "10s",
    dsn: DsnOption = None,
    as_json: JsonOption = False,
) -> None:
    """Find transactions that hold a partition's max read offset back (so
    read_committed consumers wait): open past their timeout by more than --grace
    (no scheduler running?), decided but unfinished for longer than --grace (no
    coordinator worker running?), or open longer than the maximum transaction
    timeout. Abort one with `txnq txn abort ID`. Exits 1 when it finds any."""
    with open_client(dsn) as client:
        hanging = client.admin.find_hanging_transactions(grace=grace)
    if as_json:
        print_json([h.to_dict() for h in hanging])
    else:
        print_tables(_hanging_table(hanging))
    if hanging:
        raise typer.Exit(1)
