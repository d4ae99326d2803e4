"""The SQL examples of docs/sql-api.md run as written: every ```sql block, in
order, on a fresh database — and the Python client sees what they wrote
(messages, acks, a transaction, application transactions)."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

import txnq
from tests.helpers import assert_nothing_more, receive_messages, sql, sql_value

DOC = Path(__file__).resolve().parents[2] / "docs" / "sql-api.md"
FAST = {"poll_interval": "200ms", "initial_position": "earliest"}


def sql_blocks(path: Path) -> list[str]:
    return re.findall(r"^```sql\n(.*?)^```", path.read_text(encoding="utf-8"), re.S | re.M)


def test_every_sql_example_of_the_sql_api_page_runs_and_python_sees_its_effects(dsn: str) -> None:
    blocks = sql_blocks(DOC)
    assert len(blocks) >= 8
    with psycopg.connect(dsn, autocommit=True) as conn:
        for number, block in enumerate(blocks, 1):
            try:
                conn.execute(block)
            except psycopg.Error as exc:
                raise AssertionError(f"docs/sql-api.md, sql block {number} failed: {exc}") from exc

    # The idempotent retry was recognised; the rolled-back outbox left nothing.
    assert sql(dsn, "SELECT count(*) FROM txnq.messages WHERE payload = 'order 3'") == [(1,)]
    assert sql(dsn, "SELECT order_id, status FROM sql_shipments") == [(1, "delivered")]
    assert sql_value(dsn, "SELECT count(*) FROM txnq.messages WHERE payload = 'never sent'") == 0
    assert sql_value(dsn, "SELECT count(*) FROM sql_invoice_log") == 3
    assert sql(dsn, "SELECT state FROM txnq.transactions") == [("COMMITTED",)]

    with txnq.Client(dsn) as client:
        with client.subscribe("sql-orders", "billing", **FAST) as billing:
            # Everything the SQL consumed is acknowledged; what it produced is there.
            (audited,) = receive_messages(billing, 1)
            assert (audited.value, audited.message_id.partition) == (b"audited", 1)
            assert_nothing_more(billing)
        with client.subscribe("sql-invoices", "audit", **FAST) as audit:
            assert_nothing_more(audit)
        with client.subscribe("sql-invoices", "python", **FAST) as python:
            received = receive_messages(python, 3)
            assert [(m.value, m.key, m.properties) for m in received] == [
                (b"invoice 1", None, {}),
                (b"shipment of order 1", "customer-7", {"order": "1"}),
                (b"delivered", "order-1", {}),
            ]
            assert_nothing_more(python)
