"""Every table the command line prints, rendered at 80 columns from sample
objects (every field filled, prose fields with a long sentence): no word of a
header or a value broken across lines, nothing cut with '…', no line wider
than the terminal. The same table at 250 columns is the reference: a word it
shows whole must be whole at 80 too (tests/cli_support.py)."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, Union

import pytest
from rich.console import Console
from rich.table import Table

from tests.cli_support import assert_reads_well
from txnq import Message, MessageId
from txnq.admin import (
    BacklogQuotaInfo,
    ConsumerInfo,
    CursorInfo,
    HangingTransaction,
    PartitionInfo,
    SubscriptionInfo,
    TopicInfo,
    TopicPermission,
    TransactionDescription,
    TransactionInfo,
)
from txnq.cli import consume, gc, output, subscriptions, topics, txn
from txnq.lifecycle import DoctorReport, LifecycleReport
from txnq.lifecycle.backlog_quota import QuotaBreach
from txnq.lifecycle.entry_logs import EntryLogGc
from txnq.lifecycle.job_failures import JobFailure
from txnq.lifecycle.retention import DeletedLedger
from txnq.lifecycle.ttl import CursorExpiry

WHEN = datetime(2026, 1, 31, 12, 0, tzinfo=UTC)
# What a reason, an error or a detail can look like: long, with a long word.
PROSE = (
    "NumericValueOutOfRange: bigint out of range; the topic has retention_seconds = "
    "604800.0, retention_bytes = 0: fix it with txnq topics set-policy"
)
PROSE_FIELDS = {"error", "why", "detail", "reason", "exceeded_reason"}


def sample(kind: type[Any], index: int = 0) -> Any:
    """An instance of the dataclass ``kind`` with every field filled."""
    hints = typing.get_type_hints(kind)
    return kind(**{f.name: _value(f.name, hints[f.name], index) for f in dataclasses.fields(kind)})


def _value(name: str, hint: Any, index: int) -> Any:
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return _value(name, next(a for a in typing.get_args(hint) if a is not type(None)), index)
    if origin is list:
        return [_value(name, typing.get_args(hint)[0], i) for i in range(2)]
    if origin is Literal:
        return typing.get_args(hint)[0]
    if origin is not None:
        return origin()
    if dataclasses.is_dataclass(hint):
        return sample(hint, index)  # type: ignore[arg-type]
    if hint is bool:
        return index == 0
    if hint is int:
        return 1_234_567 + index
    if hint is float:
        return 3600.0
    if hint is datetime:
        return WHEN
    if hint is str:
        return PROSE if name in PROSE_FIELDS else f"{name.replace('_', '-')}-{index}"
    return None


def _report(job: str, item: type[Any]) -> LifecycleReport:
    return LifecycleReport(
        job=job,
        dry_run=False,
        started_at=WHEN,
        items=[sample(item, i) for i in range(2)],
        failures=[sample(JobFailure)],
    )


def _rows(names: list[str]) -> list[dict[str, Any]]:
    row: dict[str, Any] = {name: f"{name}-0" for name in names}
    row |= {"started_at": WHEN, "first_failed_at": WHEN, "dry_run": False, "error": PROSE}
    row |= {"run_id": 17, "items": 3, "bytes": 4096, "failures": 1, "partition": 2}
    row["details"] = {"failures": [{"topic": "orders", "error": PROSE}]}
    return [row, row]


def _messages() -> list[Table]:
    """Two batches of ``txnq consume``: the second's columns line up with the first's."""
    widths: list[int] = []

    def message(offset: int, value: bytes, key: str | None, **properties: str) -> Message:
        where = MessageId("orders", 3, offset, 0)
        return Message(value, key and key.encode(), properties, where, WHEN)

    first = [
        message(7, b"after-restart", None),
        message(8, b'{"id": 1, "note": "' + b"a long payload " * 8 + b'"}', "customer-7", a="1"),
    ]
    second = [message(1_234_567, bytes([0xFF, 0xFE]) * 30, "k", source="cli", region="eu")]
    return [
        consume._messages_table(first, header=True, widths=widths),
        consume._messages_table(second, header=False, widths=widths),
    ]


BUILDERS: dict[str, Callable[[], list[Table]]] = {
    "messages": _messages,
    "topic": lambda: [topics._topic_table(sample(TopicInfo))],
    "backlog quota": lambda: [topics._backlog_quota_table(sample(BacklogQuotaInfo))],
    "topics": lambda: [topics._topics_table([sample(TopicInfo, i) for i in range(2)])],
    "partitions": lambda: [topics._partitions_table([sample(PartitionInfo, i) for i in range(2)])],
    "grants": lambda: [topics._grants_table([sample(TopicPermission, i) for i in range(2)])],
    "subscriptions": lambda: [
        subscriptions.subscriptions_table([sample(SubscriptionInfo, i) for i in range(2)])
    ],
    "cursors": lambda: [subscriptions._cursors_table([sample(CursorInfo, i) for i in range(2)])],
    "consumers": lambda: [
        subscriptions._consumers_table([sample(ConsumerInfo, i) for i in range(2)])
    ],
    "transactions": lambda: [txn._txns_table([sample(TransactionInfo, i) for i in range(2)])],
    "transaction": lambda: [
        txn._txn_properties(sample(TransactionInfo)),
        *txn._txn_description_tables(sample(TransactionDescription)),
    ],
    "hanging": lambda: [txn._hanging_table([sample(HangingTransaction, i) for i in range(2)])],
    "gc run": lambda: gc._gc_tables(
        [
            _report("ttl", CursorExpiry),
            _report("retention", DeletedLedger),
            _report("backlog_quota", QuotaBreach),
            _report("gc", EntryLogGc),
        ]
    ),
    "gc doctor": lambda: gc._doctor_tables(sample(DoctorReport)),
    "gc history": lambda: [
        gc._history_table(_rows(["job", "details"]))  # details: JSON, the payload
    ],
    "gc failures": lambda: [gc._failing_table(_rows(["job", "topic", "subject"]))],
}


def _render(build: Callable[[], list[Table]], width: int, monkeypatch: pytest.MonkeyPatch) -> str:
    console = Console(width=width, color_system=None, force_terminal=False)
    monkeypatch.setattr(output, "console", console)  # the width table() fits
    with console.capture() as captured:
        for built in build():
            console.print(built)
    return captured.get()


@pytest.mark.parametrize("name", BUILDERS)
def test_every_table_reads_well_at_80_columns(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    narrow = _render(BUILDERS[name], 80, monkeypatch)
    wide = _render(BUILDERS[name], 250, monkeypatch)

    assert_reads_well(narrow, wide, f"the {name} table")
    assert all(len(line.rstrip()) <= 80 for line in narrow.splitlines()), narrow
    assert output.time_text(WHEN) in narrow or "2026" not in wide
