"""The code of docs/exactly-once.md runs as written: every ```python block, in
order, in one namespace, against a fresh database (TXNQ_DSN) — and leaves the
tables and topics the page says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import sql

DOC = Path(__file__).resolve().parents[2] / "docs" / "exactly-once.md"


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def test_the_three_patterns_of_the_exactly_once_page_run_as_written(
    dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TXNQ_DSN", dsn)
    monkeypatch.setenv("TXNQ_POLL_INTERVAL_SECONDS", "0.2")
    blocks = python_blocks(DOC)
    runnable = [b for b in blocks if "os.environ" in b or "client." in b]
    assert len(runnable) >= 6
    namespace: dict[str, Any] = {}
    for number, block in enumerate(blocks, 1):
        if block not in runnable:
            continue  # the illustrations at the top use names defined by the reader
        try:
            exec(compile(block, f"docs/exactly-once.md python block {number}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"docs/exactly-once.md, python block {number} failed") from exc

    # Outbox: orders 1..10 (not 99), five status events from the trigger.
    assert len(namespace["invoices"]) == 15
    assert namespace["statuses"] == [("invoiced", 10)]
    # Processor: each of the 15 order messages added its amount exactly once.
    assert sql(dsn, "SELECT order_id, amount FROM invoices ORDER BY order_id") == [
        (i, 10 * i * (2 if i <= 5 else 1)) for i in range(1, 11)
    ]
    assert sql(dsn, "SELECT count(*) FROM shipments WHERE order_id IN (99, 100)") == [(1,)]
    assert sql(dsn, "SELECT count(*) FROM txnq.messages WHERE topic = 'orders'") == [(16,)]
